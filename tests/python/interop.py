"""Python side of tests/test_interop.cpp: writes TorchScript modules, state
dicts and .npy files with the torch and numpy of the libtorch under test
(Debian's python3-torch 1.13, or PyPI's torch 2.x in its venv), and checks
what skein exports. Files skein writes for Python load with
torch.load(..., weights_only=True), PyTorch's default since 2.6. Each subcommand exits 0 on success and 1, with a line on
stderr, when a check fails."""
import collections
import hashlib
import json
import warnings
import sys
from typing import Tuple

import numpy as np
import torch
from torch import nn


class Classifier(nn.Module):
    """A small CNN for [N, 1, 8, 8] inputs and 4 classes: BatchNorm buffers,
    dropout (train/eval mode), control flow in forward, an extra attribute
    and method that callbacks can reach."""

    def __init__(self, classes: int = 4):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(4 * 8 * 8, classes)
        self.scale: float = 1.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:  # tolerate [N, 8, 8]
            x = x.unsqueeze(1)
        h = self.features(x).flatten(1)
        return self.head(self.drop(h))

    @torch.jit.export
    def describe(self) -> float:
        return self.scale * 2.0


class Regressor(nn.Module):
    """An MLP for [N, 4] inputs with `outputs` outputs (no BatchNorm, no dropout)."""

    def __init__(self, outputs: int = 1):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class Scaled(Regressor):
    """The Regressor's parameters under the same names, other code: outputs x100."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x) * 100.0


class IntScale(Classifier):
    """A Classifier whose `scale` is an int: the script_probe callback's
    toDouble() on it fails libtorch's internal check."""

    def __init__(self):
        super().__init__()
        self.scale: int = 3

    @torch.jit.export
    def describe(self) -> float:
        return 2.0


class BadView(Regressor):
    """Fails inside TorchScript code at run time."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).view(-7, 3)


# Modules that reach files (a TorchScript file is a program). Each writes
# `target` when its code runs; skein must refuse them before that.
class FromFile(Regressor):
    def __init__(self, target: str):
        super().__init__(1)
        self.target = target

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.net(x)
        if x.numel() > 0:  # in a nested block
            t = torch.from_file(self.target, shared=True, size=4, dtype=torch.uint8).fill_(65)
            y = y + t.sum() * 0
        return y


def save_copy(t: torch.Tensor, path: str) -> torch.Tensor:
    torch.save(t, path)
    return t


class SaveInForkedHelper(FromFile):
    """torch.save in a free function, called from a method run by fork, in a branch."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 1e9:
            return x
        fut = torch.jit.fork(self.helper, x)
        return torch.jit.wait(fut)

    def helper(self, x: torch.Tensor) -> torch.Tensor:
        return save_copy(self.net(x), self.target)


class Tripwire(nn.Module):
    """A submodule whose __setstate__ writes a file while torch.jit.load reads it."""

    def __init__(self, target: str):
        super().__init__()
        self.target = target

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    @torch.jit.export
    def __getstate__(self) -> Tuple[str, bool]:
        return (self.target, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[str, bool]) -> None:
        self.target = state[0]
        self.training = state[1]
        torch.save(torch.zeros(1), self.target)


class SaveInSetstate(Regressor):
    def __init__(self, target: str):
        super().__init__(1)
        self.trip = Tripwire(target)


class TwoInputs(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class Mlp(nn.Module):
    """The same network as skein's mlp plugin (flatten, Linear+ReLU per hidden width)."""

    def __init__(self, inputs: int, hidden, classes: int):
        super().__init__()
        layers = [nn.Flatten()]
        for width in hidden:
            layers += [nn.Linear(inputs, width), nn.ReLU()]
            inputs = width
        layers.append(nn.Linear(inputs, classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class MseLoss(nn.Module):
    """skein's mse, written in Python: targets [N] fit outputs [N, 1]."""

    def forward(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.mse_loss(outputs, targets.view_as(outputs).to(outputs.dtype))


class CrossEntropyLoss(nn.Module):
    def forward(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return nn.functional.cross_entropy(outputs, targets)


class PerSampleLoss(nn.Module):
    """Forgets to reduce: one value per sample."""

    def forward(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return (outputs - targets.view_as(outputs)) ** 2


def model_inputs(x, about):
    """Raw inputs x [N, ...] scaled as an export's FILE.json says."""
    for step in about["input_scaling"]:
        x = x / step["divide_by"]
        for key, apply in (("mean", torch.sub), ("std", torch.div)):
            v = torch.tensor(step[key])
            if step["from"] == "standardize":
                v = v.reshape(x.shape[1:])  # one value per element of a sample
            elif v.numel() > 1:
                v = v.reshape((-1,) + (1,) * (x.dim() - 2))  # one per channel
            x = apply(x, v)
    return x


def fail(message):
    print("interop.py: " + message, file=sys.stderr)
    sys.exit(1)


def close(a, b, what, atol=1e-5):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        fail(f"{what}: shapes {a.shape} and {b.shape} differ")
    diff = float(np.max(np.abs(a - b))) if a.size else 0.0
    if diff > atol:
        fail(f"{what}: outputs differ by up to {diff}")
    print(f"{what}: equal (max difference {diff:.3g})")


def lr_schedules(steps):
    """The rate each optimizer step uses under PyTorch's schedulers, for
    test_lr_scheduler: warm-up then cosine or linear decay, and one-cycle."""
    S = torch.optim.lr_scheduler
    warnings.filterwarnings("ignore", category=UserWarning)  # SequentialLR's own step(epoch) call

    def run(make):
        opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
        sched = make(opt)
        rates = []
        for _ in range(steps):
            rates.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
        return rates

    warm = lambda opt: S.LinearLR(opt, start_factor=0.1, end_factor=1.0, total_iters=5)
    return {
        "warmup_cosine": run(lambda opt: S.SequentialLR(
            opt, [warm(opt), S.CosineAnnealingLR(opt, T_max=15, eta_min=0.001)], milestones=[5])),
        "warmup_linear": run(lambda opt: S.SequentialLR(
            opt, [warm(opt), S.LinearLR(opt, start_factor=1.0, end_factor=0.01, total_iters=15)], milestones=[5])),
        "one_cycle_cos": run(lambda opt: S.OneCycleLR(
            opt, max_lr=0.5, total_steps=steps, pct_start=0.3, cycle_momentum=False)),
        "one_cycle_linear": run(lambda opt: S.OneCycleLR(
            opt, max_lr=0.5, total_steps=steps, pct_start=0.25, anneal_strategy="linear", div_factor=10,
            final_div_factor=100, cycle_momentum=False)),
    }


def sklearn_scores():
    """Predictions and scikit-learn's scores of them, for test_scoring:
    4-class scores, binary logits, 2-column regression."""
    from sklearn import metrics as M
    rng = np.random.default_rng(7)
    n = 101
    labels = rng.integers(0, 4, n)
    labels[labels == 3] = rng.integers(0, 3, int((labels == 3).sum()))  # class 3 rare
    labels[:2] = 3
    scores = rng.standard_normal((n, 4)) + np.eye(4)[labels] * 1.2
    predicted = scores.argmax(1)
    binary = (rng.random(n) < 0.3).astype("float64")
    logits = np.round(rng.standard_normal(n) + binary, 1)  # rounded: ties
    truth = rng.standard_normal((n, 2)) * [1.0, 3.0] + [0.5, -2.0]
    guess = truth + rng.standard_normal((n, 2)) * [0.5, 2.0]
    per = lambda f: [float(v) for v in f(labels, predicted, average=None, labels=[0, 1, 2, 3], zero_division=0)]
    return {
        "scores": scores.tolist(), "labels": labels.tolist(),
        "logits": logits.tolist(), "binary": binary.tolist(),
        "guess": guess.tolist(), "truth": truth.tolist(),
        "precision": M.precision_score(labels, predicted, average="macro", zero_division=0),
        "recall": M.recall_score(labels, predicted, average="macro", zero_division=0),
        "f1": M.f1_score(labels, predicted, average="macro", zero_division=0),
        "precision_per_class": per(M.precision_score),
        "recall_per_class": per(M.recall_score),
        "f1_per_class": per(M.f1_score),
        "binary_f1": M.f1_score(binary, (logits > 0).astype("float64"), average="macro"),
        "roc_auc": M.roc_auc_score(binary, logits),
        # Each output's root of its MSE, averaged: what squared=False computed
        # before scikit-learn 1.6 dropped it.
        "rmse": float(np.mean(np.sqrt(M.mean_squared_error(truth, guess, multioutput="raw_values")))),
        "mae": M.mean_absolute_error(truth, guess),
        "r2": M.r2_score(truth, guess),
    }


def main(argv):
    torch.manual_seed(0)
    command, args = argv[0], argv[1:]
    if command == "script":  # script KIND OUT.pt
        kind, out = args
        module = {"classifier": lambda: Classifier(),
                  "regressor": lambda: Regressor(1),
                  "two_inputs": lambda: TwoInputs(),
                  "scaled": lambda: Scaled(1),
                  "int_scale": lambda: IntScale(),
                  "bad_view": lambda: BadView(1),
                  "mlp": lambda: Mlp(784, [256, 128], 10)}[kind]()
        torch.jit.script(module).save(out)
    elif command == "script_loss":  # script_loss KIND OUT.pt: a loss module, scripted
        kind, out = args
        torch.jit.script({"mse": MseLoss, "cross_entropy": CrossEntropyLoss, "per_sample": PerSampleLoss}[kind]()).save(out)
    elif command == "script_touching":  # script_touching KIND TARGET OUT.pt
        kind, target, out = args
        module = {"from_file": FromFile, "save_in_forked_helper": SaveInForkedHelper,
                  "save_in_setstate": SaveInSetstate}[kind](target)
        torch.jit.script(module).save(out)
    elif command == "sha256":  # sha256 FILE: prints its SHA-256
        with open(args[0], "rb") as f:
            print(hashlib.sha256(f.read()).hexdigest())
    elif command == "state_dict":  # state_dict MODEL.pt OUT.pt: a torch.save(state_dict) of a scripted model's shape
        model = torch.jit.load(args[0])
        with torch.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1) * 0.1)
        torch.save(model.state_dict(), args[1])
    elif command == "init_variants":  # init_variants MODEL.pt SD.pt DIR: the files people warm-start from
        model, sd, d = torch.jit.load(args[0]), torch.load(args[1], weights_only=True), args[2]
        model.load_state_dict(sd)
        # PyTorch's tutorial checkpoint; one param group pickles as APPEND.
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        torch.save({"epoch": 3, "model_state_dict": model.state_dict(),
                    "optimizer_state_dict": optimizer.state_dict(), "loss": 0.25}, f"{d}/tutorial.pt")
        torch.save(collections.OrderedDict(("module." + k, v) for k, v in sd.items()), f"{d}/ddp.pt")
        model.save(f"{d}/script.pt")
        partial = dict(sd)
        partial.pop(sorted(sd)[-1])
        partial["extra.weight"] = torch.zeros(2)
        torch.save(partial, f"{d}/partial.pt")
        torch.save({k: v for k, v in sd.items() if not k.endswith("num_batches_tracked")}, f"{d}/no_counters.pt")
    elif command == "lr_schedules":  # lr_schedules OUT.json: PyTorch's rate at each of 20 optimizer steps
        json.dump(lr_schedules(20), open(args[0], "w"))
    elif command == "sklearn_scores":  # sklearn_scores OUT.json: predictions and scikit-learn's scores
        json.dump(sklearn_scores(), open(args[0], "w"))
    elif command == "inputs":  # inputs OUT.npy DTYPE N D...
        out, dtype, dims = args[0], args[1], [int(d) for d in args[2:]]
        np.save(out, np.random.default_rng(0).standard_normal(dims).astype(dtype))
    elif command == "labels":  # labels OUT.npy N CLASSES [FIRST]: int64 class ids FIRST..FIRST+CLASSES-1
        out, n, classes = args[0], int(args[1]), int(args[2])
        first = int(args[3]) if len(args) > 3 else 0
        np.save(out, first + np.random.default_rng(1).integers(0, classes, n).astype("int64"))
    elif command == "tensors_file":  # tensors_file X.npy Y.npy OUT.pt: torch.save({"inputs": x, "targets": y})
        x, y = torch.from_numpy(np.load(args[0])), torch.from_numpy(np.load(args[1]))
        torch.save({"inputs": x, "targets": y}, args[2])
    elif command == "check_scaled_by_json":  # check_scaled_by_json EXPORTED.pt RAW.npy OUTPUTS.npy
        # A module exported --no-input-scaling, on raw inputs scaled as EXPORTED.pt.json says.
        about = json.load(open(args[0] + ".json"))
        x = model_inputs(torch.from_numpy(np.load(args[1])).float(), about)
        with torch.no_grad():
            got = torch.jit.load(args[0]).eval()(x).numpy()
        close(got, np.load(args[2]), "export on inputs scaled by its JSON vs skein predict")
    elif command == "check_torchscript":  # check_torchscript EXPORTED.pt INPUTS.npy OUTPUTS.npy
        module = torch.jit.load(args[0])
        module.eval()
        with torch.no_grad():
            got = module(torch.from_numpy(np.load(args[1])).float()).numpy()
        close(got, np.load(args[2]), "torch.jit.load(export) vs skein predict")
    elif command == "check_state_dict":  # check_state_dict EXPORTED.pt MODEL.pt INPUTS.npy OUTPUTS.npy
        module = torch.jit.load(args[1])
        module.load_state_dict(torch.load(args[0], weights_only=True))
        module.eval()
        with torch.no_grad():
            got = module(torch.from_numpy(np.load(args[2])).float()).numpy()
        close(got, np.load(args[3]), "state_dict export in the Python model vs skein predict")
    elif command == "same_state_dict":  # same_state_dict A.pt B.pt
        a, b = torch.load(args[0], weights_only=True), torch.load(args[1], weights_only=True)
        if sorted(a) != sorted(b):
            fail(f"names differ: {sorted(a)} vs {sorted(b)}")
        for k in a:
            close(a[k].numpy(), b[k].numpy(), k, atol=1e-6)
    elif command == "skorch_history":  # skorch_history HISTORY.json EPOCHS: skorch reads skein's history
        from skorch.history import History
        history = History.from_file(args[0])
        epochs = int(args[1])
        if len(history) != epochs or list(history[:, "epoch"]) != list(range(1, epochs + 1)):
            fail(f"skorch read {len(history)} epochs: {list(history[:, 'epoch'])}")
        if len(history[-1, "batches"]) == 0 or "train_loss" not in history[-1, "batches"][0]:
            fail("skorch's history has no batches with train_loss")
        float(history[-1, "valid_loss"])
    elif command == "npy_equal":  # npy_equal A.npy B.npy
        a, b = np.load(args[0]), np.load(args[1])
        if a.dtype != b.dtype:
            fail(f"dtypes {a.dtype} and {b.dtype} differ")
        close(a, b, "npy", atol=0)
    elif command == "npy_cases":  # npy_cases DIR: files for the .npy reader's tests
        d = args[0]
        base = np.arange(12).reshape(3, 4)
        for dtype in ["float32", "float64", "uint8", "int64", "int32", "bool", "float16", "int8", "int16"]:
            np.save(f"{d}/ok_{dtype}.npy", (base % 2 == 0) if dtype == "bool" else base.astype(dtype))
        np.save(f"{d}/scalar.npy", np.float32(3.5))
        np.save(f"{d}/empty.npy", np.zeros((0, 3), dtype="float32"))
        np.save(f"{d}/fortran.npy", np.asfortranarray(base.astype("float32")))
        np.save(f"{d}/object.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
        np.save(f"{d}/bigendian.npy", base.astype(">f4"))
        with open(f"{d}/ok_float32.npy", "rb") as f:
            data = f.read()
        with open(f"{d}/truncated.npy", "wb") as f:
            f.write(data[:-5])
    else:
        fail("unknown command " + command)


if __name__ == "__main__":
    main(sys.argv[1:])
