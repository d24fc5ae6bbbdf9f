"""Writes test/fixtures/half/ref-fixture.json: what NumPy (float16) and ml_dtypes (bfloat16) say
the half-precision conversions give, so that the hand-written reference in shared/reference.js
is checked against implementations it shares no code with (test/half-reference.test.ts).

Regenerate (numpy and ml_dtypes are not otherwise needed by the project):
    python3 -m venv /work/refenv && /work/refenv/bin/pip install numpy ml_dtypes
    /work/refenv/bin/python scripts/make-half-ref-fixture.py

Contents:
- toF32Sha256: per type, SHA-256 of the 65536 float32 bit patterns (little-endian uint32) of the
  values of all half patterns 0..65535. A hash, not the table: the table is 256 KiB per type.
  NaN entries are replaced by sign | 0x7fc00000 first, because NaN payload and quieting differ
  between implementations (NumPy keeps a signalling NaN signalling) and are a documented choice
  of the reference, tested on their own.
- cases: float32 bit patterns picked to hit every rounding boundary of both types, with the
  half bits each library rounds them to. Raw little-endian arrays, base64.
"""
import base64
import hashlib
import json

import ml_dtypes
import numpy as np

OUT = "test/fixtures/half/ref-fixture.json"
BF16 = ml_dtypes.bfloat16
TYPES = {"float16": (np.float16, 5, 10), "bfloat16": (BF16, 8, 7)}
CLASSES = [
    "exact",  # a half value itself
    "midpoint",  # exactly between two adjacent halves: ties to even
    "midpoint-1ulp",  # one float32 ulp toward zero from a midpoint
    "midpoint+1ulp",  # one float32 ulp away from zero
    "special",  # ±0, ±Inf, NaNs, out-of-range magnitudes
    "random-bits",  # uniform over all float32 bit patterns
    "random-range",  # uniform exponent within a type's range (and a little past it)
]
rng = np.random.default_rng(20240611)


def f32_of_bits(bits):
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def bits_of_f32(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def to_f32_hash(dtype):
    halves = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(dtype)
    with np.errstate(invalid="ignore"):
        f = halves.astype(np.float32)
    bits = f.view(np.uint32).copy()
    nan = np.isnan(f)
    bits[nan] = (bits[nan] & 0x80000000) | 0x7FC00000
    return hashlib.sha256(bits.astype("<u4").tobytes()).hexdigest()


def boundary_patterns(exp_bits, frac_bits):
    """Positive finite half patterns h whose gap to h+1 is worth probing: zero and the first
    subnormals, the subnormal/normal boundary, both ends of every binade, the largest finite
    (whose upper neighbour is the Inf pattern: the overflow threshold), and a random sample."""
    exp_all = (1 << exp_bits) - 1
    inf = exp_all << frac_bits
    picks = {0, 1, 2, 3, (1 << frac_bits) - 2, (1 << frac_bits) - 1}
    for e in range(0, exp_all):
        base = e << frac_bits
        picks.update({base, base + 1, base + (1 << frac_bits) - 2, base + (1 << frac_bits) - 1})
    picks.update(int(x) for x in rng.integers(0, inf, 200))
    return sorted(p for p in picks if 0 <= p < inf)


def half_value(h, dtype, exp_bits, frac_bits):
    """The value of positive pattern h as a float64; the Inf pattern stands for 2^(emax+1), the
    value the largest finite would round up to with an unbounded exponent."""
    if h == ((1 << exp_bits) - 1) << frac_bits:
        return 2.0 ** (1 << (exp_bits - 1))
    return float(np.array([h], dtype=np.uint16).view(dtype)[0])


cases = []  # (float32 bits, class index)


def add(bits, cls):
    for b in np.atleast_1d(np.asarray(bits, dtype=np.uint32)):
        b = int(b)
        cases.append((b, cls))
        cases.append((b ^ 0x80000000, cls))  # the same magnitude negative


for name, (dtype, exp_bits, frac_bits) in TYPES.items():
    for h in boundary_patterns(exp_bits, frac_bits):
        lo = half_value(h, dtype, exp_bits, frac_bits)
        hi = half_value(h + 1, dtype, exp_bits, frac_bits)
        mid = (lo + hi) / 2
        mid32 = np.float32(mid)
        assert float(mid32) == mid, (name, h)  # midpoints need 1 bit more than a half: exact
        mb = int(bits_of_f32([mid32])[0])
        add([int(bits_of_f32([np.float32(lo)])[0])], CLASSES.index("exact"))
        add([mb], CLASSES.index("midpoint"))
        add([mb - 1], CLASSES.index("midpoint-1ulp"))
        add([mb + 1], CLASSES.index("midpoint+1ulp"))

specials = [
    0x00000000, 0x7F800000,  # 0, Inf
    0x7FC00000, 0x7F800001, 0x7FBFFFFF, 0x7FC00001, 0x7FFFFFFF, 0x7FA12345, 0x7F802000,
    0x7F801FFF, 0x7F810000, 0x7F8FFFFF,  # NaNs: quiet, signalling, payloads below and at a half's width
    0x00000001, 0x00400000, 0x007FFFFF, 0x00800000,  # float32 subnormals and its smallest normal
    0x7F7FFFFF, 0x7F7F0000, 0x7F7F7FFF, 0x7F7F8000, 0x7F7F8001, 0x7F7EFFFF,  # near FLT_MAX
    bits_of_f32([np.float32(65504)])[0], bits_of_f32([np.float32(65519)])[0],
    bits_of_f32([np.float32(65520)])[0], bits_of_f32([np.float32(65536)])[0],
    bits_of_f32([np.float32(1e30)])[0], bits_of_f32([np.float32(1e-30)])[0],
    bits_of_f32([np.float32(2.0**-24)])[0], bits_of_f32([np.float32(2.0**-25)])[0],
    bits_of_f32([np.float32(2.0**-26)])[0], bits_of_f32([np.float32(2.0**-133)])[0],
    bits_of_f32([np.float32(2.0**-134)])[0], bits_of_f32([np.float32(2.0**-135)])[0],
]
add(specials, CLASSES.index("special"))
add(rng.integers(0, 2**32, 600, dtype=np.uint64).astype(np.uint32), CLASSES.index("random-bits"))
for lo_e, hi_e in [(-27, 17), (-136, 129)]:
    e = rng.integers(lo_e, hi_e, 500)
    m = rng.random(500) + 1
    with np.errstate(over="ignore"):
        add(bits_of_f32((m * 2.0**e).astype(np.float32)), CLASSES.index("random-range"))

# One entry per bit pattern (first class wins), so a failure names each input once.
seen = {}
for b, c in cases:
    seen.setdefault(b, c)
f32_bits = np.array(list(seen.keys()), dtype=np.uint32)
classes = np.array(list(seen.values()), dtype=np.uint8)
f32 = f32_of_bits(f32_bits)
with np.errstate(over="ignore", invalid="ignore"):
    expected = {name: f32.astype(dtype).view(np.uint16) for name, (dtype, _, _) in TYPES.items()}

b64 = lambda a, t: base64.b64encode(np.ascontiguousarray(a).astype(t).tobytes()).decode()
doc = {
    "generator": "scripts/make-half-ref-fixture.py",
    "numpy": np.__version__,
    "ml_dtypes": ml_dtypes.__version__,
    "toF32Sha256": {name: to_f32_hash(dtype) for name, (dtype, _, _) in TYPES.items()},
    "cases": {
        "count": int(f32_bits.size),
        "classNames": CLASSES,
        "f32Bits": b64(f32_bits, "<u4"),
        "class": b64(classes, "u1"),
        "float16": b64(expected["float16"], "<u2"),
        "bfloat16": b64(expected["bfloat16"], "<u2"),
    },
}
with open(OUT, "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print(OUT, f32_bits.size, "cases", np.bincount(classes, minlength=len(CLASSES)).tolist())
