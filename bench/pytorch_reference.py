#!/usr/bin/env python3
"""The plain PyTorch side of bench/vs_pytorch.py: the same model, data,
optimizer and batch size as a Skein config, trained the way a PyTorch user
writes it (eager mode, one thread, shuffled mini-batches, a validation pass
each epoch). Prints one JSON line per epoch ({"epoch", "dur", "train_loss",
"valid_acc"}) and a last line {"peak_rss_mb"}.

  python3 bench/pytorch_reference.py FAMILY [--epochs N] [--limit N] [--csv FILE]
      [--images DIR] [--script FILE] [--data DIR] [--device cpu|cuda|cuda:N]

FAMILY: mlp | wide_mlp | cnn | torchscript_cnn | tabular | image_folder
(the rows of docs/BENCHMARKS.md section 8). Data: Fashion-MNIST from
/usr/share/datasets/fashion-mnist (or --data), its first --limit training
images (0: all), 10% of them held out for validation, as Skein's valid_split 0.1.

--device: the model on that device, each batch copied there from pinned
memory with non_blocking (as Skein's prefetcher does); the epoch's loss and
accuracy are summed on the device and read once at its end, so the host waits
for the device once per pass, not per batch. Fashion-MNIST is read without
numpy (a GPU machine's Python may have none); the tabular family needs it.
"""
import argparse, gzip, json, resource, sys, time

import torch
from torch import nn

FASHION = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530  # Fashion-MNIST training pixels, as Skein's idx plugin


def read_idx(path, limit):
    with gzip.open(path, "rb") as f:
        raw = bytearray(f.read())
    dims = raw[3]
    shape = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    data = torch.frombuffer(raw, dtype=torch.uint8, offset=4 + 4 * dims).reshape(shape)
    return data[:limit] if limit else data


def fashion(limit, folder=FASHION):
    x = read_idx(f"{folder}/train-images-idx3-ubyte.gz", limit)
    y = read_idx(f"{folder}/train-labels-idx1-ubyte.gz", limit)
    x = (x.to(torch.float32) / 255 - MEAN) / STD
    return x.unsqueeze(1), y.to(torch.int64)


def split(x, y, seed=0):
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(len(x), generator=g)
    n_valid = len(x) // 10
    return (x[perm[n_valid:]], y[perm[n_valid:]]), (x[perm[:n_valid]], y[perm[:n_valid]])


def mlp(inputs, hidden, classes, dropout):
    layers, width = [nn.Flatten()], inputs
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()] + ([nn.Dropout(dropout)] if dropout else [])
        width = h
    return nn.Sequential(*layers, nn.Linear(width, classes))


def cnn():  # Skein's bundled `cnn` with channels [16, 32], hidden 128, dropout 0.25
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25),
                         nn.Linear(128, 10))


def tensor_batches(x, y, batch, shuffle):
    order = torch.randperm(len(x)) if shuffle else torch.arange(len(x))
    for i in range(0, len(x), batch):
        idx = order[i:i + batch]
        yield x[idx], y[idx]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("family")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--csv")
    ap.add_argument("--images")
    ap.add_argument("--script")
    ap.add_argument("--data", default=FASHION)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    device = torch.device(a.device)
    pin = device.type != "cpu"

    loader = None
    if a.family == "tabular":
        import numpy as np
        table = np.loadtxt(a.csv, delimiter=",", skiprows=1, dtype=np.float32)
        x, y = torch.from_numpy(table[:, :-1].copy()), torch.from_numpy(table[:, -1].astype(np.int64))
        model = mlp(x.shape[1], [256, 256], int(y.max()) + 1, 0.0)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    elif a.family == "image_folder":
        import torchvision  # Debian python3-torchvision: what a PyTorch user reads image folders with
        from torchvision import transforms
        t = transforms.Compose([transforms.Grayscale(1), transforms.ToTensor(), transforms.Normalize([MEAN], [STD])])
        folder = torchvision.datasets.ImageFolder(a.images, transform=t)
        n_valid = len(folder) // 10
        train_set, valid_set = torch.utils.data.random_split(
            folder, [len(folder) - n_valid, n_valid], generator=torch.Generator().manual_seed(0))
        loader = (torch.utils.data.DataLoader(train_set, batch_size=a.batch, shuffle=True),
                  torch.utils.data.DataLoader(valid_set, batch_size=a.batch))
        model = mlp(28 * 28, [256, 128], 10, 0.1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
    else:
        x, y = fashion(a.limit, a.data)
        if a.family == "mlp":
            model = mlp(28 * 28, [256, 128], 10, 0.1)
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
        elif a.family == "wide_mlp":
            model = mlp(28 * 28, [1024, 1024], 10, 0.1)
            opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
        elif a.family == "cnn":
            model = cnn()
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        elif a.family == "torchscript_cnn":  # the same scripted file Skein loads
            model = torch.jit.load(a.script)
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        else:
            sys.exit(f"unknown family {a.family}")
    model.to(device)
    if loader is None:
        train, valid = split(x, y)
        loader = (lambda: tensor_batches(*train, a.batch, True), lambda: tensor_batches(*valid, a.batch, False))
    else:
        dl_train, dl_valid = loader
        loader = (lambda: iter(dl_train), lambda: iter(dl_valid))

    def to_device(xb, yb):  # as a DataLoader with pin_memory=True, then a copy that does not wait
        if pin:
            xb, yb = xb.pin_memory(), yb.pin_memory()
        return xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)

    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(1, a.epochs + 1):
        start = time.perf_counter()
        model.train()
        total, count = torch.zeros((), device=device), 0
        for xb, yb in loader[0]():
            xb, yb = to_device(xb, yb)
            opt.zero_grad()
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.detach() * len(xb)
            count += len(xb)
        model.eval()
        correct, seen = torch.zeros((), dtype=torch.int64, device=device), 0
        with torch.no_grad():
            for xb, yb in loader[1]():
                xb, yb = to_device(xb, yb)
                correct += (model(xb).argmax(1) == yb).sum()
                seen += len(xb)
        train_loss, valid_acc = total.item() / count, correct.item() / seen  # waits for the device
        dur = time.perf_counter() - start
        print(json.dumps({"epoch": epoch, "dur": dur, "train_loss": train_loss, "valid_acc": valid_acc}),
              flush=True)
    print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main()
