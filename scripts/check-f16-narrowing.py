"""Checks the float16 narrowing formula of crate/src/simd/wasm32.rs (`to_f16_bits_not_nan`)
against NumPy's float16 cast for every non-negative float32 from +0 to +Inf (NaNs take
another path; the sign is handled apart). The formula is written here with NumPy's float32
arithmetic (IEEE, round to nearest even), as the kernel does it lane by lane:

    c = max((a & 0x7f800000) + (13 << 23) as i32, bits(0.5))      # the ulp-setting addend
    s = a + c  (f32);  r = s - c  (f32)
    normal = min((bits(r) >> 13) - (112 << 10), 0x7c00)
    sub    = min(bits(s) - bits(0.5), 0x400)
    half   = max(normal, sub)

Run: python3 scripts/check-f16-narrowing.py (NumPy needed; about 5 minutes, 2 GB of memory).
Prints "bad 0" when every input agrees.
"""
import numpy as np, sys
def ref(a):  # numpy's own f32->f16 (RNE) on |v|
    return a.view(np.float32).astype(np.float16).view(np.uint16).astype(np.int64)
def fast(a):
    a = a.astype(np.uint32)
    e = (a & 0x7f800000).astype(np.int64) + (13 << 23)
    e = np.where(e >= 2**31, e - 2**32, e)  # i32 wrap
    c = np.maximum(e, 0x3f000000).astype(np.uint32)
    af = a.view(np.float32); cf = c.view(np.float32)
    with np.errstate(all='ignore'):
        s = (af + cf).astype(np.float32)
        r = (s - cf).astype(np.float32)
    t = (r.view(np.uint32).astype(np.int64) >> 13) - 0x1c000
    q = np.minimum(t, 0x7c00)
    p = s.view(np.uint32).astype(np.int64) - 0x3f000000
    return np.maximum(q, np.minimum(p, 0x400))
bad = 0
step = 1 << 24
for lo in range(0, 0x7f800001, step):
    a = np.arange(lo, min(lo + step, 0x7f800001), dtype=np.uint64).astype(np.uint32)
    d = fast(a) != ref(a)
    if d.any():
        i = np.nonzero(d)[0][:5]; print(hex(lo), [(hex(int(a[j])), hex(int(fast(a[j:j+1])[0])), hex(int(ref(a[j:j+1])[0]))) for j in i]); bad += int(d.sum())
print('bad', bad)
