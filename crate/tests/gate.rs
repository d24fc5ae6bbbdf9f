//! Host tests of the gated RMSNorm: the fixed `exp` and SiLU against float64, the gated forward
//! and backward (gate after and before the norm, with and without a gain, Gemma's offset and
//! pRMSNorm's partial statistic) against a float64 reference, and the same bits whatever the
//! rows are cut into.

// Index loops mirror the kernels' and the formulas' indexing; iterator chains would obscure them.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;
use rmsnorm_wasm::abi::Gate;
use rmsnorm_wasm::kernel::{exp, silu, Forward};

/// The distance between `a` and `r` in units of f32's last place at `r` (subnormals: the
/// smallest subnormal).
fn ulps(a: f32, r: f64) -> f64 {
    (a as f64 - r).abs() / ulp_of(r)
}

/// f32's last place at `r`: the gap from `|r|` rounded to f32 to the next float up.
fn ulp_of(r: f64) -> f64 {
    let f = r.abs() as f32;
    (f32::from_bits(f.to_bits() + 1) - f) as f64
}

#[test]
fn exp_is_within_2_ulp_of_float64_over_its_whole_range() {
    let mut worst = (0f32, 0f64);
    let mut x = -104.5f32;
    // every 3001st float from below the cut to past overflow, both signs of the exponent range
    while x < 89.5 {
        let e = exp(x);
        let r = (x as f64).exp();
        if r > f32::MAX as f64 {
            assert_eq!(e, f32::INFINITY, "exp({x}) overflows");
        } else if r < f32::from_bits(1) as f64 / 2.0 {
            assert_eq!(e, 0.0, "exp({x}) underflows");
        } else {
            let u = ulps(e, r);
            if u > worst.1 {
                worst = (x, u);
            }
        }
        x = if x < 0.0 {
            f32::from_bits(x.to_bits() - 3001)
        } else {
            f32::from_bits(x.to_bits() + 3001)
        };
        if x > -1e-30 && x < 0.0 {
            x = 0.0;
        }
        if x == 0.0 {
            x = f32::MIN_POSITIVE;
        }
    }
    assert!(worst.1 <= 2.0, "exp({}) is {} ulp off", worst.0, worst.1);
    assert!(exp(f32::NAN).is_nan());
    assert_eq!(exp(f32::INFINITY), f32::INFINITY);
    assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    assert_eq!(exp(0.0), 1.0);
    assert_eq!(exp(-0.0), 1.0);
}

fn silu64(z: f64) -> f64 {
    z / (1.0 + (-z).exp())
}

fn silu_grad64(z: f64) -> f64 {
    let s = 1.0 / (1.0 + (-z).exp());
    s * (1.0 + z * (1.0 - s))
}

/// The size of the terms of SiLU's derivative, which cancel near its root (z ≈ −1.28).
fn silu_grad_scale(z: f64) -> f64 {
    let s = 1.0 / (1.0 + (-z).exp());
    s * (1.0 + (z * (1.0 - s)).abs())
}

#[test]
fn silu_is_within_4_ulp_of_float64() {
    let mut rng = Rng(7);
    for i in 0..200_000 {
        let z = (rng.normal() * if i % 2 == 0 { 3.0 } else { 40.0 }) as f32;
        let r = silu64(z as f64);
        // where e^−z overflows the formula gives −0, as PyTorch's does
        if (-z as f64).exp() > f32::MAX as f64 {
            assert_eq!(silu(z), 0.0, "silu({z})");
            continue;
        }
        assert!(
            ulps(silu(z), r) <= 4.0,
            "silu({z}) = {}, float64 {r}",
            silu(z)
        );
    }
}

/// One gated problem: rows × dim of x, z, dy; the gain and how it is applied.
struct Case {
    x: Vec<f32>,
    z: Vec<f32>,
    dy: Vec<f32>,
    g: Option<Vec<f32>>,
    dim: usize,
    eps: f32,
    offset: f32,
    stat: usize,
    gate: Gate,
}

impl Case {
    fn new(rows: usize, dim: usize, gate: Gate, seed: u64) -> Case {
        let mut z = Rng(seed + 1).normals(rows * dim, 3.0);
        // a few gates at the ends of SiLU's range
        for (i, v) in [-100.0, -88.8, -30.0, 30.0, 100.0].into_iter().enumerate() {
            let at = (i * 7919) % z.len();
            z[at] = v;
        }
        Case {
            x: test_rows(rows, dim, seed),
            z,
            dy: Rng(seed + 2).normals(rows * dim, 1.0),
            g: Some(test_weight(dim, seed + 3)),
            dim,
            eps: 1e-6,
            offset: 0.0,
            stat: dim,
            gate,
        }
    }

    fn forward_of(&self, y: &mut [f32], rstd: &mut [f32]) -> Forward {
        let g = self.g.as_ref().map_or(ptr::null(), |g| g.as_ptr());
        let mut k = Forward::plain(
            self.x.as_ptr(),
            g,
            y.as_mut_ptr(),
            rstd.as_mut_ptr(),
            self.dim,
            self.eps,
        );
        (k.z, k.s.gate, k.s.p.offset, k.s.stat) =
            (self.z.as_ptr(), self.gate, self.offset, self.stat);
        k
    }

    /// The kernel's forward: (y, rstd).
    fn forward(&self) -> (Vec<f32>, Vec<f32>) {
        let rows = self.x.len() / self.dim;
        let (mut y, mut rstd) = (vec![0f32; self.x.len()], vec![0f32; rows]);
        let k = self.forward_of(&mut y, &mut rstd);
        // SAFETY: every slice has the shape the kernel expects.
        unsafe { kernel::forward_with::<V, f32>(&k, rows).expect("the scratch of a row") };
        (y, rstd)
    }

    fn backward_of(&self, rstd: Option<&[f32]>, dx: &mut [f32], dz: &mut [f32]) -> Backward {
        let g = self.g.as_ref().map_or(ptr::null(), |g| g.as_ptr());
        let r = rstd.map_or(ptr::null(), |r| r.as_ptr());
        let mut k = Backward::plain(
            self.dy.as_ptr(),
            self.x.as_ptr(),
            g,
            r,
            dx.as_mut_ptr(),
            self.dim,
            self.eps,
        );
        (k.z, k.dz, k.s.gate, k.s.p.offset, k.s.stat) = (
            self.z.as_ptr(),
            dz.as_mut_ptr(),
            self.gate,
            self.offset,
            self.stat,
        );
        k
    }

    /// The kernel's backward in one call: (dx, dz, dg).
    fn backward(&self, rstd: Option<&[f32]>) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let rows = self.x.len() / self.dim;
        let (mut dx, mut dz) = (vec![0f32; self.x.len()], vec![0f32; self.x.len()]);
        let (mut dg, mut work) = (
            vec![0f32; self.dim],
            work_buf(kernel::span_work_floats(self.dim)),
        );
        let k = self.backward_of(rstd, &mut dx, &mut dz);
        // SAFETY: every slice has the shape the kernel expects.
        unsafe {
            kernel::backward::<V, f32>(&k, rows, dg.as_mut_ptr(), work.as_mut_ptr() as *mut f32)
                .expect("the scratch of a row")
        };
        (dx, dz, dg)
    }

    /// The float64 reference: y, dx, dz, dg; per element the scales of dx and dz (the size of
    /// the terms that cancel in them: rstd's gradient nearly cancels the direct one on rows of
    /// one or two elements) and Σ|dg terms|.
    #[allow(clippy::type_complexity)]
    fn reference(
        &self,
    ) -> (
        Vec<f64>,
        Vec<f64>,
        Vec<f64>,
        Vec<f64>,
        Vec<f64>,
        Vec<f64>,
        Vec<f64>,
    ) {
        let (n, rows) = (self.dim, self.x.len() / self.dim);
        let (mut y, mut dx, mut dz) = (
            vec![0.0; rows * n],
            vec![0.0; rows * n],
            vec![0.0; rows * n],
        );
        let (mut dg, mut dg_abs) = (vec![0.0; n], vec![0.0; n]);
        let (mut sx, mut sz) = (vec![0.0; rows * n], vec![0.0; rows * n]);
        for row in 0..rows {
            let at = |v: &[f32], i: usize| v[row * n + i] as f64;
            let gain = |i: usize| {
                self.g
                    .as_ref()
                    .map_or(1.0, |g| self.offset as f64 + g[i] as f64)
            };
            // SiLU's f32 value (tested on its own above): with the gate before the norm, a row
            // of one or two elements is so ill-conditioned that SiLU's last bit would show
            let s = |i: usize| silu(self.z[row * n + i]) as f64;
            let after = self.gate == Gate::After;
            let h: Vec<f64> = (0..n)
                .map(|i| {
                    if after {
                        at(&self.x, i)
                    } else {
                        at(&self.x, i) * s(i)
                    }
                })
                .collect();
            let ss: f64 = h[..self.stat].iter().map(|v| v * v).sum();
            let r = 1.0 / (ss / self.stat as f64 + self.eps as f64).sqrt();
            let gy: Vec<f64> = (0..n)
                .map(|i| at(&self.dy, i) * gain(i) * if after { s(i) } else { 1.0 })
                .collect();
            let c: f64 = (0..n).map(|i| gy[i] * h[i]).sum();
            let b = r * r * r * c / self.stat as f64;
            let big = gy.iter().fold(0f64, |m, v| m.max((r * v).abs()));
            for i in 0..n {
                let (d, zg) = (at(&self.dy, i), silu_grad64(at(&self.z, i)));
                let t = h[i] * r * gain(i);
                y[row * n + i] = if after { t * s(i) } else { t };
                let dh = r * gy[i] - if i < self.stat { b * h[i] } else { 0.0 };
                (dx[row * n + i], dz[row * n + i]) = if after {
                    (dh, d * t * zg)
                } else {
                    (dh * s(i), dh * at(&self.x, i) * zg)
                };
                let term = d * h[i] * r * if after { s(i) } else { 1.0 };
                dg[i] += term;
                dg_abs[i] += term.abs();
                let e = row * n + i;
                let zs = silu_grad_scale(at(&self.z, i));
                (sx[e], sz[e]) = if after {
                    (big, (d * t).abs() * zs)
                } else {
                    (big * s(i).abs(), big * (at(&self.x, i)).abs() * zs)
                };
            }
        }
        (y, dx, dz, dg, sx, sz, dg_abs)
    }
}

/// Checks `c` against float64; `fast`: every row is on the f32 path, so the backward gives the
/// same bits with the forward's rstd as recomputing it (the f64 path starts from the rounded
/// rstd when it is given).
fn check(c: &Case, what: &str, fast: bool) {
    let rows = c.x.len() / c.dim;
    let (y, rstd) = c.forward();
    let (ry, rdx, rdz, rdg, sx, sz, dg_abs) = c.reference();
    assert_close(&format!("y, {what}"), &y, &ry, y_tol);
    let (dx, dz, dg) = c.backward(None);
    // 1e-30: a SiLU past −88.7 is −0 in f32 (as PyTorch's), 1e-38 and less in float64
    assert_close(&format!("dx, {what}"), &dx, &rdx, |i, r| {
        1e-5 * (sx[i] + r.abs()) + 1e-30
    });
    assert_close(&format!("dz, {what}"), &dz, &rdz, |i, r| {
        1e-5 * (sz[i] + r.abs()) + 1e-30
    });
    if c.g.is_some() {
        let nblocks = rows.div_ceil(DG_BLOCK_ROWS) as f64;
        assert_close(&format!("dg, {what}"), &dg, &rdg, |i, _| {
            1e-6 + (40.0 + nblocks) * U * dg_abs[i]
        });
    }
    // the forward's rstd is the one the backward recomputes: the same bits either way
    let (dx2, dz2, dg2) = c.backward(Some(&rstd));
    assert!(
        !fast || same_bits(&dx, &dx2) && same_bits(&dz, &dz2) && same_bits(&dg, &dg2),
        "saved rstd, {what}"
    );
}

#[test]
fn gated_forward_and_backward_match_float64() {
    for gate in [Gate::After, Gate::Before] {
        for dim in [1, 3, 4, 5, 16, 17, 33, 1000, 4097] {
            let rows = (16384 / dim).clamp(3, 40);
            let mut c = Case::new(rows, dim, gate, dim as u64 * 10 + gate as u64);
            check(&c, &format!("{gate:?}, dim {dim}"), true);
            c.offset = 1.0;
            check(&c, &format!("{gate:?}, dim {dim}, offset 1"), true);
            c.stat = dim.div_ceil(3);
            check(&c, &format!("{gate:?}, dim {dim}, stat {}", c.stat), true);
            c.g = None;
            check(
                &c,
                &format!("{gate:?}, dim {dim}, stat {}, no gain", c.stat),
                true,
            );
        }
    }
}

#[test]
fn gated_rows_beyond_float32_take_the_f64_path() {
    for gate in [Gate::After, Gate::Before] {
        let mut c = Case::new(6, 40, gate, 99);
        // with the gate before the norm x·silu(z) must stay finite in f32, as in PyTorch
        let big = if gate == Gate::After { 3e38 } else { 1e34 };
        scale_rows(&mut c.x, 40, &[1e30, 1e-30, 1.0, big, 1e-40, 1e20]);
        check(&c, &format!("{gate:?}, extreme rows"), false);
    }
}

#[test]
fn gated_backward_in_spans_and_shards_gives_the_bits_of_one_call() {
    for gate in [Gate::After, Gate::Before] {
        let (rows, dim) = (100, 37);
        let c = Case::new(rows, dim, gate, 5);
        let (dx, dz, dg) = c.backward(None);
        // spans of 7 rows, the open dweight block carried between them
        let (mut dx2, mut dz2) = (vec![0f32; rows * dim], vec![0f32; rows * dim]);
        let (mut dg2, mut work) = (vec![0f32; dim], work_buf(kernel::span_work_floats(dim)));
        let mut row0 = 0;
        while row0 < rows {
            let len = 7.min(rows - row0);
            let mut k = c.backward_of(None, &mut dx2, &mut dz2);
            let off = row0 * dim;
            // SAFETY: offsets inside the matrices; the kernel reads `len` rows from them.
            unsafe {
                (k.dy, k.x, k.z) = (k.dy.add(off), k.x.add(off), k.z.add(off));
                (k.dx, k.dz) = (k.dx.add(off), k.dz.add(off));
                kernel::backward_span::<V, f32>(
                    &k,
                    row0,
                    len,
                    rows,
                    dg2.as_mut_ptr(),
                    work.as_mut_ptr() as *mut f32,
                )
                .expect("the scratch of a row");
            }
            row0 += len;
        }
        assert!(
            same_bits(&dx, &dx2) && same_bits(&dz, &dz2) && same_bits(&dg, &dg2),
            "{gate:?} spans"
        );
        // pool shards on block boundaries, then the partials reduced
        let (mut dx3, mut dz3) = (vec![0f32; rows * dim], vec![0f32; rows * dim]);
        let blocks = kernel::dg_blocks(rows);
        let (mut work3, mut dg3) = (
            work_buf(kernel::pool_work_floats(blocks, dim)),
            vec![0f32; dim],
        );
        let w3 = work3.as_mut_ptr() as *mut f32;
        let k = c.backward_of(None, &mut dx3, &mut dz3);
        // SAFETY: every slice has the shape the kernel expects.
        unsafe {
            kernel::backward_rows::<V, f32>(&k, 64, rows, w3).expect("the scratch of a row");
            kernel::backward_rows::<V, f32>(&k, 0, 64, w3).expect("the scratch of a row");
            kernel::reduce_partials(w3, blocks, &k.s, dg3.as_mut_ptr(), false);
        }
        assert!(
            same_bits(&dx, &dx3) && same_bits(&dz, &dz3) && same_bits(&dg, &dg3),
            "{gate:?} shards"
        );
    }
}
