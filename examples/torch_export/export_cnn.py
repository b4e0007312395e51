"""Writes cnn.pt2, a small CNN for Fashion-MNIST (inputs [N, 1, 28, 28], 10
class scores) exported with torch.export, for skein's `pt2` model plugin.
Run with PyPI's torch 2.x, the venv SKEIN_TORCH=pypi scripts/example.sh makes
(~/.cache/skein/torch-2.15.0/bin/python):

    python examples/torch_export/export_cnn.py examples/torch_export/cnn.pt2
    build-pypi/bin/skein train --config examples/torch_export/fashion_mnist_pt2.json
"""
import sys

import torch
from torch import nn


class SmallCnn(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.25), nn.Linear(32 * 7 * 7, 128), nn.ReLU(),
                                        nn.Linear(128, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "examples/torch_export/cnn.pt2"
    torch.manual_seed(0)
    batch = torch.export.Dim("batch")  # any batch size, the last short batch too
    program = torch.export.export(SmallCnn(), (torch.randn(2, 1, 28, 28),), dynamic_shapes={"x": {0: batch}})
    torch.export.save(program, out)
    print(f"wrote {out}")
