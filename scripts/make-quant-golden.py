"""Writes test/fixtures/quant/golden.json: golden vectors for RMSNorm with a quantized output (int8
with a scale per row or a static one; float8 E4M3FN likewise), computed by real PyTorch on the CPU.
CI does not run this script (nor PyTorch); the tests read the committed JSON.

Made with torch 2.15.0 (the PyPI wheel, run on the CPU only) and numpy on Python 3.11. Regenerate:

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0 numpy
    /tmp/torchenv/bin/python scripts/make-quant-golden.py        # from the repository root

The PyTorch code (see `quantize` below), after y = F.rms_norm(x, (dim,), weight, eps) in x's dtype:
    yf    = y.float()
    scale = where(isnan(yf), 0, |yf|).amax(-1) / qmax            # per row (float32), or the static one
    scale = where(0 < scale < 2^-126, 2^-126, scale)             # its reciprocal stays finite
    inv   = where(scale == 0, 0, 1 / scale)                      # float32
    v     = yf * inv                                             # float32
    int8: where(isnan(v), 0, round(v).clamp(-127, 127)).to(torch.int8)        # round: half to even
    fp8:  where(isnan(v), nan, v.clamp(-448, 448)).to(torch.float8_e4m3fn)    # the cast: RNE
as vLLM's fused kernels do it (they clamp before the float8 cast, where PyTorch's plain cast of a
value past 448 would give NaN). Every case draws its numbers from its own NumPy Generator (PCG64)
seeded with the CRC-32 of its name; the script checks that two runs give the same bits.

JSON layout (little-endian, base64): x (float32, or uint16 bits of the half dtype), weight (float32),
y (x's dtype: torch's own output), q (int8 values or float8 bits, one byte each), scales (float32 per
row; absent with a static quantScale).
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
OUT = "test/fixtures/quant/golden.json"
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
QMAX = {"int8": 127.0, "float8_e4m3": 448.0}

warnings.filterwarnings("ignore", message="Mismatch dtype between input and weight")


def b64(t):
    t = t.detach().contiguous().reshape(-1)
    if t.dtype in (torch.float16, torch.bfloat16):
        a = t.view(torch.int16).numpy().astype("<i2")
    elif t.dtype == torch.float32:
        a = t.numpy().astype("<f4")
    elif t.dtype == torch.int8:
        a = t.numpy()
    elif t.dtype == torch.float8_e4m3fn:
        a = t.view(torch.uint8).numpy()
    else:
        raise TypeError(t.dtype)
    return base64.b64encode(a.tobytes()).decode("ascii")


# Rows: normal, scaled by powers of ten, a row of zeros, one with a large outlier, mixed magnitudes.
ROW_KINDS = {
    "normal": lambda g, d: g.standard_normal(d),
    "scaled": lambda g, d: g.standard_normal(d) * 10.0 ** (g.random() * 6 - 3),
    "zero": lambda g, d: np.zeros(d),
    "outlier": lambda g, d: np.where(np.arange(d) == g.integers(d), 60.0, g.standard_normal(d)),
    "mixed": lambda g, d: g.standard_normal(d) * 10.0 ** (g.random(d) * 4 - 2),
}


def quantize(y, out_dtype, quant_scale):
    """The quantization the library documents, in PyTorch (see the module doc)."""
    yf = y.float()
    if quant_scale is None:
        scale = torch.where(yf.isnan(), 0.0, yf.abs()).amax(-1, keepdim=True) / QMAX[out_dtype]
        # below float32's smallest normal (and not 0): raised to it, so that 1 / scale is finite
        scale = torch.where((scale > 0) & (scale < 2.0**-126), torch.full_like(scale, 2.0**-126), scale)
    else:
        scale = torch.full((yf.shape[0], 1), quant_scale, dtype=torch.float32)
    inv = torch.where(scale == 0, torch.zeros_like(scale), 1.0 / scale)
    v = yf * inv
    if out_dtype == "int8":
        q = torch.where(v.isnan(), torch.zeros_like(v), torch.round(v).clamp(-127, 127)).to(torch.int8)
    else:
        q = torch.where(v.isnan(), v, v.clamp(-448, 448)).to(torch.float8_e4m3fn)
    return q, scale.reshape(-1)


def run_case(spec):
    name = spec["name"]
    dtype = DTYPES[spec["dtype"]]
    rows, dim, eps = spec["rows"], spec["dim"], spec["eps"]
    g = np.random.default_rng(zlib.crc32(name.encode()))
    kinds = list(ROW_KINDS)
    x64 = np.stack([ROW_KINDS[kinds[r % len(kinds)]](g, dim) for r in range(rows)])
    x = torch.from_numpy(x64.astype(np.float32)).to(dtype)
    weight = torch.from_numpy((1.0 + g.standard_normal(dim) * 0.5).astype(np.float32))
    with torch.no_grad():
        y = F.rms_norm(x, (dim,), weight, eps)
        y = y.to(dtype) if y.dtype != dtype else y
        q, scales = quantize(y, spec["outDtype"], spec.get("quantScale"))
    case = {
        "name": name, "dtype": spec["dtype"], "outDtype": spec["outDtype"], "quantScale": spec.get("quantScale"),
        "rows": rows, "dim": dim, "eps": eps, "x": b64(x), "weight": b64(weight), "y": b64(y), "q": b64(q),
    }
    if spec.get("quantScale") is None:
        case["scales"] = b64(scales)
    return case


def specs():
    for dtype in DTYPES:
        for out in QMAX:
            for rows, dim in [(5, 1), (10, 37), (8, 256)]:
                for qs in [None, 0.02]:
                    tag = "static" if qs else "rows"
                    yield {"name": f"{dtype}-{out}-{tag}-{rows}x{dim}", "dtype": dtype, "outDtype": out, "quantScale": qs,
                           "rows": rows, "dim": dim, "eps": 1e-6}


def main():
    args = golden_args(__doc__, TORCH_VERSION, OUT)
    cases = []
    for s in specs():
        c = run_case(s)
        assert c == run_case(s), s["name"]  # deterministic
        cases.append(c)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"torch": torch.__version__, "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"{args.out}: {len(cases)} cases, {os.path.getsize(args.out)} bytes, torch {torch.__version__}")


if __name__ == "__main__":
    main()
