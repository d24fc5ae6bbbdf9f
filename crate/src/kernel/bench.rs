//! Kernels only the benchmark's build exports (feature `bench-kernels`): the LayerNorm forward
//! RMSNorm is compared with, the copy that is the memory-bandwidth roof, the unfused residual
//! add.

use super::reduce::fold;
use crate::simd::F32x4;

/// LayerNorm forward, for the RMSNorm-vs-LayerNorm comparison: per row a mean pass, a
/// variance pass, then `y = (x − mean) · rstd · g + b`. `g` and `b` may be null.
///
/// # Safety
/// Every non-null pointer must be valid for its shape.
pub unsafe fn layer_norm_forward<V: F32x4>(
    x: *const f32,
    g: *const f32,
    bias: *const f32,
    y: *mut f32,
    rows: usize,
    dim: usize,
    eps: f32,
) {
    let n = dim;
    for r in 0..rows {
        let (x, y) = (x.add(r * n), y.add(r * n));
        // pass 1: mean
        let one = |i: usize| [V::load(x.add(i))];
        let [s] = fold::<V, 1>(n, |i| [one(i), one(i + 4)], one, |i| [*x.add(i)]);
        let mean = s / n as f32;
        // pass 2: variance around the mean (two-pass, as LayerNorm implementations do)
        let m = V::splat(mean);
        let sq = |i: usize| {
            let v = V::load(x.add(i)).sub(m);
            [v.mul(v)]
        };
        let [s] = fold::<V, 1>(
            n,
            |i| [sq(i), sq(i + 4)],
            sq,
            |i| {
                let v = *x.add(i) - mean;
                [v * v]
            },
        );
        let rstd = 1.0 / (s / n as f32 + eps).sqrt();
        // pass 3: normalize, scale, shift
        let rv = V::splat(rstd);
        let mut i = 0;
        while i + 4 <= n {
            let mut v = V::load(x.add(i)).sub(m).mul(rv);
            if !g.is_null() {
                v = v.mul(V::load(g.add(i)));
            }
            if !bias.is_null() {
                v = v.add(V::load(bias.add(i)));
            }
            v.store(y.add(i));
            i += 4;
        }
        while i < n {
            let mut v = (*x.add(i) - mean) * rstd;
            if !g.is_null() {
                v *= *g.add(i);
            }
            if !bias.is_null() {
                v += *bias.add(i);
            }
            *y.add(i) = v;
            i += 1;
        }
    }
}

/// Copies `n` floats with vector loads and stores: the memory-bandwidth roof a wasm kernel
/// that reads `n` and writes `n` floats can reach (wasm has no non-temporal stores).
///
/// # Safety
/// `src` readable and `dst` writable for `n` floats; they must not overlap.
pub unsafe fn copy<V: F32x4>(src: *const f32, dst: *mut f32, n: usize) {
    let mut i = 0;
    while i + 16 <= n {
        let (v0, v1) = (V::load(src.add(i)), V::load(src.add(i + 4)));
        let (v2, v3) = (V::load(src.add(i + 8)), V::load(src.add(i + 12)));
        v0.store(dst.add(i));
        v1.store(dst.add(i + 4));
        v2.store(dst.add(i + 8));
        v3.store(dst.add(i + 12));
        i += 16;
    }
    while i < n {
        *dst.add(i) = *src.add(i);
        i += 1;
    }
}

/// `out = a + b` over `n` floats (lane-wise; `out` may equal `a` or `b`): the unfused residual
/// add the benchmark compares the fused forward against.
///
/// # Safety
/// `a`, `b` readable and `out` writable for `n` floats.
pub unsafe fn add<V: F32x4>(a: *const f32, b: *const f32, out: *mut f32, n: usize) {
    let mut i = 0;
    while i + 4 <= n {
        V::load(a.add(i)).add(V::load(b.add(i))).store(out.add(i));
        i += 4;
    }
    while i < n {
        *out.add(i) = *a.add(i) + *b.add(i);
        i += 1;
    }
}
