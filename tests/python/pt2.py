"""Python side of tests/test_pt2.cpp (PyPI's torch 2.x): exports modules with
torch.export, trains them eagerly for reference, writes hostile archives, and
checks what `skein export --format pt2` wrote. Each subcommand exits 0 on
success and 1, with a line on stderr, when a check fails.

  make DIR NAME            DIR/NAME.pt2, DIR/NAME_batches.pt ({"x": [S, B, ...],
                           "y": [S, B]}) and DIR/NAME_{sgd,adam}.pt: the state
                           dict after eager training on those batches
  custom DIR LIB           make's files for NAME "custom": a model calling the
                           custom operator skein_test::scaled_tanh of the
                           library LIB (tests/tools/custom_op.cpp)
  global DIR               DIR/mlp.pt2, 16 rows in DIR/x.npy and DIR/y.npy, and
                           DIR/global_sgd.pt: the state dict after 50 eager
                           steps of SGD on all 16 rows at once (what ddp on 2
                           processes of 8 rows each must equal)
  hostile DIR              DIR/{truncated,schema,unknown_op,cond,noise,floordiv,
                           stride0,bomb}.pt2: archives and programs Skein
                           refuses at load (crafted: a size division that
                           overflows, a stride-0 view of 2^30 elements, a
                           weight record of 256 MiB of deflated zeros), and
                           DIR/eval_mode.pt2: a module exported after .eval(),
                           DIR/bounded.pt2: an Mlp whose batch Dim is [1, 64]
  check_export PT2 SD X    torch.export.load(PT2).module() holds the state dict
                           SD (torch.save) and runs on X (.npy)
  check_outputs PT2 X Y    torch.export.load(PT2).module() on X (.npy) gives Y
                           (.npy, e.g. skein predict's) within 1e-4
"""
import io
import json
import sys
import zipfile

import numpy as np
import torch
from torch import nn

STEPS = 50
SEED = 1234  # set before each eager training, as tests/test_pt2.cpp sets it


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 3))

    def forward(self, x):
        return self.net(x)


class Cnn(nn.Module):
    """Convolutions with BatchNorm (running statistics, a counter) and pooling.
    No bias before BatchNorm: its gradient is zero but for rounding, which
    Adam would scale up to full steps, differently in any two programs."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class Transformer(nn.Module):
    """One encoder layer (batch_first; dropout 0, so that eager and skein draw
    nothing) on [N, 5, 8] sequences, mean-pooled. Without biases: attention's
    key bias has a zero gradient (softmax ignores a shift), see Cnn."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, bias=False)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


class Dropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.fc(x))


class Modes(nn.Module):
    """The operators whose train-mode arguments follow the mode under the
    rules with exceptions: an instance norm with running statistics
    (use_input_stats: false in eval) and one without (true in both), a batch
    norm without running statistics (training: true in both), RReLU (random
    slopes in training, their mean in eval) and alpha dropout."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 8)
        self.inorm = nn.InstanceNorm1d(2, track_running_stats=True)  # no affine: a batch norm follows (see Cnn)
        self.inorm_plain = nn.InstanceNorm1d(2)
        self.bn_batch = nn.BatchNorm1d(8, track_running_stats=False)
        self.rrelu = nn.RReLU()
        self.adrop = nn.AlphaDropout(0.2)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        h = self.fc(x).view(-1, 2, 4)
        h = self.inorm(h) + self.inorm_plain(h)
        h = self.bn_batch(h.reshape(-1, 8))
        return self.head(self.adrop(self.rrelu(h)))


class Noise(nn.Module):
    """Noise drawn in forward whatever the mode: nothing Skein could switch off."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return self.fc(x + torch.rand_like(x))


class Custom(nn.Module):
    """Calls a custom operator (torch.ops.skein_test.scaled_tanh, loaded first)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        return self.fc2(torch.ops.skein_test.scaled_tanh(self.fc1(x), 1.5))


class Cond(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: self.fc(t), lambda t: self.fc(-t), (x,))


MODELS = {"mlp": (Mlp, (6,)), "cnn": (Cnn, (1, 8, 8)), "transformer": (Transformer, (5, 8)),
          "dropout": (Dropout, (6,)), "custom": (Custom, (6,)), "modes": (Modes, (6,))}


def fail(message):
    print(message, file=sys.stderr)
    sys.exit(1)


def export(module, sample, path, most=None):
    batch = torch.export.Dim("batch", min=1, max=most) if most else torch.export.Dim("batch")
    program = torch.export.export(module, (sample,), dynamic_shapes={"x": {0: batch}})
    torch.export.save(program, path)


def make(out, name):
    make_module, shape = MODELS[name]
    torch.manual_seed(0)
    module = make_module()
    export(module, torch.randn(4, *shape), f"{out}/{name}.pt2")
    initial = {k: v.clone() for k, v in module.state_dict().items()}
    x = torch.randn(STEPS, 8, *shape)
    y = torch.randint(0, 3, (STEPS, 8))
    torch.save({"x": x, "y": y}, f"{out}/{name}_batches.pt")
    for opt_name in ("sgd", "adam"):
        module.load_state_dict(initial)
        module.train()
        params = list(module.parameters())
        opt = (torch.optim.SGD(params, lr=0.05, momentum=0.9) if opt_name == "sgd"
               else torch.optim.Adam(params, lr=0.01))
        torch.manual_seed(SEED)  # what random operators draw in training: skein's test seeds the same
        for s in range(STEPS):
            opt.zero_grad()
            nn.functional.cross_entropy(module(x[s]), y[s]).backward()
            opt.step()
        module.eval()
        with torch.no_grad():
            state = dict(module.state_dict())
            state["__eval_outputs__"] = module(x[0])
        torch.save(state, f"{out}/{name}_{opt_name}.pt")


def global_batch(out):
    torch.manual_seed(0)
    module = Mlp()
    export(module, torch.randn(4, 6), f"{out}/mlp.pt2")
    x = torch.randn(16, 6)
    y = torch.randint(0, 3, (16,))
    np.save(f"{out}/x.npy", x.numpy())
    np.save(f"{out}/y.npy", y.numpy())
    opt = torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)
    for _ in range(STEPS):
        opt.zero_grad()
        nn.functional.cross_entropy(module(x), y).backward()
        opt.step()
    torch.save(module.state_dict(), f"{out}/global_sgd.pt")


def rewrite(src, dst, change, record="models/model.json"):
    """Copies the archive `src` to `dst` with the JSON record ending in
    `record` passed through `change`."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.endswith(record):
                program = json.loads(data)
                change(program)
                data = json.dumps(program).encode()
            zout.writestr(item, data)


def deflate_bomb(src, dst, megabytes):
    """Copies the archive `src` to `dst` with its first weight record
    replaced by `megabytes` MiB of zeros, deflated (about 1/1000 of that)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            if item.filename.endswith("data/weights/weight_0"):
                info = zipfile.ZipInfo(item.filename)
                info.compress_type = zipfile.ZIP_DEFLATED
                with zout.open(info, "w", force_zip64=True) as out:
                    zeros = bytes(1 << 20)
                    for _ in range(megabytes):
                        out.write(zeros)
                continue
            zout.writestr(item, zin.read(item.filename))


def hostile(out):
    torch.manual_seed(0)
    export(Mlp(), torch.randn(4, 6), f"{out}/good.pt2")
    data = open(f"{out}/good.pt2", "rb").read()
    open(f"{out}/truncated.pt2", "wb").write(data[: len(data) // 2])

    def schema(program):
        program["schema_version"]["major"] = 99

    def unknown_op(program):
        program["graph_module"]["graph"]["nodes"][0]["target"] = "torch.ops.aten.not_an_operator.default"

    rewrite(f"{out}/good.pt2", f"{out}/schema.pt2", schema)
    rewrite(f"{out}/good.pt2", f"{out}/unknown_op.pt2", unknown_op)
    torch.export.save(torch.export.export(Cond(), (torch.randn(4, 6),)), f"{out}/cond.pt2")
    torch.export.save(torch.export.export(Noise(), (torch.randn(4, 6),)), f"{out}/noise.pt2")

    def floordiv(program):  # a size division of INT64_MIN by -1: SIGFPE in C++
        program["graph_module"]["graph"]["nodes"].insert(0, {
            "target": "_operator.floordiv",
            "inputs": [{"name": "a", "arg": {"as_int": -(2 ** 63)}, "kind": 1},
                       {"name": "b", "arg": {"as_int": -1}, "kind": 1}],
            "outputs": [{"as_sym_int": {"as_name": "crafted_floordiv"}}],
            "metadata": {}, "is_hop_single_tensor_return": None, "name": "crafted_floordiv"})

    def stride0(config):  # a bias of 2^30 elements over its 3 stored
        meta = config["config"]["net.4.bias"]["tensor_meta"]
        meta["sizes"] = [{"as_int": 16384}, {"as_int": 65536}]
        meta["strides"] = [{"as_int": 0}, {"as_int": 0}]

    rewrite(f"{out}/good.pt2", f"{out}/floordiv.pt2", floordiv)
    rewrite(f"{out}/good.pt2", f"{out}/stride0.pt2", stride0, "weights_config.json")
    deflate_bomb(f"{out}/good.pt2", f"{out}/bomb.pt2", 256)
    module = Dropout()
    module.eval()
    export(module, torch.randn(4, 6), f"{out}/eval_mode.pt2")
    export(Mlp(), torch.randn(4, 6), f"{out}/bounded.pt2", most=64)


def check_export(pt2, state_dict, inputs):
    module = torch.export.load(pt2).module()
    trained = torch.load(state_dict, weights_only=True)
    mine = module.state_dict()
    if set(mine) != set(trained):
        fail(f"keys differ: {sorted(set(mine) ^ set(trained))}")
    for k, v in trained.items():
        if not torch.equal(mine[k], v):
            fail(f"{k}: the exported value differs from the trained one")
    x = torch.from_numpy(np.load(inputs)).float()
    out = module(x)
    if out.shape[0] != x.shape[0]:
        fail(f"outputs of shape {tuple(out.shape)} for inputs {tuple(x.shape)}")
    print("ok", tuple(out.shape))


def check_outputs(pt2, inputs, expected):
    module = torch.export.load(pt2).module()  # in eval mode as exported (.eval() raises)
    with torch.no_grad():
        out = module(torch.from_numpy(np.load(inputs)).float())
    want = torch.from_numpy(np.load(expected)).float()
    if out.shape != want.shape or not torch.allclose(out, want, atol=1e-4, rtol=1e-4):
        fail(f"outputs differ: max difference {(out - want).abs().max().item() if out.shape == want.shape else out.shape}")
    print("ok")


def main(argv):
    if argv[0] == "make":
        make(argv[1], argv[2])
    elif argv[0] == "custom":
        torch.ops.load_library(argv[2])
        make(argv[1], "custom")
    elif argv[0] == "global":
        global_batch(argv[1])
    elif argv[0] == "hostile":
        hostile(argv[1])
    elif argv[0] == "check_export":
        check_export(argv[1], argv[2], argv[3])
    elif argv[0] == "check_outputs":
        check_outputs(argv[1], argv[2], argv[3])
    else:
        fail(f"unknown subcommand {argv[0]}")


if __name__ == "__main__":
    main(sys.argv[1:])
