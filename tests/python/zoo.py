"""Python side of tests/test_zoo.cpp and bench/zoo_speed.py (PyPI's torch 2.x):
a zoo of models users bring, each exported with torch.export in train mode
(the docs' way) and trained eagerly from the same weights on the same
batches, for Skein to match step by step. Each subcommand exits 0 on success
and 1, with a line on stderr, when a check fails.

  list                       the zoo's names, one a line
  make DIR NAME              DIR/NAME.pt2 (a dynamic batch Dim of 1..1024),
                             DIR/NAME_batches.pt ({"x": [S, B, ...], "y": [S, B, ...]},
                             "seed": the seed set before the first step) and
                             DIR/NAME_ref.pt: {"losses": [S]} (each step's loss),
                             the state dict after S eager steps of SGD with
                             momentum (dropout drawn from the same seed), and
                             "__eval_outputs__": the trained module in eval mode
                             on x[0]; also DIR/NAME_x.npy, DIR/NAME_y.npy (all
                             rows of the batches, for skein train's npy dataset)
                             and a test split of 64 rows: DIR/NAME_tx.npy, _ty.npy
  ddp DIR NAME RANK PORT     one of 2 processes of PyTorch DDP (gloo,
                             broadcast_buffers as its default) from make's
                             weights, SGD with momentum, each step rank r on
                             the rows DIR/NAME_rows.npy [steps, 2, B] names of
                             DIR/NAME_x.npy (skein's sampler's, written by the
                             test); rank 0 writes DIR/NAME_ddp.pt: the state
                             dict, "losses" (each step's mean over the ranks)
                             and "test_loss", "test_accuracy": the trained
                             model's in eval mode on DIR/NAME_tx.npy, _ty.npy
  deterministic PT2 X        torch.export.load(PT2).module() gives the same
                             outputs twice on X (.npy); writes X + ".py.npy"
  same PT2 X Y               torch.export.load(PT2).module() on X gives Y
                             (.npy, skein predict's) within 1e-5 relative
"""
import math
import sys

import numpy as np
import torch
from torch import nn

STEPS = 50
BATCH = 8
LR = 0.05
MOMENTUM = 0.9
SEED = 1234


class ResidualBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class ResNet(nn.Module):
    """A residual CNN with BatchNorm: a stem, two residual blocks, global
    average pooling. No bias before BatchNorm (its gradient is rounding)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.blocks = nn.Sequential(ResidualBlock(8), ResidualBlock(8))
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


class Encoder(nn.Module):
    """A transformer encoder classifier with dropout in attention, the
    feed-forward block and the residuals (nn.TransformerEncoderLayer's 0.1),
    a learned position embedding, two layers, mean-pooled."""

    def __init__(self):
        super().__init__()
        self.pos = nn.Parameter(torch.randn(1, 6, 16) * 0.02)
        layer = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.encoder(x + self.pos).mean(1))


class TinyLm(nn.Module):
    """A small causal language model: token embedding tied to the output
    projection (one parameter), a causal mask in a non-persistent buffer,
    one pre-norm decoder-only block (dropout 0.1 in attention and the MLP).
    Takes token ids (as float, as skein's datasets give inputs) of [N, T],
    returns next-token logits [N, T, V]."""

    VOCAB, CONTEXT, WIDTH = 11, 7, 16

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(self.VOCAB, self.WIDTH)
        self.pos = nn.Parameter(torch.randn(self.CONTEXT, self.WIDTH) * 0.02)
        self.norm1 = nn.LayerNorm(self.WIDTH)
        self.attn = nn.MultiheadAttention(self.WIDTH, 2, dropout=0.1, batch_first=True)
        self.norm2 = nn.LayerNorm(self.WIDTH)
        self.mlp = nn.Sequential(nn.Linear(self.WIDTH, 32), nn.GELU(), nn.Linear(32, self.WIDTH), nn.Dropout(0.1))
        self.norm3 = nn.LayerNorm(self.WIDTH)
        self.out = nn.Linear(self.WIDTH, self.VOCAB, bias=False)
        self.out.weight = self.embed.weight  # tied
        mask = torch.triu(torch.full((self.CONTEXT, self.CONTEXT), float("-inf")), diagonal=1)
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, x):
        h = self.embed(x.long()) + self.pos
        a = self.norm1(h)
        h = h + self.attn(a, a, a, attn_mask=self.causal_mask, need_weights=False)[0]
        h = h + self.mlp(self.norm2(h))
        return self.out(self.norm3(h))


class Recurrent(nn.Module):
    """A 2-layer GRU (dropout between its layers) over [N, T, F], the last
    step's state classified."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(5, 12, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(12, 4)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1])


class ConvNextBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)  # depthwise
        self.norm = nn.LayerNorm(dim)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.5))  # layer scale

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)  # NCHW -> NHWC
        y = self.pwconv2(self.act(self.pwconv1(self.norm(y))))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class ConvNext(nn.Module):
    """ConvNeXt-style: a patchify stem, two blocks (depthwise conv,
    LayerNorm, GELU, pointwise MLP, layer scale), a LayerNorm'd head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 12, 2, stride=2)
        self.blocks = nn.Sequential(ConvNextBlock(12), ConvNextBlock(12))
        self.norm = nn.LayerNorm(12)
        self.head = nn.Linear(12, 4)

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.stem(x)).mean((2, 3))))


class RunningNorm(nn.Module):
    """A model with buffers that are not BatchNorm's: an online normaliser
    that scales each batch by the running mean and variance of the batches
    before it (an exponential average, updated in place in training), a
    step counter, and nn.Dropout between two layers. The update is written
    with .detach(): torch.no_grad() inside forward exports as a higher-order
    operator (wrap_with_set_grad_enabled) that Skein refuses in one line."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(10))
        self.register_buffer("var", torch.ones(10))
        self.register_buffer("seen", torch.zeros((), dtype=torch.long))
        self.net = nn.Sequential(nn.Linear(10, 24), nn.SiLU(), nn.Dropout(0.2), nn.Linear(24, 4))

    def forward(self, x):
        out = self.net((x - self.mean) / torch.sqrt(self.var + 1e-5))
        if self.training:
            self.mean.mul_(0.9).add_(x.detach().mean(0), alpha=0.1)
            self.var.mul_(0.9).add_(x.detach().var(0), alpha=0.1)
            self.seen.add_(1)
        return out


# name: (module class, a sample's shape, the targets: classes, or "lm")
ZOO = {
    "resnet": (ResNet, (1, 8, 8), 4),
    "encoder": (Encoder, (6, 16), 4),
    "tiny_lm": (TinyLm, (TinyLm.CONTEXT,), "lm"),
    "gru": (Recurrent, (6, 5), 4),
    "convnext": (ConvNext, (1, 8, 8), 4),
    "running_norm": (RunningNorm, (10,), 4),
}


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def loss_of(out, y):
    """Cross entropy over the last dimension (a language model's positions too)."""
    return nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def batches(name, steps=STEPS, seed=7):
    make_module, shape, targets = ZOO[name]
    g = torch.Generator().manual_seed(seed)
    if targets == "lm":
        tokens = torch.randint(0, TinyLm.VOCAB, (steps, BATCH, TinyLm.CONTEXT + 1), generator=g)
        return tokens[..., :-1].float(), tokens[..., 1:]
    x = torch.randn(steps, BATCH, *shape, generator=g)
    return x, torch.randint(0, targets, (steps, BATCH), generator=g)


def module_of(name):
    torch.manual_seed(0)
    return ZOO[name][0]()


def export(module, sample, path):
    batch = torch.export.Dim("batch", min=1, max=1024)
    module.train()
    program = torch.export.export(module, (sample,), dynamic_shapes={"x": {0: batch}})
    torch.export.save(program, path)


def make(out, name):
    module = module_of(name)
    x, y = batches(name)
    export(module, x[0, :4].clone(), f"{out}/{name}.pt2")
    torch.save({"x": x, "y": y, "seed": SEED}, f"{out}/{name}_batches.pt")
    np.save(f"{out}/{name}_x.npy", x.reshape(-1, *x.shape[2:]).numpy())
    np.save(f"{out}/{name}_y.npy", y.reshape(-1, *y.shape[2:]).numpy())
    tx, ty = batches(name, 8, seed=8)
    np.save(f"{out}/{name}_tx.npy", tx.reshape(-1, *tx.shape[2:]).numpy())
    np.save(f"{out}/{name}_ty.npy", ty.reshape(-1, *ty.shape[2:]).numpy())
    module.train()
    opt = torch.optim.SGD(module.parameters(), lr=LR, momentum=MOMENTUM)
    torch.manual_seed(SEED)
    losses = []
    for s in range(STEPS):
        opt.zero_grad()
        loss = loss_of(module(x[s]), y[s])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    module.eval()
    with torch.no_grad():
        ref = dict(module.state_dict())
        ref["__eval_outputs__"] = module(x[0])
    ref["losses"] = torch.tensor(losses, dtype=torch.float64)
    torch.save(ref, f"{out}/{name}_ref.pt")


def ddp(out, name, rank, port):
    import datetime

    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, timeout=datetime.timedelta(seconds=120))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
    module = module_of(name)
    x = torch.from_numpy(np.load(f"{out}/{name}_x.npy"))
    y = torch.from_numpy(np.load(f"{out}/{name}_y.npy"))
    rows = torch.from_numpy(np.load(f"{out}/{name}_rows.npy")).long()
    model = DistributedDataParallel(module)  # broadcast_buffers=True, its default
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    losses = []
    model.train()
    for step in rows:
        mine = step[rank]
        opt.zero_grad()
        loss = loss_of(model(x[mine]), y[mine])
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        losses.append(mean.item() / 2)
    model.eval()
    with torch.no_grad():  # through DDP: its first eval forward takes rank 0's buffers, as skein's evaluation does
        out_test = model(torch.from_numpy(np.load(f"{out}/{name}_tx.npy")))
    if rank == 0:
        ty = torch.from_numpy(np.load(f"{out}/{name}_ty.npy"))
        state = dict(module.state_dict())
        state["losses"] = torch.tensor(losses, dtype=torch.float64)
        state["test_loss"] = torch.tensor(loss_of(out_test, ty).item(), dtype=torch.float64)
        state["test_accuracy"] = torch.tensor((out_test.argmax(-1) == ty).double().mean().item(), dtype=torch.float64)
        torch.save(state, f"{out}/{name}_ddp.pt")
    dist.barrier()
    dist.destroy_process_group()


def run_exported(pt2, inputs):
    module = torch.export.load(pt2).module()  # an inference program: in eval mode as exported
    with torch.no_grad():
        return module(torch.from_numpy(np.load(inputs)).float())


def deterministic(pt2, inputs):
    first, second = run_exported(pt2, inputs), run_exported(pt2, inputs)
    if not torch.equal(first, second):
        fail(f"{pt2} gives other outputs on a second call: max difference {(first - second).abs().max().item()}")
    np.save(inputs + ".py.npy", first.numpy())
    print("ok")


def same(pt2, inputs, expected):
    out = run_exported(pt2, inputs)
    want = torch.from_numpy(np.load(expected)).float()
    if out.shape != want.shape:
        fail(f"outputs of shape {tuple(out.shape)}, skein's {tuple(want.shape)}")
    diff = (out - want).abs().max().item()
    if diff > 1e-5 * max(want.abs().max().item(), 1.0):
        fail(f"outputs differ from skein's by up to {diff}")
    print("ok", diff)


def main(argv):
    if argv[0] == "list":
        print("\n".join(ZOO))
    elif argv[0] == "make":
        make(argv[1], argv[2])
    elif argv[0] == "ddp":
        ddp(argv[1], argv[2], int(argv[3]), int(argv[4]))
    elif argv[0] == "deterministic":
        deterministic(argv[1], argv[2])
    elif argv[0] == "same":
        same(argv[1], argv[2], argv[3])
    else:
        fail(f"unknown subcommand {argv[0]}")


if __name__ == "__main__":
    main(sys.argv[1:])
