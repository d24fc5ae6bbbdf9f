//! Host tests of the weight gradient's deterministic blocks: the pool's sharded backward and
//! spans give the bits of one call.

// Index loops mirror the kernels' and the formulas' indexing; iterator chains would obscure them.
#![allow(clippy::needless_range_loop)]

mod common;
use common::*;

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
    let mut work = work_buf(kernel::pool_work_floats(nblocks, dim));
    let w_ptr = work.as_mut_ptr() as *mut f32;
    let k = backward_args(dy, x, g, rstd, &mut dx, dim, 1e-6);
    // the shards in reverse order: the result must not depend on which finishes first
    for w in shards.windows(2).rev() {
        assert_eq!(w[0] % DG_BLOCK_ROWS, 0);
        // SAFETY: shapes as documented; work holds the sum and nblocks × dim partials.
        unsafe {
            kernel::backward_rows::<V, _>(&k, w[0], w[1], w_ptr).expect("the scratch of a row")
        };
    }
    let dg = g.map(|_| {
        // Blocks reduced in segments (later ones accumulating), as the pool does for a matrix
        // streamed through its window: the bits must equal one reduction over all blocks.
        let mut dg = vec![f32::NAN; dim];
        // Each segment's job has its own partials after the sum the segments share.
        let mut seg = work_buf(kernel::pool_work_floats(nblocks, dim));
        let seg_ptr = seg.as_mut_ptr() as *mut f32;
        for s in seg_blocks.windows(2) {
            // SAFETY: both workspaces hold the sum and nblocks × dim partials; dg holds dim.
            unsafe {
                let parts = kernel::pool_work_floats(0, dim);
                let n = (s[1] - s[0]) * dim;
                core::ptr::copy_nonoverlapping(
                    w_ptr.add(parts + s[0] * dim),
                    seg_ptr.add(parts),
                    n,
                );
                kernel::reduce_partials(seg_ptr, s[1] - s[0], &k.s, dg.as_mut_ptr(), s[0] > 0)
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
                    let mut work = work_buf(kernel::span_work_floats(dim));
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
                                work.as_mut_ptr() as *mut f32,
                            )
                            .expect("the scratch of a row")
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
