"""Writes test/fixtures/gate/golden.json: golden vectors for the gated RMSNorm, forward and
backward, in float32, float16 and bfloat16, computed by real PyTorch on the CPU from the models'
own code. CI does not run this script (nor PyTorch); test/gate.test.ts reads the committed JSON.

    python3 -m venv /tmp/torchenv && /tmp/torchenv/bin/pip install torch==2.15.0 numpy
    /tmp/torchenv/bin/python scripts/make-gate-golden.py        # from the repository root

Models (each case's "model"; the code is in MODELS below, written as the models write it):
  qwen3-next   transformers' Qwen3NextRMSNormGated: the norm in float32, `x·rstd` rounded to the
               input dtype, times the weight (of the input dtype), times silu(gate.float()), then
               rounded to the input dtype. The package's castingMode 'llama', gateMode 'after'.
  hf-mamba2    transformers' MambaRMSNormGated (Mamba-2): `x.float() · silu(gate.float())`, then
               the norm, `x·rstd` rounded to the input dtype, times the weight. 'llama', 'before'.
  mamba2-after, mamba2-before
               mamba_ssm's reference rms_norm_ref (upcast=True, no bias, one group): everything
               in float32 with a float32 weight, one rounding at the end; norm_before_gate True
               ('after') or False ('before'). The package's castingMode 'none'.
The backward is autograd through that code: dy of the input dtype; dx, dgate of the input dtype,
dweight of the weight's.

Deterministic: every case draws from its own NumPy Generator (PCG64) seeded with the CRC-32 of its
name. Arrays are little-endian base64: x, z, dy, y, dx, dz as uint16 bits (half) or float32;
weight, dweight as the weight's dtype.
"""

import base64
import json
import sys
import zlib

import numpy as np
import torch
import torch.nn.functional as F

TORCH = "2.15.0"


def qwen3_next(x, z, w, eps):
    input_dtype = x.dtype
    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    h = w * h.to(input_dtype)
    h = h * F.silu(z.to(torch.float32))
    return h.to(input_dtype)


def hf_mamba2(x, z, w, eps):
    input_dtype = x.dtype
    h = x.to(torch.float32)
    h = h * F.silu(z.to(torch.float32))
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + eps)
    return w * h.to(input_dtype)


def mamba2_ref(norm_before_gate):
    def run(x, z, w, eps):
        dtype = x.dtype
        w = w.float()
        x = x.float()
        z = z.float()
        if not norm_before_gate:
            x = x * F.silu(z)
        rstd = 1 / torch.sqrt((x.square()).mean(dim=-1, keepdim=True) + eps)
        out = x * rstd * w
        if norm_before_gate:
            out *= F.silu(z)
        return out.to(dtype)

    return run


# name: (function, castingMode, gateMode, weight has the input dtype)
MODELS = {
    "qwen3-next": (qwen3_next, "llama", "after", True),
    "hf-mamba2": (hf_mamba2, "llama", "before", True),
    "mamba2-after": (mamba2_ref(True), "none", "after", False),
    "mamba2-before": (mamba2_ref(False), "none", "before", False),
}
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
SHAPES = [(4, 64), (3, 131), (1, 1000)]
EPS = 1e-6


def b64(t):
    if t.dtype in (torch.float16, torch.bfloat16):
        a = t.contiguous().view(torch.int16).numpy().astype("<u2")
    else:
        a = t.contiguous().numpy().astype("<f4")
    return base64.b64encode(a.tobytes()).decode()


def case(model, dtype, rows, dim):
    name = f"{model}-{dtype}-{rows}x{dim}"
    rng = np.random.Generator(np.random.PCG64(zlib.crc32(name.encode())))
    fn, casting, gate_mode, w_same = MODELS[model]
    dt = DTYPES[dtype]
    x = rng.standard_normal((rows, dim)) * np.exp(rng.uniform(-2, 2, (rows, 1)))
    z = rng.standard_normal((rows, dim)) * 3
    z.flat[:: max(1, dim // 5)] = rng.choice([-100.0, -20.0, 20.0, 100.0], z.flat[:: max(1, dim // 5)].shape)
    w = 1 + 0.5 * rng.standard_normal(dim)
    dy = rng.standard_normal((rows, dim))
    xt = torch.tensor(x, dtype=dt, requires_grad=True)
    zt = torch.tensor(z, dtype=dt, requires_grad=True)
    wt = torch.tensor(w, dtype=dt if w_same else torch.float32, requires_grad=True)
    dyt = torch.tensor(dy, dtype=dt)
    y = fn(xt, zt, wt, EPS)
    assert y.dtype == dt, (name, y.dtype)
    y.backward(dyt)
    return {
        "name": name,
        "model": model,
        "dtype": dtype,
        "weightDtype": dtype if w_same else "float32",
        "castingMode": casting,
        "gateMode": gate_mode,
        "rows": rows,
        "dim": dim,
        "eps": EPS,
        "x": b64(xt.detach()),
        "z": b64(zt.detach()),
        "weight": b64(wt.detach()),
        "dy": b64(dyt),
        "y": b64(y.detach()),
        "dx": b64(xt.grad),
        "dz": b64(zt.grad),
        "dweight": b64(wt.grad),
    }


def main():
    if torch.__version__.split("+")[0] != TORCH and "--any-torch" not in sys.argv:
        sys.exit(f"made with torch {TORCH}, this is {torch.__version__} (pass --any-torch to use it anyway)")
    cases = [case(m, d, r, n) for m in MODELS for d in DTYPES for (r, n) in SHAPES]
    again = case("qwen3-next", "bfloat16", 3, 131)
    assert again == next(c for c in cases if c["name"] == again["name"]), "not deterministic"
    out = {"torch": torch.__version__.split("+")[0], "eps": EPS, "cases": cases}
    with open("test/fixtures/gate/golden.json", "w") as f:
        json.dump(out, f, indent=0)
        f.write("\n")
    print(f"wrote {len(cases)} cases")


if __name__ == "__main__":
    main()
