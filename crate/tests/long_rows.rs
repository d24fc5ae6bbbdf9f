//! Host tests of long rows: rstd summed in blocks stays within 2e-6 of float64.

// Index loops mirror the kernels' and the formulas' indexing; iterator chains would obscure them.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;

/// Rows of 2^20 and 2^24 floats (one row each), uniform in [-1, 1] and near-constant
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
