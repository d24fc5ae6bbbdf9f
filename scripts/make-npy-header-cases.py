"""Writes test/fixtures/npy/header-cases.json: .npy headers, ordinary and adversarial, each with
what NumPy's own reader (np.load, allow_pickle=False) made of it, so that test/npy-files.test.ts
holds the package's header parser to NumPy: it must refuse every header NumPy refuses, and read
every header it accepts with NumPy's dtype and shape, except where it is deliberately stricter
("ours": "refuse", with the reason) — duplicate keys, which NumPy reads with the last value, and
spellings no NumPy writer produces.

Regenerate (needs numpy, which the project does not otherwise need; numpy 2.4.6 made the
committed file):
    python3 -m venv /tmp/npenv && /tmp/npenv/bin/pip install numpy
    /tmp/npenv/bin/python scripts/make-npy-header-cases.py
"""
import io
import json
import struct
import warnings

import numpy as np
from numpy.lib import format as npf

OUT = "test/fixtures/npy/header-cases.json"
STD = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"

# (name, header dict text, version, elements of float32-sized data after it, ours, why)
CASES = [
    ("as NumPy writes it", STD, (1, 0), 6, "accept", None),
    ("version 2.0", STD, (2, 0), 6, "accept", None),
    ("version 3.0 (utf-8)", STD, (3, 0), 6, "accept", None),
    ("no trailing comma", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", (1, 0), 6, "accept", None),
    ("double quotes", '{"descr": "<f4", "fortran_order": False, "shape": (2, 3)}', (1, 0), 6, "accept", None),
    ("keys in another order", "{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", (1, 0), 6, "accept", None),
    ("tabs and newlines between tokens", "{\t'descr':\n'<f4' ,'fortran_order' :False,\n'shape':( 2 ,3 , ) }", (1, 0), 6, "accept", None),
    ("float16", "{'descr': '<f2', 'fortran_order': False, 'shape': (2, 3), }", (1, 0), 3, "accept", None),
    ("one axis", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", (1, 0), 6, "accept", None),
    ("a zero-length axis", "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", (1, 0), 0, "accept", None),
    ("Python 2 long suffix", "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", (1, 0), 6, "accept", None),
    ("Python 2 long suffix in version 3.0", "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", (3, 0), 6, "refuse", None),
    ("fortran_order twice, last True", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'fortran_order': True}", (1, 0), 6, "refuse", "a repeated key"),
    ("descr twice, last float16", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'descr': '<f2'}", (1, 0), 3, "refuse", "a repeated key"),
    ("shape twice", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'shape': (2, 3)}", (1, 0), 6, "refuse", "a repeated key"),
    ("an extra key", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", (1, 0), 6, "refuse", None),
    ("a missing key", "{'descr': '<f4', 'shape': (2, 3)}", (1, 0), 6, "refuse", None),
    ("junk between tokens", "{'descr' x: '<f4', 'fortran_order': False, 'shape': (2, 3)}", (1, 0), 6, "refuse", None),
    ("junk after the dict", STD + " junk", (1, 0), 6, "refuse", None),
    ("junk before the dict", "x" + STD, (1, 0), 6, "refuse", None),
    ("no closing brace", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", (1, 0), 6, "refuse", None),
    ("minor version 1", STD, (1, 1), 6, "refuse", None),
    ("version 4.0", STD, (4, 0), 6, "refuse", None),
    ("shape not a tuple (parenthesised int)", "{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", (1, 0), 6, "refuse", None),
    ("shape a list", "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", (1, 0), 6, "refuse", None),
    ("shape () (0-d)", "{'descr': '<f4', 'fortran_order': False, 'shape': ()}", (1, 0), 1, "refuse", "a 0-d array has no rows"),
    ("negative axis", "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, -3)}", (1, 0), 6, "refuse", None),
    ("float axis", "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0, 3)}", (1, 0), 6, "refuse", None),
    ("hexadecimal axis", "{'descr': '<f4', 'fortran_order': False, 'shape': (0x2, 3)}", (1, 0), 6, "refuse", "a spelling no NumPy writer produces"),
    ("underscore in an axis", "{'descr': '<f4', 'fortran_order': False, 'shape': (1_2,)}", (1, 0), 12, "refuse", "a spelling no NumPy writer produces"),
    ("leading zero in an axis", "{'descr': '<f4', 'fortran_order': False, 'shape': (02, 3)}", (1, 0), 6, "refuse", None),
    ("fortran_order 0", "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", (1, 0), 6, "refuse", None),
    ("fortran_order false", "{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3)}", (1, 0), 6, "refuse", None),
    ("a comment", "{'descr': '<f4', # float32\n 'fortran_order': False, 'shape': (2, 3)}", (1, 0), 6, "refuse", "a spelling no NumPy writer produces"),
    ("a raw-string prefix", "{'descr': r'<f4', 'fortran_order': False, 'shape': (2, 3)}", (1, 0), 6, "refuse", "a spelling no NumPy writer produces"),
    ("adjacent strings", "{'descr': '<' 'f4', 'fortran_order': False, 'shape': (2, 3)}", (1, 0), 6, "refuse", "a spelling no NumPy writer produces"),
    ("an escape in a string", "{'descr': '\\x3cf4', 'fortran_order': False, 'shape': (2, 3)}", (1, 0), 6, "refuse", "a spelling no NumPy writer produces"),
    ("a NUL byte", "{'descr': '<f4', 'fortran_order': False,\x00 'shape': (2, 3)}", (1, 0), 6, "refuse", None),
    ("control characters", "{'descr': '<f4\x1b[31m', 'fortran_order': False, 'shape': (2, 3)}", (1, 0), 6, "refuse", None),
    ("a header longer than NumPy's limit", STD + " " * 11000, (2, 0), 6, "refuse", None),
]


def build(header, version, elems):
    text = header.encode("utf-8" if version == (3, 0) else "latin1")
    pre = 10 if version[0] == 1 else 12
    total = -(-(pre + len(text) + 1) // 64) * 64
    body = text + b" " * (total - pre - len(text) - 1) + b"\n"
    size = struct.pack("<H", len(body)) if version[0] == 1 else struct.pack("<I", len(body))
    return b"\x93NUMPY" + bytes(version) + size + body + b"\x00" * (4 * elems)


def numpy_says(data):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # NumPy warns about Python 2 headers
            arr = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as e:  # what NumPy raises is the verdict
        return {"loads": False, "error": f"{type(e).__name__}: {e}"[:200]}
    return {"loads": True, "dtype": arr.dtype.str, "shape": list(arr.shape), "fortran": bool(arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous)}


cases = []
for name, header, version, elems, ours, why in CASES:
    data = build(header, version, elems)
    cases.append({"name": name, "hex": data.hex(), "numpy": numpy_says(data), "ours": ours, **({"why": why} if why else {})})
with open(OUT, "w") as f:
    json.dump({"numpy": np.__version__, "cases": cases}, f, indent=1)
    f.write("\n")
