//! Host tests of the kernels (the portable 4-lane vector: the same rounding order as SIMD128),
//! against a float64 reference: every row-length class, the float64 slow paths (overflowing
//! and subnormal rows), NaN containment, in-place aliasing, the pool's sharded backward, the
//! LayerNorm forward and the copy. Tolerances as in the TypeScript suites (test/numerics.test.ts).

// Index loops mirror the kernels' and the formulas' indexing; iterator chains would obscure them.
#![allow(clippy::needless_range_loop)]

use rmsnorm_wasm::kernel::{self, Backward, DG_BLOCK_ROWS};
use rmsnorm_wasm::simd::portable::Portable;
use std::ptr;

type V = Portable;

const LENGTHS: [usize; 11] = [1, 3, 4, 5, 15, 16, 17, 33, 4096, 4097, 65536];
const EPS: [f32; 4] = [1e-6, 1e-5, 0.1, 0.0];
/// PyTorch's float32 tolerances (torch.testing.assert_close).
const ATOL: f64 = 1e-5;
const RTOL: f64 = 1.3e-6;
/// 2^-24, float32's unit roundoff.
const U: f64 = 1.0 / 16_777_216.0;

/// A small deterministic PRNG (splitmix64): failures reproduce exactly, no crates needed.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
    /// Standard normal (Box–Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
    fn normals(&mut self, n: usize, scale: f64) -> Vec<f32> {
        (0..n).map(|_| (self.normal() * scale) as f32).collect()
    }
}

/// Rows of differing scale (10^-3 .. 10^3), some with a nonzero mean.
fn test_rows(rows: usize, dim: usize, seed: u64) -> Vec<f32> {
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
fn test_weight(dim: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng(seed);
    (0..dim)
        .map(|i| (if i % 11 == 5 { -1.0 } else { 1.0 }) * (0.5 + rng.uniform()) as f32)
        .collect()
}

fn rows_for(dim: usize) -> usize {
    if dim >= 65536 {
        2
    } else {
        (65536 / dim).clamp(3, 64)
    }
}

// ---------- float64 reference ----------

struct RefFwd {
    y: Vec<f64>,
    rstd: Vec<f64>,
}

fn ref_forward(x: &[f32], g: Option<&[f32]>, dim: usize, eps: f32) -> RefFwd {
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

struct RefBwd {
    dx: Vec<f64>,
    dg: Vec<f64>,
    /// Σ_rows |dy·x·rstd| per column: the scale of dg's rounding error.
    dg_abs: Vec<f64>,
    /// rstd·rms(gy) per row: the natural magnitude of the row's dx.
    dx_scale: Vec<f64>,
}

fn ref_backward(
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

fn forward(x: &[f32], g: Option<&[f32]>, dim: usize, eps: f32) -> (Vec<f32>, Vec<f32>) {
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
    };
    (y, rstd)
}

fn backward_args(
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
fn backward(
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
    let mut work = vec![f32::from_bits(0x7fc0_dead); dim];
    let k = backward_args(dy, x, g, rstd, &mut dx, dim, eps);
    // SAFETY: every slice has the shape the kernel expects.
    unsafe { kernel::backward::<V, _>(&k, rows, dg.as_mut_ptr(), work.as_mut_ptr()) };
    (dx, g.map(|_| dg))
}

// ---------- comparisons ----------

/// Panics with the worst offender unless |a − r| ≤ tol(i, r) everywhere (NaN must match NaN,
/// infinities must match exactly).
fn assert_close(what: &str, actual: &[f32], reference: &[f64], tol: impl Fn(usize, f64) -> f64) {
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

fn y_tol(_i: usize, r: f64) -> f64 {
    ATOL + RTOL * r.abs()
}

fn same_bits(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn scale_rows(x: &mut [f32], dim: usize, scales: &[f64]) {
    for (r, row) in x.chunks_mut(dim).enumerate() {
        let s = scales[r % scales.len()];
        for v in row {
            let t = *v as f64 * s;
            *v = t.clamp(-3.4e38, 3.4e38) as f32;
        }
    }
}

// ---------- tests ----------

#[test]
fn forward_matches_reference_for_every_length_eps_and_gain() {
    for dim in LENGTHS {
        let rows = rows_for(dim);
        let x = test_rows(rows, dim, 1000 + dim as u64);
        let w = test_weight(dim, 3000 + dim as u64);
        for eps in EPS {
            for g in [None, Some(&w[..])] {
                let what = format!("dim {dim}, eps {eps}, gain {}", g.is_some());
                let (y, rstd) = forward(&x, g, dim, eps);
                let r = ref_forward(&x, g, dim, eps);
                assert_close(&format!("y, {what}"), &y, &r.y, y_tol);
                assert_close(&format!("rstd, {what}"), &rstd, &r.rstd, |_, r| {
                    1e-5 * r.abs()
                });
            }
        }
    }
}

#[test]
fn backward_matches_reference_for_every_length_eps_and_gain() {
    for dim in LENGTHS {
        let rows = rows_for(dim);
        let x = test_rows(rows, dim, 1000 + dim as u64);
        let dy = Rng(2000 + dim as u64).normals(rows * dim, 1.0);
        let w = test_weight(dim, 3000 + dim as u64);
        for eps in EPS {
            for g in [None, Some(&w[..])] {
                let what = format!("dim {dim}, eps {eps}, gain {}", g.is_some());
                // rstd recomputed: against the all-float64 reference; dx's tolerance is scaled
                // by the row's natural dx magnitude (dx scales as 1/|x|)
                let (dx, dg) = backward(&dy, &x, g, None, dim, eps);
                let rb = ref_backward(&dy, &x, g, dim, eps, None);
                assert_close(&format!("dx, {what}"), &dx, &rb.dx, |i, r| {
                    1e-5 * (rb.dx_scale[i / dim] + r.abs())
                });
                assert_eq!(dg.is_some(), g.is_some());
                // with the forward's rstd: the recomputation gave the same rstd, so same bits
                let (_, rstd) = forward(&x, g, dim, eps);
                let (dx2, dg2) = backward(&dy, &x, g, Some(&rstd), dim, eps);
                assert!(same_bits(&dx, &dx2), "dx with/without saved rstd, {what}");
                if let (Some(dg), Some(dg2)) = (&dg, &dg2) {
                    assert!(same_bits(dg, dg2), "dg with/without saved rstd, {what}");
                    // dg against float64 sums of the same rstd: only the summation rounds,
                    // ≤ (32 + nblocks + 2)·2^-24·Σ|t| (2 roundings per term, ≤ 31 adds per
                    // block, one add per block)
                    let rbr = ref_backward(&dy, &x, g, dim, eps, Some(&rstd));
                    let nblocks = rows.div_ceil(DG_BLOCK_ROWS) as f64;
                    assert_close(&format!("dg, {what}"), dg2, &rbr.dg, |i, _| {
                        (34.0 + nblocks) * U * rbr.dg_abs[i]
                    });
                }
            }
        }
    }
}

#[test]
fn dg_over_8192_rows_is_within_float32_accumulation_bound() {
    let (rows, dim) = (8192, 64);
    let x = Rng(7).normals(rows * dim, 1.0);
    let dy = Rng(8).normals(rows * dim, 1.0);
    let w = test_weight(dim, 9);
    let (_, rstd) = forward(&x, Some(&w), dim, 1e-6);
    let (_, dg) = backward(&dy, &x, Some(&w), Some(&rstd), dim, 1e-6);
    let rb = ref_backward(&dy, &x, Some(&w), dim, 1e-6, Some(&rstd));
    let nblocks = (rows / DG_BLOCK_ROWS) as f64;
    let dg = dg.unwrap();
    assert_close("dg", &dg, &rb.dg, |i, _| {
        (34.0 + nblocks) * U * rb.dg_abs[i]
    });
    // the exact documented order: f32 sums per 32-row block, blocks added in order
    let mut expect = vec![0f32; dim];
    for b in 0..rows / DG_BLOCK_ROWS {
        let mut p = vec![0f32; dim];
        for r in b * DG_BLOCK_ROWS..(b + 1) * DG_BLOCK_ROWS {
            for i in 0..dim {
                p[i] += dy[r * dim + i] * (x[r * dim + i] * rstd[r]);
            }
        }
        for i in 0..dim {
            expect[i] += p[i];
        }
    }
    assert!(
        same_bits(&dg, &expect),
        "dg is not the 32-row-block float32 sum"
    );
}

#[test]
fn overflowing_rows_take_the_f64_path_and_match_the_reference() {
    let scales = [1e20, 1e30, 1e36, 1e37, 1e38, 3e38, 1.0];
    for dim in [1, 5, 16, 17, 4097] {
        let mut x = Rng(9 + dim as u64).normals(scales.len() * dim, 1.0);
        scale_rows(&mut x, dim, &scales);
        let w = test_weight(dim, dim as u64);
        for eps in [0.0, 1e-6] {
            let (y, rstd) = forward(&x, Some(&w), dim, eps);
            let r = ref_forward(&x, Some(&w), dim, eps);
            assert_close(&format!("y, dim {dim}"), &y, &r.y, y_tol);
            assert!(y.iter().all(|v| v.is_finite()), "dim {dim}: non-finite y");
            // rstd near 1e-38 and below is subnormal: a relative 1e-5 or half a subnormal step
            assert_close(&format!("rstd, dim {dim}"), &rstd, &r.rstd, |_, r| {
                (1e-5 * r.abs()).max(2f64.powi(-150))
            });
        }
        // backward on rows of ~1e20 (rstd ~1e-20 is outside the fast path's rstd³ range)
        let mut xb = Rng(10 + dim as u64).normals(4 * dim, 1.0);
        scale_rows(&mut xb, dim, &[1e20, -3e20, 1e25, 1.0]);
        let dy = Rng(11).normals(4 * dim, 1.0);
        let (dx, dg) = backward(&dy, &xb, Some(&w), None, dim, 1e-6);
        let rb = ref_backward(&dy, &xb, Some(&w), dim, 1e-6, None);
        assert_close(&format!("dx, dim {dim}"), &dx, &rb.dx, |i, r| {
            1e-5 * (rb.dx_scale[i / dim] + r.abs())
        });
        assert!(
            dx[..dim].iter().any(|&v| v != 0.0),
            "dim {dim}: dx flushed to zero"
        );
        assert_close(&format!("dg, dim {dim}"), &dg.unwrap(), &rb.dg, |i, _| {
            52.0 * U * rb.dg_abs[i]
        });
        // and with the forward's (float32) rstd, which the kernel must not cube in float32
        let (_, rstd) = forward(&xb, Some(&w), dim, 1e-6);
        let (dx, dg) = backward(&dy, &xb, Some(&w), Some(&rstd), dim, 1e-6);
        let rb = ref_backward(&dy, &xb, Some(&w), dim, 1e-6, Some(&rstd));
        assert_close(
            &format!("dx (saved rstd), dim {dim}"),
            &dx,
            &rb.dx,
            |i, r| 1e-5 * (rb.dx_scale[i / dim] + r.abs()),
        );
        assert_close(
            &format!("dg (saved rstd), dim {dim}"),
            &dg.unwrap(),
            &rb.dg,
            |i, _| 35.0 * U * rb.dg_abs[i],
        );
    }
}

#[test]
fn a_statistic_that_overflows_only_with_eps_takes_the_f64_path() {
    // `mean(x²) + eps` rounds to f32::MAX for c = 2^51 (c² = 2^102, below half an ulp of MAX)
    // and overflows for c = 2^52 (c² = 2^104, exactly one ulp), although Σx² does not: both
    // rows must match the reference, not give y = 0 and rstd = 0.
    let eps = f32::MAX;
    for dim in [1, 5, 16, 17, 4097] {
        for c in [2f32.powi(51), 2f32.powi(52), -(2f32.powi(52)), 1e19] {
            let mut x = vec![c; dim];
            x[dim / 2] = c / 2.0; // not a constant row when dim > 1
            let w = test_weight(dim, dim as u64);
            let (y, rstd) = forward(&x, Some(&w), dim, eps);
            let r = ref_forward(&x, Some(&w), dim, eps);
            let what = format!("dim {dim}, x = {c:e}, eps = f32::MAX");
            assert_close(&format!("y, {what}"), &y, &r.y, |_, r| 1e-5 * r.abs());
            assert_close(&format!("rstd, {what}"), &rstd, &r.rstd, |_, r| 1e-5 * r.abs());
            assert!(rstd[0] > 0.0, "{what}: rstd flushed to 0");
            let dy = Rng(12).normals(dim, 1.0);
            for saved in [None, Some(&rstd[..])] {
                let (dx, dg) = backward(&dy, &x, Some(&w), saved, dim, eps);
                let rb = ref_backward(&dy, &x, Some(&w), dim, eps, saved);
                assert_close(&format!("dx, {what}"), &dx, &rb.dx, |i, r| {
                    1e-5 * (rb.dx_scale[i / dim] + r.abs())
                });
                assert_close(&format!("dg, {what}"), &dg.unwrap(), &rb.dg, |i, _| {
                    35.0 * U * rb.dg_abs[i]
                });
            }
        }
    }
}

#[test]
fn subnormal_rows_match_the_reference() {
    let scales = [1e-40, 1e-38, 1e-30, 1e-20, 1.0];
    for dim in [1, 5, 16, 17, 4097] {
        let mut x = Rng(12 + dim as u64).normals(scales.len() * dim, 1.0);
        scale_rows(&mut x, dim, &scales);
        let w = test_weight(dim, dim as u64);
        for eps in [0.0f32, 1e-6] {
            let (y, rstd) = forward(&x, Some(&w), dim, eps);
            let r = ref_forward(&x, Some(&w), dim, eps);
            assert_close(&format!("y, dim {dim}, eps {eps}"), &y, &r.y, y_tol);
            // rstd rounds once to f32; with eps = 0, rms ~1e-40 gives rstd ~1e40: +inf
            let r32: Vec<f64> = r.rstd.iter().map(|&v| v as f32 as f64).collect();
            assert_close(
                &format!("rstd, dim {dim}, eps {eps}"),
                &rstd,
                &r32,
                |_, r| 1e-5 * r.abs(),
            );
            if eps == 0.0 {
                assert_eq!(rstd[0], f32::INFINITY);
            }
            let dy = Rng(13).normals(x.len(), 1.0);
            let (dx, _) = backward(&dy, &x, Some(&w), None, dim, eps);
            let rb = ref_backward(&dy, &x, Some(&w), dim, eps, None);
            // dx ~ rstd·dy can pass float32's range too: compare with the rounded reference
            let dx32: Vec<f64> = rb.dx.iter().map(|&v| v as f32 as f64).collect();
            assert_close(&format!("dx, dim {dim}, eps {eps}"), &dx, &dx32, |i, r| {
                1e-5 * (rb.dx_scale[i / dim] + r.abs())
            });
        }
    }
}

#[test]
fn zero_rows() {
    for dim in [1, 5, 17] {
        let x = vec![0f32; 3 * dim];
        let (y, rstd) = forward(&x, None, dim, 0.1);
        assert!(y.iter().all(|&v| v == 0.0));
        let exact = 1.0 / (0.1f32 as f64).sqrt();
        assert!(rstd
            .iter()
            .all(|&r| (r as f64 / exact - 1.0).abs() <= 4.0 * U));
        let (y0, rstd0) = forward(&x, None, dim, 0.0);
        assert!(y0.iter().all(|v| v.is_nan()), "0/0 is NaN, as in float64");
        assert!(rstd0.iter().all(|&r| r == f32::INFINITY));
    }
}

#[test]
fn nan_and_inf_stay_in_their_rows() {
    for dim in [1, 5, 16, 17, 4097] {
        let rows = 6;
        let clean = test_rows(rows, dim, 14 + dim as u64);
        let mut dirty = clean.clone();
        dirty[dim + dim / 2] = f32::NAN;
        dirty[3 * dim] = f32::INFINITY;
        dirty[4 * dim + dim - 1] = f32::NEG_INFINITY;
        let bad = [1, 3, 4];
        let w = test_weight(dim, 15);
        let (yc, rc) = forward(&clean, Some(&w), dim, 1e-6);
        let (yd, rd) = forward(&dirty, Some(&w), dim, 1e-6);
        assert_close(
            &format!("y, dim {dim}"),
            &yd,
            &ref_forward(&dirty, Some(&w), dim, 1e-6).y,
            y_tol,
        );
        assert!(yd[dim..2 * dim].iter().all(|v| v.is_nan()));
        let dy = Rng(16).normals(rows * dim, 1.0);
        let (dxc, _) = backward(&dy, &clean, Some(&w), None, dim, 1e-6);
        let (dxd, _) = backward(&dy, &dirty, Some(&w), None, dim, 1e-6);
        for r in 0..rows {
            let s = r * dim..(r + 1) * dim;
            if bad.contains(&r) {
                assert!(dxd[s].iter().any(|v| !v.is_finite()), "dim {dim} row {r}");
            } else {
                assert!(
                    same_bits(&yd[s.clone()], &yc[s.clone()]),
                    "y, dim {dim} row {r}"
                );
                assert!(same_bits(&dxd[s.clone()], &dxc[s]), "dx, dim {dim} row {r}");
                assert_eq!(rd[r].to_bits(), rc[r].to_bits());
            }
        }
    }
}

#[test]
fn in_place_aliasing_gives_the_same_bits() {
    for dim in [3, 17, 64] {
        let rows = 40;
        let x = test_rows(rows, dim, 17);
        let dy = Rng(18).normals(rows * dim, 1.0);
        let w = test_weight(dim, 19);
        let (y, _) = forward(&x, Some(&w), dim, 1e-6);
        let mut inplace = x.clone();
        let p = inplace.as_mut_ptr();
        // SAFETY: y == x is allowed by the kernel's contract.
        unsafe { kernel::forward::<V>(p, w.as_ptr(), p, ptr::null_mut(), rows, dim, 1e-6) };
        assert!(same_bits(&inplace, &y), "y = x in place, dim {dim}");

        let (dx, dg) = backward(&dy, &x, Some(&w), None, dim, 1e-6);
        for alias_dy in [true, false] {
            let mut buf = if alias_dy { dy.clone() } else { x.clone() };
            let mut dg2 = vec![0f32; dim];
            let mut work = vec![0f32; dim];
            let p = buf.as_mut_ptr();
            let k = Backward::plain(
                if alias_dy {
                    p as *const f32
                } else {
                    dy.as_ptr()
                },
                if alias_dy {
                    x.as_ptr()
                } else {
                    p as *const f32
                },
                w.as_ptr(),
                ptr::null(),
                p,
                dim,
                1e-6,
            );
            // SAFETY: dx == dy and dx == x are allowed by the kernel's contract.
            unsafe { kernel::backward::<V, _>(&k, rows, dg2.as_mut_ptr(), work.as_mut_ptr()) };
            assert!(
                same_bits(&buf, &dx),
                "dx in place (alias dy: {alias_dy}), dim {dim}"
            );
            assert!(
                same_bits(&dg2, dg.as_ref().unwrap()),
                "dg (alias dy: {alias_dy}), dim {dim}"
            );
        }
    }
}

/// backward_rows over `shards` (row boundaries) then reduce_partials over `seg_blocks`
/// (boundaries in blocks, from 0 to all).
#[allow(clippy::too_many_arguments)]
fn sharded(
    dy: &[f32],
    x: &[f32],
    g: Option<&[f32]>,
    rstd: Option<&[f32]>,
    dim: usize,
    shards: &[usize],
    seg_blocks: &[usize],
) -> (Vec<f32>, Option<Vec<f32>>) {
    let rows = x.len() / dim;
    let nblocks = kernel::dg_blocks(rows);
    let mut dx = vec![f32::NAN; x.len()];
    let mut partials = vec![f32::NAN; nblocks * dim];
    let k = backward_args(dy, x, g, rstd, &mut dx, dim, 1e-6);
    // the shards in reverse order: the result must not depend on which finishes first
    for w in shards.windows(2).rev() {
        assert_eq!(w[0] % DG_BLOCK_ROWS, 0);
        // SAFETY: shapes as documented; partials holds nblocks × dim.
        unsafe { kernel::backward_rows::<V, _>(&k, w[0], w[1], partials.as_mut_ptr()) };
    }
    let dg = g.map(|_| {
        // Blocks reduced in segments (later ones accumulating), as the pool does for a matrix
        // streamed through its window: the bits must equal one reduction over all blocks.
        let mut dg = vec![f32::NAN; dim];
        for s in seg_blocks.windows(2) {
            // SAFETY: partials holds nblocks × dim, dg holds dim.
            unsafe {
                kernel::reduce_partials::<V>(
                    partials.as_ptr().add(s[0] * dim),
                    s[1] - s[0],
                    dim,
                    dg.as_mut_ptr(),
                    s[0] > 0,
                )
            };
        }
        dg
    });
    (dx, dg)
}

#[test]
fn sharded_backward_gives_the_same_bits_as_the_single_threaded_one() {
    for (rows, dim) in [(200, 17), (256, 64), (31, 5), (97, 4097)] {
        let x = test_rows(rows, dim, 20);
        let dy = Rng(21).normals(rows * dim, 1.0);
        let w = test_weight(dim, 22);
        let (_, rstd) = forward(&x, Some(&w), dim, 1e-6);
        let b = DG_BLOCK_ROWS;
        // shardings (shards start on multiples of 32 rows): one shard, one per block, uneven
        // multiples of 32, an empty shard
        let mut shardings: Vec<Vec<usize>> = vec![vec![0, rows]];
        shardings.push((0..rows.div_ceil(b)).map(|i| i * b).chain([rows]).collect());
        if rows > 3 * b {
            shardings.push(vec![0, b, 3 * b, rows]);
            shardings.push(vec![0, 2 * b, 2 * b, rows]);
        }
        // segments of blocks reduced one after another: all at once, one per block, uneven, an
        // empty segment
        let nb = rows.div_ceil(b);
        let seg_shardings = [
            vec![0, nb],
            (0..=nb).collect::<Vec<_>>(),
            vec![0, nb / 3, nb / 2, nb],
            vec![0, 0, 1.min(nb), nb],
        ];
        for g in [Some(&w[..]), None] {
            for r in [None, Some(&rstd[..])] {
                let (dx, dg) = backward(&dy, &x, g, r, dim, 1e-6);
                for (si, s) in shardings.iter().enumerate() {
                    for (ci, c) in seg_shardings.iter().enumerate() {
                        let what = format!(
                            "rows {rows}, dim {dim}, gain {}, rstd {}, sharding {si}/{ci}",
                            g.is_some(),
                            r.is_some()
                        );
                        let (dx2, dg2) = sharded(&dy, &x, g, r, dim, s, c);
                        assert!(same_bits(&dx, &dx2), "dx, {what}");
                        match (&dg, &dg2) {
                            (Some(a), Some(b)) => assert!(same_bits(a, b), "dg, {what}"),
                            (None, None) => {}
                            _ => panic!("dg presence differs, {what}"),
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn dg_blocks_rounds_up() {
    assert_eq!(kernel::dg_blocks(0), 0);
    assert_eq!(kernel::dg_blocks(1), 1);
    assert_eq!(kernel::dg_blocks(DG_BLOCK_ROWS), 1);
    assert_eq!(kernel::dg_blocks(DG_BLOCK_ROWS + 1), 2);
    assert_eq!(DG_BLOCK_ROWS, 32);
}

#[cfg(feature = "bench-kernels")] // the benchmark-only kernels
fn ref_layer_norm(
    x: &[f32],
    g: Option<&[f32]>,
    b: Option<&[f32]>,
    dim: usize,
    eps: f32,
) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for (r, row) in x.chunks(dim).enumerate() {
        let mean = row.iter().map(|&v| v as f64).sum::<f64>() / dim as f64;
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / dim as f64;
        let rs = 1.0 / (var + eps as f64).sqrt();
        for i in 0..dim {
            y[r * dim + i] = (row[i] as f64 - mean) * rs * g.map_or(1.0, |g| g[i] as f64)
                + b.map_or(0.0, |b| b[i] as f64);
        }
    }
    y
}

#[cfg(feature = "bench-kernels")] // the benchmark-only kernels
#[test]
fn layer_norm_forward_matches_reference() {
    for dim in [1, 3, 4, 5, 16, 17, 33, 4096, 4097] {
        let rows = rows_for(dim).min(16);
        // unit-scale rows with a mean offset of 2: the two-pass variance stays accurate
        let mut rng = Rng(23 + dim as u64);
        let x: Vec<f32> = (0..rows * dim)
            .map(|i| (rng.normal() + if (i / dim) % 2 == 1 { 2.0 } else { 0.0 }) as f32)
            .collect();
        let w = test_weight(dim, 24);
        let bias = Rng(25).normals(dim, 1.0);
        for (g, b) in [
            (None, None),
            (Some(&w[..]), None),
            (Some(&w[..]), Some(&bias[..])),
            (None, Some(&bias[..])),
        ] {
            let mut y = vec![f32::NAN; x.len()];
            // SAFETY: shapes as documented.
            unsafe {
                kernel::layer_norm_forward::<V>(
                    x.as_ptr(),
                    g.map_or(ptr::null(), |g| g.as_ptr()),
                    b.map_or(ptr::null(), |b| b.as_ptr()),
                    y.as_mut_ptr(),
                    rows,
                    dim,
                    1e-5,
                )
            };
            let r = ref_layer_norm(&x, g, b, dim, 1e-5);
            assert_close(
                &format!(
                    "layer norm, dim {dim}, gain {}, bias {}",
                    g.is_some(),
                    b.is_some()
                ),
                &y,
                &r,
                y_tol,
            );
        }
    }
}

#[cfg(feature = "bench-kernels")] // the benchmark-only kernels
#[test]
fn copy_copies_exactly_and_nothing_more() {
    for n in [0, 1, 3, 15, 16, 17, 1000, 4097] {
        let src: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
        let mut dst = vec![-1f32; n + 8];
        // SAFETY: src has n floats, dst at least n.
        unsafe { kernel::copy::<V>(src.as_ptr(), dst.as_mut_ptr(), n) };
        assert!(same_bits(&dst[..n], &src), "n {n}");
        assert!(
            dst[n..].iter().all(|&v| v == -1.0),
            "n {n}: wrote past the end"
        );
    }
}

/// The backward streamed through a window: spans of any length (not only whole blocks), in row
/// order, each with its addresses at its first row and the open dweight block carried in `work`.
#[test]
fn backward_in_spans_gives_the_same_bits_as_one_call() {
    for (rows, dim) in [(200, 17), (97, 64), (31, 5), (65, 4097)] {
        let x = test_rows(rows, dim, 30);
        let dy = Rng(31).normals(rows * dim, 1.0);
        let w = test_weight(dim, 32);
        let (_, rstd) = forward(&x, Some(&w), dim, 1e-6);
        for g in [Some(&w[..]), None] {
            for r in [None, Some(&rstd[..])] {
                let (dx, dg) = backward(&dy, &x, g, r, dim, 1e-6);
                for span in [1, 7, 32, 33, 64, 100, rows] {
                    let mut dx2 = vec![f32::NAN; x.len()];
                    let mut dg2 = vec![f32::NAN; dim];
                    let mut work = vec![f32::NAN; dim];
                    let mut r0 = 0;
                    while r0 < rows {
                        let n = span.min(rows - r0);
                        let (a, e) = (r0 * dim, (r0 + n) * dim);
                        let k = backward_args(
                            &dy[a..e],
                            &x[a..e],
                            g,
                            r.map(|r| &r[r0..r0 + n]),
                            &mut dx2[a..e],
                            dim,
                            1e-6,
                        );
                        // SAFETY: every pointer is valid for n rows; dg2 and work hold dim.
                        unsafe {
                            kernel::backward_span::<V, _>(
                                &k,
                                r0,
                                n,
                                rows,
                                dg2.as_mut_ptr(),
                                work.as_mut_ptr(),
                            )
                        };
                        r0 += n;
                    }
                    let what = format!(
                        "rows {rows}, dim {dim}, span {span}, gain {}, rstd {}",
                        g.is_some(),
                        r.is_some()
                    );
                    assert!(same_bits(&dx, &dx2), "dx, {what}");
                    if let Some(dg) = &dg {
                        assert!(same_bits(dg, &dg2), "dg, {what}");
                    }
                }
            }
        }
    }
}

/// Issue 15: rows of 2^20 and 2^24 floats (one row each), uniform in [-1, 1] and near-constant
/// (1 + 1e-3·u: every square rounds alike, where one f32 running sum drifts most). Summed in
/// blocks of `kernel::SUM_BLOCK` added in f64, rstd stays within 2e-6 relative of float64
/// (it was 2e-5 .. 5e-4 off with 16 partial sums over the whole row); y and dx (rstd
/// recomputed, so both of the backward's sums are blocked) within float32 tolerance.
#[test]
fn long_rows_keep_rstd_within_2e_6_of_float64() {
    for log2 in [20, 24] {
        let n = 1usize << log2;
        for near_constant in [false, true] {
            let mut rng = Rng(log2 as u64 * 2 + near_constant as u64);
            let x: Vec<f32> = (0..n)
                .map(|_| {
                    let u = rng.uniform();
                    if near_constant {
                        1.0 + 1e-3 * u
                    } else {
                        2.0 * u - 1.0
                    }
                } as f32)
                .collect();
            let what = format!(
                "2^{log2} {}",
                if near_constant {
                    "near-constant"
                } else {
                    "uniform"
                }
            );
            let (y, rstd) = forward(&x, None, n, 1e-6);
            let r = ref_forward(&x, None, n, 1e-6);
            let rel = (rstd[0] as f64 - r.rstd[0]).abs() / r.rstd[0];
            assert!(
                rel <= 2e-6,
                "{what}: rstd {} vs float64 {}: relative error {rel:.2e}",
                rstd[0],
                r.rstd[0]
            );
            assert_close(&format!("{what} y"), &y, &r.y, y_tol);
            let dy: Vec<f32> = (0..n).map(|_| (2.0 * rng.uniform() - 1.0) as f32).collect();
            let (dx, _) = backward(&dy, &x, None, None, n, 1e-6);
            let rb = ref_backward(&dy, &x, None, n, 1e-6, None);
            assert_close(&format!("{what} dx"), &dx, &rb.dx, y_tol);
        }
    }
}

/// The rows on which an f32 running sum drifts most: constant rows whose square rounds the same
/// way at every addition. Over one fold of 8192 floats (16 partial sums of 512 terms) rstd was
/// off by up to 3.8e-6; in blocks of `SUM_BLOCK` it stays within the 2e-6 bound.
#[test]
fn constant_rows_stay_within_2e_6() {
    let n = 8192;
    let mut worst = 0f64;
    for k in 0..400 {
        let c = (1.0 + k as f64 * 2f64.powi(-23)).sqrt() as f32;
        let x = vec![c; n];
        let (_, rstd) = forward(&x, None, n, 1e-6);
        let r = ref_forward(&x, None, n, 1e-6).rstd[0];
        worst = worst.max((rstd[0] as f64 - r).abs() / r);
    }
    assert!(worst <= 2e-6, "worst rstd relative error {worst:.2e}");
}
