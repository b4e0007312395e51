"""Writes cnn.pt2, a small CNN for Fashion-MNIST (inputs [N, 1, 28, 28], 10
class scores) exported with torch.export, for skein's `pt2` model plugin.
Run with PyPI's torch 2.x, the venv SKEIN_TORCH=pypi scripts/example.sh makes
(~/.cache/skein/torch-2.15.0/bin/python):

    python examples/torch_export/export_cnn.py examples/torch_export/cnn.pt2
    build-pypi/bin/skein train --config examples/torch_export/fashion_mnist_pt2.json
"""
import os
import sys

import torch

# The very module of the TorchScript example: torch.export takes it as it is.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torchscript"))
from make_cnn import SmallCnn  # noqa: E402


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "examples/torch_export/cnn.pt2"
    torch.manual_seed(0)
    batch = torch.export.Dim("batch")  # any batch size, the last short batch too
    program = torch.export.export(SmallCnn(), (torch.randn(2, 1, 28, 28),), dynamic_shapes={"x": {0: batch}})
    torch.export.save(program, out)
    print(f"wrote {out}")
