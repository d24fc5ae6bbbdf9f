;; Hand-written roofs for the benchmark: what wasm SIMD128 can do with the memory traffic of
;; each kernel, written as directly as WebAssembly allows (no bounds checks, no dispatch, no
;; call overhead beyond the export). They follow the package's summation order (fold in
;; crate/src/kernel/reduce.rs: four accumulators over steps of 16, a step of 4 into the first,
;; (a0 + a1) + (a2 + a3), lanes (l0 + l1) + (l2 + l3), the scalar tail, blocks of 1024 added in
;; f64), so on ordinary data they give the package's bits (bench/roofs.ts checks that), and a
;; kernel at this speed is possible with the same results.
;;
;; Exports (addresses are byte offsets into the exported memory; rows of `dim` elements):
;;   copy(src, dst, bytes)                  v128 copy, 64 bytes per iteration (bytes % 16 == 0)
;;   fwd_f32(x, w, y, rows, dim, eps)       y = x · rstd · w, two passes per row
;;   bwd_f32(dy, x, w, dx, dw, work, rows, dim, eps)
;;                                          the backward's two passes per row (rstd recomputed),
;;                                          dw summed per block of 32 rows in f32, the blocks in
;;                                          f64: `work` holds dim f64 then dim f32 (12·dim bytes)
;;   fwd_bf16(x, w, y, rows, dim, eps)      fwd_f32 on bfloat16 rows (w float32), rounded to
;;                                          nearest even (no NaN case)
;;   fwd_f16(x, w, y, rows, dim, eps)       fwd_f32 on float16 rows (w float32, dim a multiple
;;                                          of 4), each half widened twice by the short formula
;;                                          of normal numbers and zeros (no Inf, NaN or
;;                                          subnormal case), rounded to nearest even (no NaN case)
(module
  (memory (export "memory") 1 65536)

  (func (export "copy") (param $s i32) (param $d i32) (param $n i32)
    (local $e i32)
    (local.set $e (i32.add (local.get $s) (i32.and (local.get $n) (i32.const -64))))
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $s) (local.get $e)))
        (v128.store offset=0 (local.get $d) (v128.load offset=0 (local.get $s)))
        (v128.store offset=16 (local.get $d) (v128.load offset=16 (local.get $s)))
        (v128.store offset=32 (local.get $d) (v128.load offset=32 (local.get $s)))
        (v128.store offset=48 (local.get $d) (v128.load offset=48 (local.get $s)))
        (local.set $s (i32.add (local.get $s) (i32.const 64)))
        (local.set $d (i32.add (local.get $d) (i32.const 64)))
        (br $l)))
    (local.set $e (i32.add (local.get $e) (i32.and (local.get $n) (i32.const 48))))
    (block $done2
      (loop $l2
        (br_if $done2 (i32.ge_u (local.get $s) (local.get $e)))
        (v128.store (local.get $d) (v128.load (local.get $s)))
        (local.set $s (i32.add (local.get $s) (i32.const 16)))
        (local.set $d (i32.add (local.get $d) (i32.const 16)))
        (br $l2))))

  ;; (l0 + l1) + (l2 + l3) of (a0 + a1) + (a2 + a3)
  (func $hsum4 (param $a0 v128) (param $a1 v128) (param $a2 v128) (param $a3 v128) (result f32)
    (local $v v128)
    (local.set $v (f32x4.add (f32x4.add (local.get $a0) (local.get $a1)) (f32x4.add (local.get $a2) (local.get $a3))))
    (f32.add
      (f32.add (f32x4.extract_lane 0 (local.get $v)) (f32x4.extract_lane 1 (local.get $v)))
      (f32.add (f32x4.extract_lane 2 (local.get $v)) (f32x4.extract_lane 3 (local.get $v)))))

  ;; Σ x² over `n` f32 at `p` (n ≤ 1024): the fold.
  (func $ss_f32 (param $p i32) (param $n i32) (result f32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $v v128)
    (local $e i32) (local $s f32)
    (local.set $e (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -16)) (i32.const 2))))
    (block $b16
      (loop $l16
        (br_if $b16 (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $v (v128.load offset=0 (local.get $p)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (v128.load offset=16 (local.get $p)))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (v128.load offset=32 (local.get $p)))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (v128.load offset=48 (local.get $p)))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $l16)))
    (local.set $e (i32.add (local.get $e) (i32.shl (i32.and (local.get $n) (i32.const 12)) (i32.const 2))))
    (block $b4
      (loop $l4
        (br_if $b4 (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $v (v128.load (local.get $p)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (br $l4)))
    (local.set $s (call $hsum4 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3)))
    (local.set $e (i32.add (local.get $e) (i32.shl (i32.and (local.get $n) (i32.const 3)) (i32.const 2))))
    (block $b1
      (loop $l1
        (br_if $b1 (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $s (f32.add (local.get $s) (f32.mul (f32.load (local.get $p)) (f32.load (local.get $p)))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $l1)))
    (local.get $s))

  ;; rstd of the row of `dim` f32 at `p`: blocks of 1024 folded, added in f64.
  (func $rstd_f32 (param $p i32) (param $dim i32) (param $eps f32) (result f32)
    (local $acc f64) (local $b i32) (local $len i32)
    (block $done
      (loop $blocks
        (br_if $done (i32.ge_u (local.get $b) (local.get $dim)))
        (local.set $len (select (i32.const 1024) (i32.sub (local.get $dim) (local.get $b))
          (i32.lt_u (i32.const 1024) (i32.sub (local.get $dim) (local.get $b)))))
        (local.set $acc (f64.add (local.get $acc)
          (f64.promote_f32 (call $ss_f32 (i32.add (local.get $p) (i32.shl (local.get $b) (i32.const 2))) (local.get $len)))))
        (local.set $b (i32.add (local.get $b) (local.get $len)))
        (br $blocks)))
    (f32.div (f32.const 1)
      (f32.sqrt (f32.add (f32.div (f32.demote_f64 (local.get $acc)) (f32.convert_i32_u (local.get $dim))) (local.get $eps)))))

  (func (export "fwd_f32") (param $x i32) (param $w i32) (param $y i32) (param $rows i32) (param $dim i32) (param $eps f32)
    (local $row i32) (local $r f32) (local $rv v128) (local $i i32) (local $e16 i32) (local $e4 i32) (local $bytes i32)
    (local.set $bytes (i32.shl (local.get $dim) (i32.const 2)))
    (local.set $e16 (i32.shl (i32.and (local.get $dim) (i32.const -16)) (i32.const 2)))
    (local.set $e4 (i32.shl (i32.and (local.get $dim) (i32.const -4)) (i32.const 2)))
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_u (local.get $row) (local.get $rows)))
        (local.set $r (call $rstd_f32 (local.get $x) (local.get $dim) (local.get $eps)))
        (local.set $rv (f32x4.splat (local.get $r)))
        (local.set $i (i32.const 0))
        (block $b16
          (loop $l16
            (br_if $b16 (i32.ge_u (local.get $i) (local.get $e16)))
            (v128.store offset=0 (i32.add (local.get $y) (local.get $i))
              (f32x4.mul (f32x4.mul (v128.load offset=0 (i32.add (local.get $x) (local.get $i))) (local.get $rv)) (v128.load offset=0 (i32.add (local.get $w) (local.get $i)))))
            (v128.store offset=16 (i32.add (local.get $y) (local.get $i))
              (f32x4.mul (f32x4.mul (v128.load offset=16 (i32.add (local.get $x) (local.get $i))) (local.get $rv)) (v128.load offset=16 (i32.add (local.get $w) (local.get $i)))))
            (v128.store offset=32 (i32.add (local.get $y) (local.get $i))
              (f32x4.mul (f32x4.mul (v128.load offset=32 (i32.add (local.get $x) (local.get $i))) (local.get $rv)) (v128.load offset=32 (i32.add (local.get $w) (local.get $i)))))
            (v128.store offset=48 (i32.add (local.get $y) (local.get $i))
              (f32x4.mul (f32x4.mul (v128.load offset=48 (i32.add (local.get $x) (local.get $i))) (local.get $rv)) (v128.load offset=48 (i32.add (local.get $w) (local.get $i)))))
            (local.set $i (i32.add (local.get $i) (i32.const 64)))
            (br $l16)))
        (block $b4
          (loop $l4
            (br_if $b4 (i32.ge_u (local.get $i) (local.get $e4)))
            (v128.store (i32.add (local.get $y) (local.get $i))
              (f32x4.mul (f32x4.mul (v128.load (i32.add (local.get $x) (local.get $i))) (local.get $rv)) (v128.load (i32.add (local.get $w) (local.get $i)))))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $l4)))
        (block $b1
          (loop $l1
            (br_if $b1 (i32.ge_u (local.get $i) (local.get $bytes)))
            (f32.store (i32.add (local.get $y) (local.get $i))
              (f32.mul (f32.mul (f32.load (i32.add (local.get $x) (local.get $i))) (local.get $r)) (f32.load (i32.add (local.get $w) (local.get $i)))))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (br $l1)))
        (local.set $x (i32.add (local.get $x) (local.get $bytes)))
        (local.set $y (i32.add (local.get $y) (local.get $bytes)))
        (local.set $row (i32.add (local.get $row) (i32.const 1)))
        (br $rows))))

  ;; Σ gy·x and Σ x² (gy = dy·w) over `n` f32 (n ≤ 1024) at x, dy, w: the fold of two sums.
  ;; Returns Σ gy·x; Σ x² goes to the global $ss.
  (global $ss (mut f32) (f32.const 0))
  (func $dot_f32 (param $x i32) (param $dy i32) (param $w i32) (param $n i32) (result f32)
    (local $c0 v128) (local $c1 v128) (local $c2 v128) (local $c3 v128)
    (local $s0 v128) (local $s1 v128) (local $s2 v128) (local $s3 v128)
    (local $v v128) (local $g v128) (local $i i32) (local $e i32) (local $c f32) (local $s f32) (local $xv f32)
    (local.set $e (i32.shl (i32.and (local.get $n) (i32.const -16)) (i32.const 2)))
    (block $b16
      (loop $l16
        (br_if $b16 (i32.ge_u (local.get $i) (local.get $e)))
        (local.set $v (v128.load offset=0 (i32.add (local.get $x) (local.get $i))))
        (local.set $g (f32x4.mul (v128.load offset=0 (i32.add (local.get $dy) (local.get $i))) (v128.load offset=0 (i32.add (local.get $w) (local.get $i)))))
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $g) (local.get $v))))
        (local.set $s0 (f32x4.add (local.get $s0) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (v128.load offset=16 (i32.add (local.get $x) (local.get $i))))
        (local.set $g (f32x4.mul (v128.load offset=16 (i32.add (local.get $dy) (local.get $i))) (v128.load offset=16 (i32.add (local.get $w) (local.get $i)))))
        (local.set $c1 (f32x4.add (local.get $c1) (f32x4.mul (local.get $g) (local.get $v))))
        (local.set $s1 (f32x4.add (local.get $s1) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (v128.load offset=32 (i32.add (local.get $x) (local.get $i))))
        (local.set $g (f32x4.mul (v128.load offset=32 (i32.add (local.get $dy) (local.get $i))) (v128.load offset=32 (i32.add (local.get $w) (local.get $i)))))
        (local.set $c2 (f32x4.add (local.get $c2) (f32x4.mul (local.get $g) (local.get $v))))
        (local.set $s2 (f32x4.add (local.get $s2) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (v128.load offset=48 (i32.add (local.get $x) (local.get $i))))
        (local.set $g (f32x4.mul (v128.load offset=48 (i32.add (local.get $dy) (local.get $i))) (v128.load offset=48 (i32.add (local.get $w) (local.get $i)))))
        (local.set $c3 (f32x4.add (local.get $c3) (f32x4.mul (local.get $g) (local.get $v))))
        (local.set $s3 (f32x4.add (local.get $s3) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $i (i32.add (local.get $i) (i32.const 64)))
        (br $l16)))
    (local.set $e (i32.shl (i32.and (local.get $n) (i32.const -4)) (i32.const 2)))
    (block $b4
      (loop $l4
        (br_if $b4 (i32.ge_u (local.get $i) (local.get $e)))
        (local.set $v (v128.load (i32.add (local.get $x) (local.get $i))))
        (local.set $g (f32x4.mul (v128.load (i32.add (local.get $dy) (local.get $i))) (v128.load (i32.add (local.get $w) (local.get $i)))))
        (local.set $c0 (f32x4.add (local.get $c0) (f32x4.mul (local.get $g) (local.get $v))))
        (local.set $s0 (f32x4.add (local.get $s0) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $i (i32.add (local.get $i) (i32.const 16)))
        (br $l4)))
    (local.set $c (call $hsum4 (local.get $c0) (local.get $c1) (local.get $c2) (local.get $c3)))
    (local.set $s (call $hsum4 (local.get $s0) (local.get $s1) (local.get $s2) (local.get $s3)))
    (local.set $e (i32.shl (local.get $n) (i32.const 2)))
    (block $b1
      (loop $l1
        (br_if $b1 (i32.ge_u (local.get $i) (local.get $e)))
        (local.set $xv (f32.load (i32.add (local.get $x) (local.get $i))))
        (local.set $c (f32.add (local.get $c)
          (f32.mul (f32.mul (f32.load (i32.add (local.get $dy) (local.get $i))) (f32.load (i32.add (local.get $w) (local.get $i)))) (local.get $xv))))
        (local.set $s (f32.add (local.get $s) (f32.mul (local.get $xv) (local.get $xv))))
        (local.set $i (i32.add (local.get $i) (i32.const 4)))
        (br $l1)))
    (global.set $ss (local.get $s))
    (local.get $c))

  (func (export "bwd_f32") (param $dy i32) (param $x i32) (param $w i32) (param $dx i32) (param $dw i32) (param $work i32)
    (param $rows i32) (param $dim i32) (param $eps f32)
    (local $row i32) (local $b i32) (local $len i32) (local $cacc f64) (local $sacc f64) (local $o i32)
    (local $c f32) (local $a f32) (local $bb f32) (local $av v128) (local $bv v128)
    (local $i i32) (local $bytes i32) (local $e4 i32) (local $xv v128) (local $d v128) (local $xs f32) (local $ds f32)
    (local $acc i32)
    (local.set $bytes (i32.shl (local.get $dim) (i32.const 2)))
    (local.set $e4 (i32.shl (i32.and (local.get $dim) (i32.const -4)) (i32.const 2)))
    ;; the f64 sum of finished blocks, then the open block
    (local.set $acc (local.get $work))
    (local.set $work (i32.add (local.get $work) (i32.shl (local.get $dim) (i32.const 3))))
    (memory.fill (local.get $acc) (i32.const 0) (i32.shl (local.get $dim) (i32.const 3)))
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_u (local.get $row) (local.get $rows)))
        (if (i32.eqz (i32.and (local.get $row) (i32.const 31)))
          (then (memory.fill (local.get $work) (i32.const 0) (local.get $bytes))))
        ;; pass 1: Σ gy·x and Σ x², blocks of 1024 added in f64
        (local.set $cacc (f64.const 0))
        (local.set $sacc (f64.const 0))
        (local.set $b (i32.const 0))
        (block $bd
          (loop $bl
            (br_if $bd (i32.ge_u (local.get $b) (local.get $dim)))
            (local.set $len (select (i32.const 1024) (i32.sub (local.get $dim) (local.get $b))
              (i32.lt_u (i32.const 1024) (i32.sub (local.get $dim) (local.get $b)))))
            (local.set $o (i32.shl (local.get $b) (i32.const 2)))
            (local.set $cacc (f64.add (local.get $cacc) (f64.promote_f32
              (call $dot_f32 (i32.add (local.get $x) (local.get $o)) (i32.add (local.get $dy) (local.get $o)) (i32.add (local.get $w) (local.get $o)) (local.get $len)))))
            (local.set $sacc (f64.add (local.get $sacc) (f64.promote_f32 (global.get $ss))))
            (local.set $b (i32.add (local.get $b) (local.get $len)))
            (br $bl)))
        (local.set $c (f32.demote_f64 (local.get $cacc)))
        (local.set $a (f32.div (f32.const 1)
          (f32.sqrt (f32.add (f32.div (f32.demote_f64 (local.get $sacc)) (f32.convert_i32_u (local.get $dim))) (local.get $eps)))))
        (local.set $bb (f32.mul (f32.mul (f32.div (local.get $c) (f32.convert_i32_u (local.get $dim))) (local.get $a))
          (f32.mul (local.get $a) (local.get $a))))
        (local.set $av (f32x4.splat (local.get $a)))
        (local.set $bv (f32x4.splat (local.get $bb)))
        ;; pass 2: dx = a·gy − b·x; work += dy·(x·a)
        (local.set $i (i32.const 0))
        (block $b4
          (loop $l4
            (br_if $b4 (i32.ge_u (local.get $i) (local.get $e4)))
            (local.set $xv (v128.load (i32.add (local.get $x) (local.get $i))))
            (local.set $d (v128.load (i32.add (local.get $dy) (local.get $i))))
            (v128.store (i32.add (local.get $work) (local.get $i))
              (f32x4.add (v128.load (i32.add (local.get $work) (local.get $i))) (f32x4.mul (local.get $d) (f32x4.mul (local.get $xv) (local.get $av)))))
            (v128.store (i32.add (local.get $dx) (local.get $i))
              (f32x4.sub (f32x4.mul (local.get $av) (f32x4.mul (local.get $d) (v128.load (i32.add (local.get $w) (local.get $i)))))
                (f32x4.mul (local.get $bv) (local.get $xv))))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $l4)))
        (block $b1
          (loop $l1
            (br_if $b1 (i32.ge_u (local.get $i) (local.get $bytes)))
            (local.set $xs (f32.load (i32.add (local.get $x) (local.get $i))))
            (local.set $ds (f32.load (i32.add (local.get $dy) (local.get $i))))
            (f32.store (i32.add (local.get $work) (local.get $i))
              (f32.add (f32.load (i32.add (local.get $work) (local.get $i))) (f32.mul (local.get $ds) (f32.mul (local.get $xs) (local.get $a)))))
            (f32.store (i32.add (local.get $dx) (local.get $i))
              (f32.sub (f32.mul (local.get $a) (f32.mul (local.get $ds) (f32.load (i32.add (local.get $w) (local.get $i)))))
                (f32.mul (local.get $bb) (local.get $xs))))
            (local.set $i (i32.add (local.get $i) (i32.const 4)))
            (br $l1)))
        (local.set $row (i32.add (local.get $row) (i32.const 1)))
        ;; a finished block (or the last row): its partial into dw
        (if (i32.or (i32.eqz (i32.and (local.get $row) (i32.const 31))) (i32.eq (local.get $row) (local.get $rows)))
          (then (call $add_f64 (local.get $acc) (local.get $work) (local.get $dim))))
        (local.set $x (i32.add (local.get $x) (local.get $bytes)))
        (local.set $dy (i32.add (local.get $dy) (local.get $bytes)))
        (local.set $dx (i32.add (local.get $dx) (local.get $bytes)))
        (br $rows)))
    (call $round_into (local.get $dw) (local.get $acc) (local.get $dim)))

  ;; acc[i] += f64(src[i]) over n columns
  (func $add_f64 (param $acc i32) (param $src i32) (param $n i32)
    (local $i i32)
    (block $b
      (loop $l
        (br_if $b (i32.ge_u (local.get $i) (local.get $n)))
        (f64.store (local.get $acc) (f64.add (f64.load (local.get $acc)) (f64.promote_f32 (f32.load (local.get $src)))))
        (local.set $acc (i32.add (local.get $acc) (i32.const 8)))
        (local.set $src (i32.add (local.get $src) (i32.const 4)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l))))

  ;; dst[i] = f32(acc[i]) over n columns
  (func $round_into (param $dst i32) (param $acc i32) (param $n i32)
    (local $i i32)
    (block $b
      (loop $l
        (br_if $b (i32.ge_u (local.get $i) (local.get $n)))
        (f32.store (local.get $dst) (f32.demote_f64 (f64.load (local.get $acc))))
        (local.set $acc (i32.add (local.get $acc) (i32.const 8)))
        (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l))))

  ;; Σ x² over n bfloat16 at p (n ≤ 1024), in the fold's order.
  (func $ss_bf16 (param $p i32) (param $n i32) (result f32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $v v128) (local $u v128)
    (local $e i32) (local $s f32) (local $f f32) (local $z v128)
    (local.set $e (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -16)) (i32.const 1))))
    (block $b16
      (loop $l16
        (br_if $b16 (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $u (v128.load offset=0 (local.get $p)))
        (local.set $v (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $z) (local.get $u)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $z) (local.get $u)))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $u (v128.load offset=16 (local.get $p)))
        (local.set $v (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $z) (local.get $u)))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $z) (local.get $u)))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))
        (br $l16)))
    (local.set $e (i32.add (local.get $e) (i32.shl (i32.and (local.get $n) (i32.const 12)) (i32.const 1))))
    (block $b4
      (loop $l4
        (br_if $b4 (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $v (i32x4.shl (i32x4.extend_low_i16x8_u (v128.load64_zero (local.get $p))) (i32.const 16)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (br $l4)))
    (local.set $s (call $hsum4 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3)))
    (local.set $e (i32.add (local.get $e) (i32.shl (i32.and (local.get $n) (i32.const 3)) (i32.const 1))))
    (block $b1
      (loop $l1
        (br_if $b1 (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $f (f32.reinterpret_i32 (i32.shl (i32.load16_u (local.get $p)) (i32.const 16))))
        (local.set $s (f32.add (local.get $s) (f32.mul (local.get $f) (local.get $f))))
        (local.set $p (i32.add (local.get $p) (i32.const 2)))
        (br $l1)))
    (local.get $s))

  (func (export "fwd_bf16") (param $x i32) (param $w i32) (param $y i32) (param $rows i32) (param $dim i32) (param $eps f32)
    (local $row i32) (local $r f32) (local $rv v128) (local $i i32) (local $e8 i32) (local $bytes i32)
    (local $acc f64) (local $b i32) (local $len i32) (local $u v128) (local $f f32) (local $lo v128) (local $hi v128)
    (local $z v128) (local $k7fff v128) (local $k1 v128)
    (local.set $k7fff (i32x4.splat (i32.const 0x7fff)))
    (local.set $k1 (i32x4.splat (i32.const 1)))
    (local.set $bytes (i32.shl (local.get $dim) (i32.const 1)))
    (local.set $e8 (i32.shl (i32.and (local.get $dim) (i32.const -8)) (i32.const 1)))
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_u (local.get $row) (local.get $rows)))
        (local.set $acc (f64.const 0))
        (local.set $b (i32.const 0))
        (block $bd
          (loop $bl
            (br_if $bd (i32.ge_u (local.get $b) (local.get $dim)))
            (local.set $len (select (i32.const 1024) (i32.sub (local.get $dim) (local.get $b))
              (i32.lt_u (i32.const 1024) (i32.sub (local.get $dim) (local.get $b)))))
            (local.set $acc (f64.add (local.get $acc)
              (f64.promote_f32 (call $ss_bf16 (i32.add (local.get $x) (i32.shl (local.get $b) (i32.const 1))) (local.get $len)))))
            (local.set $b (i32.add (local.get $b) (local.get $len)))
            (br $bl)))
        (local.set $r (f32.div (f32.const 1)
          (f32.sqrt (f32.add (f32.div (f32.demote_f64 (local.get $acc)) (f32.convert_i32_u (local.get $dim))) (local.get $eps)))))
        (local.set $rv (f32x4.splat (local.get $r)))
        (local.set $i (i32.const 0))
        (block $b8
          (loop $l8
            (br_if $b8 (i32.ge_u (local.get $i) (local.get $e8)))
            (local.set $u (v128.load (i32.add (local.get $x) (local.get $i))))
            (local.set $lo (f32x4.mul (f32x4.mul (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $z) (local.get $u)) (local.get $rv))
              (v128.load offset=0 (i32.add (local.get $w) (i32.shl (local.get $i) (i32.const 1))))))
            (local.set $hi (f32x4.mul (f32x4.mul (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $z) (local.get $u)) (local.get $rv))
              (v128.load offset=16 (i32.add (local.get $w) (i32.shl (local.get $i) (i32.const 1))))))
            (v128.store (i32.add (local.get $y) (local.get $i))
              (i8x16.shuffle 2 3 6 7 10 11 14 15 18 19 22 23 26 27 30 31
                (i32x4.add (i32x4.add (local.get $lo) (local.get $k7fff))
                  (v128.and (i32x4.shr_u (local.get $lo) (i32.const 16)) (local.get $k1)))
                (i32x4.add (i32x4.add (local.get $hi) (local.get $k7fff))
                  (v128.and (i32x4.shr_u (local.get $hi) (i32.const 16)) (local.get $k1)))))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $l8)))
        (block $b1
          (loop $l1
            (br_if $b1 (i32.ge_u (local.get $i) (local.get $bytes)))
            (local.set $f (f32.mul (f32.mul (f32.reinterpret_i32 (i32.shl (i32.load16_u (i32.add (local.get $x) (local.get $i))) (i32.const 16))) (local.get $r))
              (f32.load (i32.add (local.get $w) (i32.shl (local.get $i) (i32.const 1))))))
            (i32.store16 (i32.add (local.get $y) (local.get $i))
              (i32.shr_u (i32.add (i32.add (i32.reinterpret_f32 (local.get $f)) (i32.const 0x7fff))
                (i32.and (i32.shr_u (i32.reinterpret_f32 (local.get $f)) (i32.const 16)) (i32.const 1))) (i32.const 16)))
            (local.set $i (i32.add (local.get $i) (i32.const 2)))
            (br $l1)))
        (local.set $x (i32.add (local.get $x) (local.get $bytes)))
        (local.set $y (i32.add (local.get $y) (local.get $bytes)))
        (local.set $row (i32.add (local.get $row) (i32.const 1)))
        (br $rows))))

  ;; Σ x² over n float16 at p (n ≤ 1024, a multiple of 4), in the fold's order. A half widens
  ;; as the short formula of normal numbers and zeros has it: in the high half of a u32 lane,
  ;; three bits down (the sign's copies cleared), times 2^112.
  (func $ss_f16 (param $p i32) (param $n i32) (result f32)
    (local $a0 v128) (local $a1 v128) (local $a2 v128) (local $a3 v128) (local $v v128) (local $u v128)
    (local $e i32) (local $z v128) (local $keep v128) (local $k112 v128)
    (local.set $keep (i32x4.splat (i32.const 0x8fffffff)))
    (local.set $k112 (f32x4.splat (f32.const 0x1p112)))
    (local.set $e (i32.add (local.get $p) (i32.shl (i32.and (local.get $n) (i32.const -16)) (i32.const 1))))
    (block $b16
      (loop $l16
        (br_if $b16 (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $u (v128.load offset=0 (local.get $p)))
        (local.set $v (f32x4.mul (v128.and (i32x4.shr_s (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $z) (local.get $u)) (i32.const 3)) (local.get $keep)) (local.get $k112)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (f32x4.mul (v128.and (i32x4.shr_s (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $z) (local.get $u)) (i32.const 3)) (local.get $keep)) (local.get $k112)))
        (local.set $a1 (f32x4.add (local.get $a1) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $u (v128.load offset=16 (local.get $p)))
        (local.set $v (f32x4.mul (v128.and (i32x4.shr_s (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $z) (local.get $u)) (i32.const 3)) (local.get $keep)) (local.get $k112)))
        (local.set $a2 (f32x4.add (local.get $a2) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $v (f32x4.mul (v128.and (i32x4.shr_s (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $z) (local.get $u)) (i32.const 3)) (local.get $keep)) (local.get $k112)))
        (local.set $a3 (f32x4.add (local.get $a3) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $p (i32.add (local.get $p) (i32.const 32)))
        (br $l16)))
    (local.set $e (i32.add (local.get $e) (i32.shl (i32.and (local.get $n) (i32.const 12)) (i32.const 1))))
    (block $b4
      (loop $l4
        (br_if $b4 (i32.ge_u (local.get $p) (local.get $e)))
        (local.set $v (f32x4.mul (v128.and (i32x4.shr_s (i32x4.shl (i32x4.extend_low_i16x8_u (v128.load64_zero (local.get $p))) (i32.const 16)) (i32.const 3)) (local.get $keep)) (local.get $k112)))
        (local.set $a0 (f32x4.add (local.get $a0) (f32x4.mul (local.get $v) (local.get $v))))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (br $l4)))
    (call $hsum4 (local.get $a0) (local.get $a1) (local.get $a2) (local.get $a3)))

  ;; fwd_f32 on float16 rows: each half widened twice (above), the results rounded to float16,
  ;; nearest even, as the package's vector form does it for values that are not NaN.
  (func (export "fwd_f16") (param $x i32) (param $w i32) (param $y i32) (param $rows i32) (param $dim i32) (param $eps f32)
    (local $row i32) (local $r f32) (local $rv v128) (local $i i32) (local $e8 i32) (local $bytes i32)
    (local $acc f64) (local $b i32) (local $len i32) (local $u v128) (local $lo v128) (local $hi v128) (local $z v128)
    (local $al v128) (local $cl v128) (local $sl v128) (local $ah v128) (local $ch v128) (local $sh v128)
    (local $kabs v128) (local $kexp v128) (local $kulp v128) (local $khalf v128) (local $krebias v128) (local $kinf v128) (local $knormal v128)
    (local $keep v128) (local $k112 v128)
    (local.set $keep (i32x4.splat (i32.const 0x8fffffff)))
    (local.set $k112 (f32x4.splat (f32.const 0x1p112)))
    (local.set $kabs (i32x4.splat (i32.const 0x7fffffff)))
    (local.set $kexp (i32x4.splat (i32.const 0x7f800000)))
    (local.set $kulp (i32x4.splat (i32.const 0x06800000)))
    (local.set $khalf (i32x4.splat (i32.const 0x3f000000)))
    (local.set $krebias (i32x4.splat (i32.const 0x1c000)))
    (local.set $kinf (i32x4.splat (i32.const 0x7c00)))
    (local.set $knormal (i32x4.splat (i32.const 0x400)))
    (local.set $bytes (i32.shl (local.get $dim) (i32.const 1)))
    (local.set $e8 (i32.shl (i32.and (local.get $dim) (i32.const -8)) (i32.const 1)))
    (block $rows_done
      (loop $rows
        (br_if $rows_done (i32.ge_u (local.get $row) (local.get $rows)))
        (local.set $acc (f64.const 0))
        (local.set $b (i32.const 0))
        (block $bd
          (loop $bl
            (br_if $bd (i32.ge_u (local.get $b) (local.get $dim)))
            (local.set $len (select (i32.const 1024) (i32.sub (local.get $dim) (local.get $b))
              (i32.lt_u (i32.const 1024) (i32.sub (local.get $dim) (local.get $b)))))
            (local.set $acc (f64.add (local.get $acc)
              (f64.promote_f32 (call $ss_f16 (i32.add (local.get $x) (i32.shl (local.get $b) (i32.const 1))) (local.get $len)))))
            (local.set $b (i32.add (local.get $b) (local.get $len)))
            (br $bl)))
        (local.set $r (f32.div (f32.const 1)
          (f32.sqrt (f32.add (f32.div (f32.demote_f64 (local.get $acc)) (f32.convert_i32_u (local.get $dim))) (local.get $eps)))))
        (local.set $rv (f32x4.splat (local.get $r)))
        (local.set $i (i32.const 0))
        (block $b8
          (loop $l8
            (br_if $b8 (i32.ge_u (local.get $i) (local.get $e8)))
            (local.set $u (v128.load (i32.add (local.get $x) (local.get $i))))
            (local.set $lo (f32x4.mul (f32x4.mul (f32x4.mul (v128.and (i32x4.shr_s (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $z) (local.get $u)) (i32.const 3)) (local.get $keep)) (local.get $k112)) (local.get $rv))
              (v128.load offset=0 (i32.add (local.get $w) (i32.shl (local.get $i) (i32.const 1))))))
            (local.set $hi (f32x4.mul (f32x4.mul (f32x4.mul (v128.and (i32x4.shr_s (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $z) (local.get $u)) (i32.const 3)) (local.get $keep)) (local.get $k112)) (local.get $rv))
              (v128.load offset=16 (i32.add (local.get $w) (i32.shl (local.get $i) (i32.const 1))))))
            (local.set $al (v128.and (local.get $lo) (local.get $kabs)))
            (local.set $cl (i32x4.max_s (i32x4.add (v128.and (local.get $al) (local.get $kexp)) (local.get $kulp)) (local.get $khalf)))
            (local.set $sl (f32x4.add (local.get $al) (local.get $cl)))
            (local.set $ah (v128.and (local.get $hi) (local.get $kabs)))
            (local.set $ch (i32x4.max_s (i32x4.add (v128.and (local.get $ah) (local.get $kexp)) (local.get $kulp)) (local.get $khalf)))
            (local.set $sh (f32x4.add (local.get $ah) (local.get $ch)))
            (v128.store (i32.add (local.get $y) (local.get $i))
              (i16x8.narrow_i32x4_u
                (v128.or
                (i32x4.max_s
                  (i32x4.min_s (i32x4.sub (i32x4.shr_u (f32x4.sub (local.get $sl) (local.get $cl)) (i32.const 13)) (local.get $krebias)) (local.get $kinf))
                  (i32x4.min_s (i32x4.sub (local.get $sl) (local.get $khalf)) (local.get $knormal)))
                (i32x4.shr_u (v128.xor (local.get $lo) (local.get $al)) (i32.const 16)))
                (v128.or
                (i32x4.max_s
                  (i32x4.min_s (i32x4.sub (i32x4.shr_u (f32x4.sub (local.get $sh) (local.get $ch)) (i32.const 13)) (local.get $krebias)) (local.get $kinf))
                  (i32x4.min_s (i32x4.sub (local.get $sh) (local.get $khalf)) (local.get $knormal)))
                (i32x4.shr_u (v128.xor (local.get $hi) (local.get $ah)) (i32.const 16)))))
            (local.set $i (i32.add (local.get $i) (i32.const 16)))
            (br $l8)))
        (if (i32.lt_u (local.get $i) (local.get $bytes))
          (then
            (local.set $lo (f32x4.mul (f32x4.mul (f32x4.mul (v128.and (i32x4.shr_s (i32x4.shl (i32x4.extend_low_i16x8_u (v128.load64_zero (i32.add (local.get $x) (local.get $i)))) (i32.const 16)) (i32.const 3)) (local.get $keep)) (local.get $k112)) (local.get $rv))
              (v128.load (i32.add (local.get $w) (i32.shl (local.get $i) (i32.const 1))))))
            (local.set $hi (local.get $lo))
            (local.set $al (v128.and (local.get $lo) (local.get $kabs)))
            (local.set $cl (i32x4.max_s (i32x4.add (v128.and (local.get $al) (local.get $kexp)) (local.get $kulp)) (local.get $khalf)))
            (local.set $sl (f32x4.add (local.get $al) (local.get $cl)))
            (local.set $ah (v128.and (local.get $hi) (local.get $kabs)))
            (local.set $ch (i32x4.max_s (i32x4.add (v128.and (local.get $ah) (local.get $kexp)) (local.get $kulp)) (local.get $khalf)))
            (local.set $sh (f32x4.add (local.get $ah) (local.get $ch)))
            (v128.store64_lane 0 (i32.add (local.get $y) (local.get $i))
              (i16x8.narrow_i32x4_u
                (v128.or
                (i32x4.max_s
                  (i32x4.min_s (i32x4.sub (i32x4.shr_u (f32x4.sub (local.get $sl) (local.get $cl)) (i32.const 13)) (local.get $krebias)) (local.get $kinf))
                  (i32x4.min_s (i32x4.sub (local.get $sl) (local.get $khalf)) (local.get $knormal)))
                (i32x4.shr_u (v128.xor (local.get $lo) (local.get $al)) (i32.const 16)))
                (v128.or
                (i32x4.max_s
                  (i32x4.min_s (i32x4.sub (i32x4.shr_u (f32x4.sub (local.get $sh) (local.get $ch)) (i32.const 13)) (local.get $krebias)) (local.get $kinf))
                  (i32x4.min_s (i32x4.sub (local.get $sh) (local.get $khalf)) (local.get $knormal)))
                (i32x4.shr_u (v128.xor (local.get $hi) (local.get $ah)) (i32.const 16)))))))
        (local.set $x (i32.add (local.get $x) (local.get $bytes)))
        (local.set $y (i32.add (local.get $y) (local.get $bytes)))
        (local.set $row (i32.add (local.get $row) (i32.const 1)))
        (br $rows))))
)
