"""What the PyTorch golden-vector scripts share: their command line (--any-torch, --out) and the
check that the torch running them is the one that made the committed file (another version may
sum in another order and change the bits)."""
import argparse
import sys

import torch


def golden_args(doc, torch_version, default_out):
    """The parsed command line of a script whose docstring is `doc`; exits unless torch is `torch_version` (or --any-torch)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--any-torch", action="store_true", help="allow a torch other than " + torch_version)
    ap.add_argument("--out", default=default_out)
    args = ap.parse_args()
    version = torch.__version__.split("+")[0]
    if version != torch_version and not args.any_torch:
        sys.exit(f"torch {torch.__version__}: this file is made with torch {torch_version} (--any-torch to override)")
    torch.set_num_threads(1)
    return args
