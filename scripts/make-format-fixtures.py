"""Writes test/fixtures/formats/: .npz files written by NumPy (np.savez stores its members,
np.savez_compressed deflates them) and safetensors files written by the safetensors package, so
that test/formats.test.ts reads files those libraries made, not files made by our own writer.
Values: x[i] = ((i * 37) % 101 - 50) / 16 for flat index i (exact in every float dtype used;
the test recomputes them), weights 1 + x/8.

Each file holds float arrays of the dtypes the package reads (float32, float16, float64, and
bfloat16 in safetensors, from ml_dtypes), an integer array and a 0-d array (copied as they are),
so that one file exercises every path. weights.safetensors holds two 1-D tensors, as a model's
checkpoint does, for --weight-tensor.

With --check DIR it instead loads, with the same libraries, every .npz and .safetensors under
DIR (outputs written by the package) and prints each array's name, dtype, shape and first
values: how the round trip was checked by hand.

Regenerate (needs numpy, safetensors and ml_dtypes, which the project does not otherwise need;
numpy 2.4.6, safetensors 0.8.0 and ml_dtypes 0.6.0 made the committed files, and re-running it
leaves the .safetensors files byte-identical; the .npz files carry zip time stamps):
    python3 -m venv /tmp/npenv && /tmp/npenv/bin/pip install numpy safetensors ml_dtypes
    /tmp/npenv/bin/python scripts/make-format-fixtures.py
"""
import os
import sys

import ml_dtypes
import numpy as np
import safetensors
import safetensors.numpy as stn

OUT = "test/fixtures/formats/"


def values(shape, dtype=np.float32):
    n = int(np.prod(shape))
    i = np.arange(n)
    return (((i * 37) % 101 - 50) / 16).reshape(shape).astype(dtype)


def arrays():
    return {
        "acts": values((3, 5, 16)),
        "half": values((4, 8), np.float16),
        "wide": values((2, 16), np.float64),
        "ids": np.arange(5, dtype=np.int64),
        "scale": np.array(0.5, dtype=np.float32),
    }


def write():
    os.makedirs(OUT, exist_ok=True)
    np.savez(OUT + "savez.npz", **arrays())
    np.savez_compressed(OUT + "savez-compressed.npz", **arrays())
    t = arrays()
    t["brain"] = values((3, 8)).astype(ml_dtypes.bfloat16)
    stn.save_file(t, OUT + "tensors.safetensors", metadata={"format": "np", "note": "fixture"})
    w = {"model.norm.weight": (1 + values((16,)) / 8).astype(np.float32), "model.final.weight": (1 + values((8,)) / 8).astype(np.float16)}
    stn.save_file(w, OUT + "weights.safetensors")
    print(np.__version__, safetensors.__version__, ml_dtypes.__version__)


def check(root):
    for d, _, names in os.walk(root):
        for n in sorted(names):
            p = os.path.join(d, n)
            if n.endswith(".npz"):
                with np.load(p) as z:
                    for k in z.files:
                        a = z[k]
                        print(p, k, a.dtype, a.shape, a.ravel()[:3])
            elif n.endswith(".safetensors"):
                with open(p, "rb") as f:
                    for k, v in safetensors.deserialize(f.read()):
                        print(p, k, v["dtype"], v["shape"], len(v["data"]), "bytes")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    else:
        write()
