//! Host tests of what only the benchmark's build exports: the LayerNorm forward and the copy.
#![cfg(feature = "bench-kernels")]
// Index loops mirror the kernels' and the formulas' indexing; iterator chains would obscure them.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;

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
