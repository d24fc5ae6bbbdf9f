//! What the host tests share: a deterministic PRNG and test data, the float64 references of the
//! forward and backward, safe wrappers over the kernels (the portable 4-lane vector: the same
//! rounding order as SIMD128) and the comparisons. Tolerances as in the TypeScript suites
//! (test/numerics.test.ts).

// Index loops mirror the kernels' and the formulas' indexing; iterator chains would obscure them.
#![allow(clippy::needless_range_loop)]
// Each test file uses a part of this module.
#![allow(dead_code)]

#[allow(unused_imports)]
pub use rmsnorm_wasm::kernel::{self, Backward, DG_BLOCK_ROWS};
pub use rmsnorm_wasm::simd::portable::Portable;
pub use std::ptr;

pub type V = Portable;

pub const LENGTHS: [usize; 11] = [1, 3, 4, 5, 15, 16, 17, 33, 4096, 4097, 65536];
pub const EPS: [f32; 4] = [1e-6, 1e-5, 0.1, 0.0];
/// PyTorch's float32 tolerances (torch.testing.assert_close).
pub const ATOL: f64 = 1e-5;
pub const RTOL: f64 = 1.3e-6;
/// 2^-24, float32's unit roundoff.
pub const U: f64 = 1.0 / 16_777_216.0;

/// A small deterministic PRNG (splitmix64): failures reproduce exactly, no crates needed.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1].
    pub fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    pub fn normals(&mut self, n: usize, scale: f64) -> Vec<f32> {
        (0..n).map(|_| (self.normal() * scale) as f32).collect()
    }
}

/// Rows of differing scale (10^-3 .. 10^3), some with a nonzero mean.
pub fn test_rows(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut x = Vec::with_capacity(rows * dim);
    for r in 0..rows {
        let scale = 10f64.powi(r as i32 % 7 - 3);
        let mean = if r % 3 == 2 { 2.0 * scale } else { 0.0 };
        for _ in 0..dim {
            x.push((mean + rng.normal() * scale) as f32);
        }
    }
    x
}

/// A gain in ±[0.5, 1.5].
pub fn test_weight(dim: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    (0..dim)
        .map(|i| (if i % 11 == 5 { -1.0 } else { 1.0 }) * (0.5 + rng.uniform()) as f32)
        .collect()
}

pub fn rows_for(dim: usize) -> usize {
    if dim >= 65536 {
        2
    } else {
        (65536 / dim).clamp(3, 64)
    }
}

// ---------- float64 reference ----------

pub struct RefFwd {
    pub y: Vec<f64>,
    pub rstd: Vec<f64>,
}

pub fn ref_forward(x: &[f32], g: Option<&[f32]>, dim: usize, eps: f32) -> RefFwd {
    let rows = x.len() / dim;
    let mut y = vec![0.0; x.len()];
    let mut rstd = vec![0.0; rows];
    for r in 0..rows {
        let row = &x[r * dim..(r + 1) * dim];
        let ss: f64 = row.iter().map(|&v| v as f64 * v as f64).sum();
        let rs = 1.0 / (ss / dim as f64 + eps as f64).sqrt();
        rstd[r] = rs;
        for i in 0..dim {
            y[r * dim + i] = row[i] as f64 * rs * g.map_or(1.0, |g| g[i] as f64);
        }
    }
    RefFwd { y, rstd }
}

pub struct RefBwd {
    pub dx: Vec<f64>,
    pub dg: Vec<f64>,
    /// Σ_rows |dy·x·rstd| per column: the scale of dg's rounding error.
    pub dg_abs: Vec<f64>,
    /// rstd·rms(gy) per row: the natural magnitude of the row's dx.
    pub dx_scale: Vec<f64>,
}

pub fn ref_backward(
    dy: &[f32],
    x: &[f32],
    g: Option<&[f32]>,
    dim: usize,
    eps: f32,
    rstd: Option<&[f32]>,
) -> RefBwd {
    let rows = x.len() / dim;
    let rs: Vec<f64> = match rstd {
        Some(r) => r.iter().map(|&v| v as f64).collect(),
        None => ref_forward(x, None, dim, eps).rstd,
    };
    let gw = |i: usize| g.map_or(1.0, |g| g[i] as f64);
    let mut out = RefBwd {
        dx: vec![0.0; x.len()],
        dg: vec![0.0; dim],
        dg_abs: vec![0.0; dim],
        dx_scale: vec![0.0; rows],
    };
    for r in 0..rows {
        let o = r * dim;
        let a = rs[r];
        let (mut c, mut gg) = (0.0, 0.0);
        for i in 0..dim {
            let gy = dy[o + i] as f64 * gw(i);
            c += gy * x[o + i] as f64;
            gg += gy * gy;
        }
        let b = a * a * a * (c / dim as f64);
        out.dx_scale[r] = a * (gg / dim as f64).sqrt();
        for i in 0..dim {
            let gy = dy[o + i] as f64 * gw(i);
            out.dx[o + i] = a * gy - b * x[o + i] as f64;
            let t = dy[o + i] as f64 * x[o + i] as f64 * a;
            out.dg[i] += t;
            out.dg_abs[i] += t.abs();
        }
    }
    out
}

// ---------- safe wrappers over the kernels ----------

pub fn forward(x: &[f32], g: Option<&[f32]>, dim: usize, eps: f32) -> (Vec<f32>, Vec<f32>) {
    let rows = x.len() / dim;
    let mut y = vec![f32::from_bits(0x7fc0_dead); x.len()];
    let mut rstd = vec![f32::from_bits(0x7fc0_dead); rows];
    // SAFETY: every slice has the shape the kernel expects.
    unsafe {
        kernel::forward::<V>(
            x.as_ptr(),
            g.map_or(ptr::null(), |g| g.as_ptr()),
            y.as_mut_ptr(),
            rstd.as_mut_ptr(),
            rows,
            dim,
            eps,
        )
        .expect("the scratch of a row")
    };
    (y, rstd)
}

pub fn backward_args(
    dy: &[f32],
    x: &[f32],
    g: Option<&[f32]>,
    rstd: Option<&[f32]>,
    dx: &mut [f32],
    dim: usize,
    eps: f32,
) -> Backward {
    Backward::plain(
        dy.as_ptr(),
        x.as_ptr(),
        g.map_or(ptr::null(), |g| g.as_ptr()),
        rstd.map_or(ptr::null(), |r| r.as_ptr()),
        dx.as_mut_ptr(),
        dim,
        eps,
    )
}

/// Single-threaded backward: (dx, dg if g).
pub fn backward(
    dy: &[f32],
    x: &[f32],
    g: Option<&[f32]>,
    rstd: Option<&[f32]>,
    dim: usize,
    eps: f32,
) -> (Vec<f32>, Option<Vec<f32>>) {
    let rows = x.len() / dim;
    let mut dx = vec![f32::from_bits(0x7fc0_dead); x.len()];
    let mut dg = vec![f32::from_bits(0x7fc0_dead); dim];
    let mut work = work_buf(kernel::span_work_floats(dim));
    let k = backward_args(dy, x, g, rstd, &mut dx, dim, eps);
    // SAFETY: every slice has the shape the kernel expects.
    unsafe {
        kernel::backward::<V, _>(&k, rows, dg.as_mut_ptr(), work.as_mut_ptr() as *mut f32)
            .expect("the scratch of a row")
    };
    (dx, g.map(|_| dg))
}

// ---------- comparisons ----------

/// Panics with the worst offender unless |a − r| ≤ tol(i, r) everywhere (NaN must match NaN,
/// infinities must match exactly).
pub fn assert_close(
    what: &str,
    actual: &[f32],
    reference: &[f64],
    tol: impl Fn(usize, f64) -> f64,
) {
    assert_eq!(actual.len(), reference.len(), "{what}: length");
    let mut bad = 0;
    let mut worst: Option<(usize, f64)> = None;
    for (i, (&a, &r)) in actual.iter().zip(reference).enumerate() {
        let a = a as f64;
        let ok = if r.is_nan() {
            a.is_nan()
        } else if r.is_infinite() {
            a == r
        } else {
            a.is_finite() && ((a - r).abs() <= tol(i, r) || a == r)
        };
        if !ok {
            bad += 1;
            let ratio = if a.is_finite() {
                (a - r).abs() / tol(i, r)
            } else {
                f64::INFINITY
            };
            if worst.is_none_or(|(_, w)| ratio > w) {
                worst = Some((i, ratio));
            }
        }
    }
    if let Some((i, _)) = worst {
        panic!(
            "{what}: {bad}/{} out of tolerance; worst [{i}] = {}, reference {}, allowed {}",
            reference.len(),
            actual[i],
            reference[i],
            tol(i, reference[i])
        );
    }
}

pub fn y_tol(_i: usize, r: f64) -> f64 {
    ATOL + RTOL * r.abs()
}

pub fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

pub fn scale_rows(x: &mut [f32], dim: usize, scales: &[f64]) {
    for (r, row) in x.chunks_mut(dim).enumerate() {
        let s = scales[r % scales.len()];
        for v in row {
            let t = *v as f64 * s;
            *v = t.clamp(-3.4e38, 3.4e38) as f32;
        }
    }
}

/// A workspace of `floats` floats, 8-byte aligned (it starts with f64 sums), filled with NaNs.
pub fn work_buf(floats: usize) -> Vec<f64> {
    vec![f64::NAN; floats.div_ceil(2)]
}
