"""Loads what `skein export RUN_DIR --format pt2 --out cnn_trained.pt2` wrote
and classifies a batch, in Python, with the trained weights:

    python examples/torch_export/load_trained.py cnn_trained.pt2
"""
import sys

import torch

model = torch.export.load(sys.argv[1]).module()
x = torch.randn(4, 1, 28, 28)  # raw inputs scaled as cnn_trained.pt2.json says
print(model(x).argmax(1))
