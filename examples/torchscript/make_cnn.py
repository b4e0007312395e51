"""Writes cnn.pt, a small CNN for Fashion-MNIST (inputs [N, 1, 28, 28], 10
class scores) saved with torch.jit.script(model).save(path), for skein's
`torchscript` model plugin. Run with Debian's python3-torch:

    /usr/bin/python3 examples/torchscript/make_cnn.py examples/torchscript/cnn.pt
    build/bin/skein train --config examples/torchscript/fashion_mnist_torchscript.json
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:  # [N, 28, 28] without the channel
            x = x.unsqueeze(1)
        return self.classifier(self.features(x))


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "examples/torchscript/cnn.pt"
    torch.manual_seed(0)
    torch.jit.script(SmallCnn()).save(out)
    print(f"wrote {out}")
