"""Writes test/fixtures/npy/*.npy with NumPy itself, so that the .npy reader is tested on files
NumPy made (not on files made by our own writer). Values: x[i] = ((i * 37) % 101 - 50) / 16 for
flat index i (exact in float32 and in float16: multiples of 1/16 within +-3.125;
test/npy-files.test.ts recomputes them); weights 1 + x/8 (multiples of 1/128 in [0.6, 1.4],
exact in both too).

Regenerate (needs numpy, which the project does not otherwise need; numpy 2.4.6 made the
committed files, and re-running it leaves them byte-identical):
    python3 -m venv /tmp/npenv && /tmp/npenv/bin/pip install numpy
    /tmp/npenv/bin/python scripts/make-npy-fixtures.py
"""
import numpy as np
from numpy.lib import format as npf

OUT = "test/fixtures/npy/"


def values(shape, dtype=np.float32):
    n = int(np.prod(shape))
    i = np.arange(n)
    return (((i * 37) % 101 - 50) / 16).reshape(shape).astype(dtype)


def save(name, arr, version=None):
    with open(OUT + name, "wb") as f:
        npf.write_array(f, arr, version=version, allow_pickle=False)


save("v1.npy", values((3, 5, 16)), (1, 0))
save("v2.npy", values((4, 24)), (2, 0))
save("v3.npy", values((2, 7)), (3, 0))
save("one-row.npy", values((33,)), (1, 0))
save("weight.npy", (1 + values((16,)) / 8).astype(np.float32), (1, 0))
save("fortran.npy", np.asfortranarray(values((4, 6))), (1, 0))
save("big-endian.npy", values((2, 8)).astype(">f4"), (1, 0))
save("float16.npy", values((2, 8), np.float16), (1, 0))
save("float64.npy", values((2, 8), np.float64), (1, 0))
# Half precision (normalizeFile's dtype float16): a 3-d float16 array in C order, its float16
# weight, and the big-endian float16 ('>f2') that must be refused.
save("f16-3d.npy", values((3, 5, 8), np.float16), (1, 0))
save("weight-f16.npy", (1 + values((8,)) / 8).astype(np.float16), (1, 0))
save("big-endian-f16.npy", values((2, 8), np.float16).astype(">f2"), (1, 0))
print(np.__version__)
