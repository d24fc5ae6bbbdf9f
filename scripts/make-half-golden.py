"""Writes test/fixtures/half/golden.json: golden vectors for RMSNorm on float16 / bfloat16 storage,
computed by real PyTorch on the CPU. CI does not run this script (nor PyTorch); the tests read the
committed JSON.

Made with torch 2.15.0 (the PyPI wheel, 2.15.0+cu132, run on the CPU only) and numpy 2.4.6 on
Python 3.11. Regenerate:

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0 numpy
    /tmp/torchenv/bin/python scripts/make-half-golden.py        # from the repository root

The output is deterministic: every case draws its numbers from its own NumPy Generator (PCG64) seeded
with the CRC-32 of the case's name, and the script checks that two runs of each case give the same
bits.
A different torch version may change the bits (e.g. the order of the float32 sum in `mean`): the
version that made the file is recorded in it, and the script refuses any other unless --any-torch.
The file came out byte-identical under ATEN_CPU_CAPABILITY=avx512, avx2 and default on x86-64 (the
float32 sums use 8-float vectors in all three); other machines were not tried.

What torch 2.15 does on the CPU (the aten ops it dispatches, as a TorchDispatchMode records them):
`F.rms_norm` on a CPU tensor always runs the composite (aten `rms_norm_composite`, the same ops as
`torch._decomp.decompositions._fused_rms_norm`), with or without autograd, same-dtype weight or not:
    h    = x.to(float32)
    rstd = rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)     # float32; eps rounded to float32 first
           # mean = float32 sum / N; CPU rsqrt = 1.0f / sqrtf(v) (two roundings, not a correctly
           # rounded rsqrt); the sum is SumKernel.cpp's cascade over 8-float vectors (4 ILP accumulators)
    out  = h * rstd                                         # float32
    out  = out * weight                                     # float32 (a half weight is upcast exactly)
    y    = out.type_as(x)                                   # the ONE rounding to the half dtype
The output dtype is x's half dtype even when the weight is float32 (the composite casts back with
type_as(x)); torch warns "Mismatch dtype between input and weight ... Cannot dispatch to fused
implementation" for a float32 weight, and the result is the same computation. Its backward is
autograd through those float32 ops (dy upcast to float32, everything in float32, dx rounded to the
half dtype once, dweight summed over rows in float32 and rounded once to the weight's dtype):
    gy = dy.float() * weight                  # float32
    S  = sum(gy * x.float(), -1)              # float32, torch's own summation order
    dx = (gy * rstd + x.float() * 2 * ((S * -0.5 * rstd**3) / N)).to(dtype)
In "llama" mode autograd also rounds gy = dy * weight to the half dtype (the gradient of
h.to(x.dtype)), so a float16 gy can overflow to inf and dx becomes inf or NaN (inf - inf): the
"-overflow" llama backward cases hold such NaNs, as torch makes them.

JSON layout (all arrays little-endian, base64):
    x, y, dy, dx   uint16 bit patterns of `dtype` (bfloat16 or float16), rows*dim, row-major
    weight,dweight bits of `weightDtype`: uint16 for a half, float32 for float32; null without weight
    rstd           float32, one per row: torch.rsqrt(x.float().pow(2).mean(-1) + eps)
                   (forward and backward cases; bit-equal to the rstd torch's own composite makes)
    rowKinds       how each row's x was drawn (see ROW_KINDS), for reading failures

Modes (each case's "mode"; the exact PyTorch code is in `forward` below):
  none   F.rms_norm(x, (dim,), weight, eps), then .to(dtype) if it promoted (it does not in 2.15).
  llama  Hugging Face LlamaRMSNorm:
             h = x.to(torch.float32)
             var = h.pow(2).mean(-1, keepdim=True)
             h = h * torch.rsqrt(var + eps)
             out = (weight * h.to(x.dtype)).to(x.dtype)
         i.e. TWO roundings: h to the half dtype, then weight * h (a half*half product rounds again;
         with a float32 weight the product is float32 and the final .to(x.dtype) rounds).
  gemma  Hugging Face GemmaRMSNorm with `offset` (1 = Gemma's 1 + weight, 0 = plain):
             h = x.float(); h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
             out = (h * (offset + weight.float())).type_as(x)
         (offset + weight.float()) is a float32 addition, rounded in float32.
Backward (op "backward"): x and weight are leaf tensors with requires_grad, in their own dtypes;
out.backward(dy) with dy in `dtype`; dx = x.grad (dtype), dweight = weight.grad (weightDtype).

Row kinds make the edge cases: float16 subnormal inputs, rows whose sum of squares underflows or
overflows float32 (bfloat16 only: then rstd = 1/sqrt(eps) or rstd = 0 and y = +-0), rows mixing
magnitudes, zero rows, one-hot rows. "overflow" cases use a weight so large that y passes float16's
65504 (-> +-inf) — or for bfloat16 passes float32's range in the float32 product (-> +-inf).
"""
import base64
import json
import os
import warnings
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch_golden import golden_args

TORCH_VERSION = "2.15.0"
OUT = "test/fixtures/half/golden.json"
DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}

warnings.filterwarnings("ignore", message="Mismatch dtype between input and weight")


# ---------------------------------------------------------------------------- encoding

def b64(t):
    """Little-endian bits of a tensor in its own dtype (uint16 for halves, float32 for float32)."""
    t = t.detach().contiguous().reshape(-1)
    if t.dtype in (torch.bfloat16, torch.float16):
        a = t.view(torch.int16).numpy().view(np.uint16).astype("<u2")
    elif t.dtype == torch.float32:
        a = t.numpy().astype("<f4")
    else:
        raise TypeError(t.dtype)
    return base64.b64encode(a.tobytes()).decode("ascii")


# ---------------------------------------------------------------------------- inputs

# Drawn with NumPy's PCG64 in float64 (no torch kernel, whose vectorized pow/exp/randn differ
# between ATen CPU capabilities), rounded to float32, then cast to the half dtype by torch (RNE).
ROW_KINDS = {
    # name: float64 values of one row
    "normal": lambda g, d, dt: g.standard_normal(d),
    "scaled": lambda g, d, dt: g.standard_normal(d) * 10.0 ** (g.random() * 6 - 3),
    "zero": lambda g, d, dt: np.zeros(d),
    "onehot": lambda g, d, dt: np.where(np.arange(d) == g.integers(d), -3.5, 0.0),
    # float16: subnormals (< 6.1e-5); bfloat16: subnormals (< 1.2e-38, x^2 underflows to 0 in float32)
    "tiny": lambda g, d, dt: g.standard_normal(d) * (1e-6 if dt == torch.float16 else 1e-39),
    # magnitudes spread log-uniformly over the dtype's range (subnormal .. large)
    "mixed": lambda g, d, dt: g.standard_normal(d)
    * 10.0 ** (g.random(d) * (11 if dt == torch.float16 else 40) - (7 if dt == torch.float16 else 20)),
    # near the top of the range: float16 up to ~3e4; bfloat16 ~1e19..1e21 so sum(x^2) overflows float32
    "large": lambda g, d, dt: g.standard_normal(d) * (1e4 if dt == torch.float16 else 1e20),
}


def cast(a, dtype):
    """float64 array -> float32 (NumPy, RNE) -> dtype (torch, RNE)."""
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64).astype(np.float32)).to(dtype)


def make_x(g, rows, dim, dtype, kinds):
    out = np.stack([ROW_KINDS[kinds[r % len(kinds)]](g, dim, dtype) for r in range(rows)])
    return cast(out, dtype), [kinds[r % len(kinds)] for r in range(rows)]


def make_weight(g, dim, wdtype, kind, mode, offset):
    if wdtype is None:
        return None
    if kind == "overflow":
        # |w| log-uniform in [1e4, 7e4] (a float16 weight stops at 6e4 so that it stays finite):
        # a float16 y overflows wherever |x * rstd| > ~1..6.5
        lo, hi = 1e4, (6e4 if wdtype == torch.float16 else 7e4)
        mag = lo * (hi / lo) ** g.random(dim)
        w = np.where(g.random(dim) < 0.2, -mag, mag)
    elif kind == "hugef32":  # bfloat16 activations: the float32 product x*rstd*w overflows
        w = 1e38 * 3.3 ** g.random(dim)  # 1e38 .. 3.3e38; float32 max is 3.4e38
    elif mode == "gemma" and offset == 1:
        w = g.standard_normal(dim) * 0.25  # Gemma's weights sit around 0 (used as 1 + w)
    else:
        w = 1.0 + g.standard_normal(dim) * 0.5
    return cast(w, wdtype)


# ---------------------------------------------------------------------------- the modes

def forward(mode, x, weight, eps, offset):
    """The PyTorch code each mode's golden values come from."""
    dtype = x.dtype
    if mode == "none":
        y = F.rms_norm(x, (x.shape[-1],), weight, eps)
        return y.to(dtype) if y.dtype != dtype else y
    if mode == "llama":  # transformers' LlamaRMSNorm.forward
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + eps)
        return (weight * h.to(dtype)).to(dtype)
    if mode == "gemma":  # transformers' GemmaRMSNorm.forward, with offset (1.0 in Gemma)
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
        h = h * (offset + weight.float())
        return h.type_as(x)
    raise ValueError(mode)


def rstd_of(x, eps):
    return torch.rsqrt(x.float().pow(2).mean(-1) + eps)


def run_case(spec):
    name = spec["name"]
    dtype = DTYPES[spec["dtype"]]
    wdtype = DTYPES[spec["weightDtype"]] if spec["weightDtype"] else None
    rows, dim, eps, mode, offset = spec["rows"], spec["dim"], spec["eps"], spec["mode"], spec["offset"]
    g = np.random.default_rng(zlib.crc32(name.encode()))
    x, kinds = make_x(g, rows, dim, dtype, spec["kinds"])
    weight = make_weight(g, dim, wdtype, spec.get("weightKind"), mode, offset)
    rstd = rstd_of(x, eps)
    # the rstd torch's own rms_norm makes (CPU: the composite); must be the same bits
    _, rstd_torch = torch.ops.aten._fused_rms_norm(x, [dim], weight, eps)
    assert torch.equal(rstd.view(torch.int32), rstd_torch.reshape(-1).view(torch.int32)), name
    case = {
        "name": name, "op": spec["op"], "dtype": spec["dtype"], "weightDtype": spec["weightDtype"],
        "mode": mode, "rows": rows, "dim": dim, "eps": eps, "offset": offset,
        "rowKinds": kinds, "x": b64(x), "weight": b64(weight) if weight is not None else None,
    }
    if spec["op"] == "forward":
        with torch.no_grad():
            y = forward(mode, x, weight, eps, offset)
        assert y.dtype == dtype, (name, y.dtype)
        # autograd on or off must not change the forward bits
        xa = x.clone().requires_grad_()
        ya = forward(mode, xa, weight, eps, offset)
        assert torch.equal(y.view(torch.int16), ya.detach().view(torch.int16)), name
        case["y"] = b64(y)
        case["rstd"] = b64(rstd)
    else:
        dy = cast(g.standard_normal((rows, dim)) * spec.get("dyScale", 1.0), dtype)
        xg = x.clone().requires_grad_()
        wg = weight.clone().requires_grad_() if weight is not None else None
        y = forward(mode, xg, wg, eps, offset)
        assert y.dtype == dtype, (name, y.dtype)
        y.backward(dy)
        assert xg.grad.dtype == dtype and (wg is None or wg.grad.dtype == wdtype), name
        case["rstd"] = b64(rstd)
        case["dy"] = b64(dy)
        case["dx"] = b64(xg.grad)
        case["dweight"] = b64(wg.grad) if wg is not None else None
    return case


# ---------------------------------------------------------------------------- the case list

EDGE_KINDS = ["normal", "tiny", "mixed", "zero", "large", "onehot", "scaled"]


def specs():
    out = []

    def add(dt, mode, wdt, op, rows, dim, eps, offset=0, tag="", kinds=("normal", "scaled"), **kw):
        wname = wdt or "noweight"
        label = f"-off{offset}" if mode == "gemma" else ""
        name = f"{dt}-{mode}{label}-w{wname}-{op}-{rows}x{dim}{tag}"
        out.append(dict(name=name, dtype=dt, weightDtype=wdt, mode=mode, op=op, rows=rows, dim=dim,
                        eps=eps, offset=offset, kinds=list(kinds), **kw))

    for dt in ("bfloat16", "float16"):
        for op in ("forward", "backward"):
            # plain shapes
            add(dt, "none", dt, op, 4, 64, 1e-6)
            add(dt, "none", "float32", op, 3, 100, 1e-5)
            add(dt, "none", None, op, 2, 1, 1e-6)
            add(dt, "none", None, op, 33, 17, 1e-5)
            add(dt, "llama", dt, op, 4, 64, 1e-6)
            add(dt, "llama", "float32", op, 3, 100, 1e-6)
            add(dt, "llama", dt, op, 5, 17, 1e-5)
            add(dt, "llama", "float32", op, 2, 1, 1e-5)
            add(dt, "gemma", dt, op, 4, 64, 1e-6, offset=1)
            add(dt, "gemma", "float32", op, 3, 100, 1e-6, offset=1)
            add(dt, "gemma", dt, op, 5, 17, 1e-5, offset=0)
            add(dt, "gemma", "float32", op, 2, 1, 1e-5, offset=0)
            # edge rows: subnormal, mixed, zero, large, one-hot
            add(dt, "none", dt, op, 7, 24, 1e-6, tag="-edge", kinds=EDGE_KINDS)
            add(dt, "none", "float32", op, 7, 9, 1e-5, tag="-edge", kinds=EDGE_KINDS)
            add(dt, "none", None, op, 7, 16, 1e-5, tag="-edge", kinds=EDGE_KINDS)
            add(dt, "llama", dt, op, 7, 24, 1e-6, tag="-edge", kinds=EDGE_KINDS)
            add(dt, "llama", "float32", op, 7, 9, 1e-5, tag="-edge", kinds=EDGE_KINDS)
            add(dt, "gemma", dt, op, 7, 24, 1e-6, offset=1, tag="-edge", kinds=EDGE_KINDS)
            add(dt, "gemma", "float32", op, 7, 9, 1e-5, offset=0, tag="-edge", kinds=EDGE_KINDS)
            # huge weights: y beyond float16's 65504 -> inf (bfloat16 stays finite at these sizes)
            add(dt, "none", dt, op, 4, 32, 1e-6, tag="-overflow", weightKind="overflow",
                kinds=("normal", "scaled", "tiny", "onehot"))
            add(dt, "llama", dt, op, 4, 32, 1e-5, tag="-overflow", weightKind="overflow")
            add(dt, "llama", "float32", op, 3, 20, 1e-6, tag="-overflow", weightKind="overflow")
            add(dt, "gemma", "float32", op, 3, 20, 1e-6, offset=1, tag="-overflow", weightKind="overflow")
            add(dt, "gemma", dt, op, 3, 20, 1e-5, offset=0, tag="-overflow", weightKind="overflow")
        # bfloat16 only: a float32 weight so big that x*rstd*w overflows float32 itself
        if dt == "bfloat16":
            add(dt, "none", "float32", "forward", 3, 16, 1e-6, tag="-overflow-f32", weightKind="hugef32")
            add(dt, "llama", "float32", "forward", 3, 16, 1e-6, tag="-overflow-f32", weightKind="hugef32")
    # long rows, for the order of the float32 sums: 8 x 4096 forward, 1 x 4096 backward (size budget)
    add("bfloat16", "llama", "bfloat16", "forward", 8, 4096, 1e-6)
    add("float16", "none", "float16", "backward", 1, 4096, 1e-5)
    return out


def main():
    args = golden_args(__doc__, TORCH_VERSION, OUT)
    version = torch.__version__.split("+")[0]
    cases = []
    names = set()
    for spec in specs():
        assert spec["name"] not in names, spec["name"]
        names.add(spec["name"])
        case = run_case(spec)
        assert case == run_case(spec), "not deterministic: " + spec["name"]
        cases.append(case)
    doc = {
        "torch": version,
        "note": (
            "Golden RMSNorm vectors from PyTorch " + version + " on the CPU, made by "
            "scripts/make-half-golden.py (its docstring has each mode's PyTorch code). Arrays are base64 "
            "of little-endian bits: x/y/dy/dx uint16 of dtype; weight/dweight uint16 of a half weightDtype "
            "or float32; rstd float32 per row = rsqrt(mean(x.float()^2) + eps). mode none = "
            "F.rms_norm (CPU: float32 math, one rounding to dtype); llama = HF LlamaRMSNorm "
            "(weight * h.to(dtype), two roundings); gemma = HF GemmaRMSNorm, h * (offset + "
            "weight.float()) in float32, one rounding. Backward = torch.autograd with dy in dtype."
        ),
        "cases": cases,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(cases)} cases, {os.path.getsize(args.out)} bytes, torch {torch.__version__}")


if __name__ == "__main__":
    main()
