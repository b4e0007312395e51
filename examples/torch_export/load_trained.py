"""Loads what `skein export RUN_DIR --format pt2 --out cnn_trained.pt2` wrote
(an inference program: eval mode, raw pixels in) and classifies a batch, in
Python, with the trained weights:

    python examples/torch_export/load_trained.py cnn_trained.pt2
"""
import sys

import torch

model = torch.export.load(sys.argv[1]).module()
x = torch.randint(0, 256, (4, 1, 28, 28)).float()  # raw pixels, as the idx files hold them
print(model(x).argmax(1))
