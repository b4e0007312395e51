"""Hostile torch.save files for tests/test_bad_input.cpp, written with
Debian's python3-torch. Each subcommand writes OUT and exits 0.

  deep OUT N                 a pickle of N tuples nested in each other
  memo OUT SLOT              a 9-byte pickle that memoizes None in slot SLOT
  deflated OUT MIB           a deflated pickle of MIB MiB (None pushed and popped)
  tensors OUT                {"inputs", "targets"} whose inputs claim 16x64 floats over a storage of 1
  short_record OUT           {"inputs", "targets"} whose inputs' record holds 4 of its 4000 bytes
  state_dict IN OUT          IN (a state dict) with its first matrix over a storage of 1 float;
                             prints its name and how many elements it reaches
  shared OUT N MIB           a {"inputs", "targets"} file whose inputs' storage (MIB MiB) is named N times more
"""
import collections
import sys
import zipfile

import torch


def archive(out, pickle, compression=zipfile.ZIP_STORED):
    """A zip archive as torch.save lays it out, holding `pickle` as data.pkl."""
    with zipfile.ZipFile(out, "w") as z:
        z.writestr(zipfile.ZipInfo("archive/data.pkl"), pickle, compress_type=compression)
        z.writestr("archive/version", "3\n")


class Overreaching:
    """Pickles as a tensor of `size` and `stride` over `storage`, whatever its length."""

    def __init__(self, storage, size, stride):
        self.storage, self.size, self.stride = storage, tuple(size), tuple(stride)

    def __reduce_ex__(self, protocol):
        return (torch._utils._rebuild_tensor_v2,
                (self.storage, 0, self.size, self.stride, False, collections.OrderedDict()))


def main(command, out, *args):
    if command == "deep":
        n = int(args[0])
        archive(out, b"\x80\x02" + b"(" * n + b"t" * n + b".")
    elif command == "memo":
        archive(out, b"\x80\x02N" + b"r" + int(args[0]).to_bytes(4, "little") + b".")
    elif command == "deflated":
        pairs = int(args[0]) << 19
        archive(out, b"\x80\x02" + b"N0" * pairs + b"}.", zipfile.ZIP_DEFLATED)
    elif command == "tensors":
        torch.save({"inputs": Overreaching(torch.zeros(1).storage(), (16, 64), (64, 1)),
                    "targets": torch.zeros(16, dtype=torch.long)}, out)
    elif command == "short_record":
        torch.save({"inputs": torch.zeros(1000), "targets": torch.zeros(1000, dtype=torch.long)}, out)
        with zipfile.ZipFile(out) as z:
            records = [(info, z.read(info)) for info in z.infolist()]
        with zipfile.ZipFile(out, "w") as z:
            for info, data in records:
                z.writestr(info, data[:4] if info.filename.endswith("/data/0") else data)
    elif command == "state_dict":
        state = torch.load(out, weights_only=True)
        name = next(k for k, v in state.items() if v.dim() == 2)
        state[name] = Overreaching(torch.zeros(1).storage(), state[name].shape, state[name].stride())
        torch.save(state, args[0])
        print(name, state[name].size[0] * state[name].size[1])
    elif command == "shared":
        x = torch.zeros(int(args[1]) << 18).reshape(-1, 16)
        # Views are distinct tensors: each names the storage again.
        torch.save({"inputs": x, "targets": torch.zeros(len(x), dtype=torch.long),
                    "views": [x.view(-1) for _ in range(int(args[0]))]}, out)
    else:
        raise SystemExit("unknown command " + command)


if __name__ == "__main__":
    main(*sys.argv[1:])
