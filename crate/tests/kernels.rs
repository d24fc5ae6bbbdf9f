//! Host tests of the kernels against a float64 reference: every row-length class, the float64
//! slow paths (overflowing and subnormal rows), NaN containment and in-place aliasing.

// Index loops mirror the kernels' and the formulas' indexing; iterator chains would obscure them.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;

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
                    // ≤ 34·2^-24·Σ|t| (2 roundings per term, ≤ 31 adds per block, the
                    // blocks added in f64 and rounded once)
                    let rbr = ref_backward(&dy, &x, g, dim, eps, Some(&rstd));
                    assert_close(&format!("dg, {what}"), dg2, &rbr.dg, |i, _| {
                        34.0 * U * rbr.dg_abs[i]
                    });
                }
            }
        }
    }
}

#[test]
fn dg_over_8192_rows_is_within_its_block_bound() {
    let (rows, dim) = (8192, 64);
    let x = Rng(7).normals(rows * dim, 1.0);
    let dy = Rng(8).normals(rows * dim, 1.0);
    let w = test_weight(dim, 9);
    let (_, rstd) = forward(&x, Some(&w), dim, 1e-6);
    let (_, dg) = backward(&dy, &x, Some(&w), Some(&rstd), dim, 1e-6);
    let rb = ref_backward(&dy, &x, Some(&w), dim, 1e-6, Some(&rstd));
    let dg = dg.unwrap();
    // Each term rounded twice and 31 f32 additions per block; the blocks added in f64 and
    // rounded once: (2 + 31 + 1)·2^-24·Σ|t|, whatever the number of blocks.
    assert_close("dg", &dg, &rb.dg, |i, _| 34.0 * U * rb.dg_abs[i]);
    // the exact documented order: f32 sums per 32-row block, blocks added in f64 in order
    let mut expect = vec![0f64; dim];
    for b in 0..rows / DG_BLOCK_ROWS {
        let mut p = vec![0f32; dim];
        for r in b * DG_BLOCK_ROWS..(b + 1) * DG_BLOCK_ROWS {
            for i in 0..dim {
                p[i] += dy[r * dim + i] * (x[r * dim + i] * rstd[r]);
            }
        }
        for i in 0..dim {
            expect[i] += p[i] as f64;
        }
    }
    let expect: Vec<f32> = expect.iter().map(|&v| v as f32).collect();
    assert!(
        same_bits(&dg, &expect),
        "dg is not the 32-row-block float32 sums added in float64"
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
            assert_close(&format!("rstd, {what}"), &rstd, &r.rstd, |_, r| {
                1e-5 * r.abs()
            });
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
        unsafe {
            kernel::forward::<V>(p, w.as_ptr(), p, ptr::null_mut(), rows, dim, 1e-6)
                .expect("the scratch of a row")
        };
        assert!(same_bits(&inplace, &y), "y = x in place, dim {dim}");

        let (dx, dg) = backward(&dy, &x, Some(&w), None, dim, 1e-6);
        for alias_dy in [true, false] {
            let mut buf = if alias_dy { dy.clone() } else { x.clone() };
            let mut dg2 = vec![0f32; dim];
            let mut work = work_buf(kernel::span_work_floats(dim));
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
            unsafe {
                kernel::backward::<V, _>(&k, rows, dg2.as_mut_ptr(), work.as_mut_ptr() as *mut f32)
                    .expect("the scratch of a row")
            };
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

#[test]
fn the_dtype_table_agrees_with_the_element_types() {
    use rmsnorm_wasm::abi::{Dtype, DTYPES};
    use rmsnorm_wasm::elem::{Bf16, Elem, F16};
    fn facts<A: Elem>(d: Dtype) {
        let f = DTYPES[d as usize];
        assert_eq!(
            (f.bytes, A::F32),
            (std::mem::size_of::<A>(), d == Dtype::Float32),
            "{}",
            f.name
        );
        // The half types, which the public conversions take, are two-byte ones.
        assert!(!f.half || f.bytes == 2, "{}", f.name);
    }
    facts::<f32>(Dtype::Float32);
    facts::<F16>(Dtype::Float16);
    facts::<Bf16>(Dtype::Bfloat16);
}
