#include "skein/torch_file.hpp"

#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include "skein/errors.hpp"
#include "zip_record_sizes.hpp"

namespace skein {

namespace {

// Argument length of each pickle opcode of protocols 0-4 that takes a fixed
// number of bytes; see Python's Lib/pickletools.py for the opcode table.
int fixed_argument_bytes(unsigned char op) {
  switch (op) {
    case 0x80: /* PROTO */ case 'K': /* BININT1 */ case 'q': /* BINPUT */ case 'h': /* BINGET */
    case 0x82: /* EXT1 */
      return 1;
    case 'M': /* BININT2 */ case 0x83: /* EXT2 */
      return 2;
    case 'J': /* BININT */ case 'r': /* LONG_BINPUT */ case 'j': /* LONG_BINGET */ case 0x84: /* EXT4 */
      return 4;
    case 'G': /* BINFLOAT */ case 0x95: /* FRAME */
      return 8;
    default:
      return 0;
  }
}

// Opcodes followed by a length (of `n` bytes, little-endian) and that many bytes.
int counted_argument_bytes(unsigned char op) {
  switch (op) {
    case 'U': /* SHORT_BINSTRING */ case 'C': /* SHORT_BINBYTES */ case 0x8c: /* SHORT_BINUNICODE */
    case 0x8a: /* LONG1 */
      return 1;
    case 'X': /* BINUNICODE */ case 'T': /* BINSTRING */ case 'B': /* BINBYTES */ case 0x8b: /* LONG4 */
      return 4;
    case 0x8d: /* BINUNICODE8 */ case 0x8e: /* BINBYTES8 */ case 0x96: /* BYTEARRAY8 */
      return 8;
    default:
      return 0;
  }
}

// Opcodes whose argument is `n` newline-terminated lines.
int line_arguments(unsigned char op) {
  switch (op) {
    case 'c': /* GLOBAL */ case 'i': /* INST */
      return 2;
    case 'I': case 'L': case 'S': case 'V': case 'F': case 'p': case 'g': case 'P':
      return 1;
    default:
      return 0;
  }
}

// How an opcode without an argument moves the stack: values popped, pushed,
// and whether it first pops down to the last MARK. Protocol-2 opcodes only:
// libtorch's unpickler reads nothing else.
struct StackEffect {
  int pop = 0;
  int push = 0;
  bool to_mark = false;
};
std::optional<StackEffect> effect_of(unsigned char op) {
  switch (op) {
    case '(': return StackEffect{0, 0, false};  // MARK: handled by the caller
    case '.': case 0x80: case 'q': case 'r': case 'p': return StackEffect{};
    case 'N': case 0x88: case 0x89: case ')': case ']': case '}': case 'c': case 'h': case 'j': case 'g':
    case 'K': case 'M': case 'J': case 'G': case 'X': case 'U': case 'T': case 'B': case 'C': case 0x8a:
    case 0x8b: case 'I': case 'L': case 'S': case 'V': case 'F': case 'P': case '2':
      return StackEffect{0, 1, false};
    case 't': case 'l': case 'd': return StackEffect{0, 1, true};
    case 'e': case 'u': return StackEffect{0, 0, true};
    case '1': return StackEffect{0, 0, true};
    case 0x85: case 'Q': return StackEffect{1, 1, false};
    case 0x86: case 'R': case 0x81: return StackEffect{2, 1, false};
    case 0x87: return StackEffect{3, 1, false};
    case 'a': case '0': case 'b': return StackEffect{1, 0, false};
    case 's': return StackEffect{2, 0, false};
    default: return std::nullopt;
  }
}

std::uint64_t little_endian(const std::string& s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// A value on the simulated stack: where its opcodes begin in the output.
struct Item {
  enum Kind { value, mark, od_class, od_dict } kind = value;
  std::size_t start = 0;
};

}  // namespace

// torch.save writes an OrderedDict as GLOBAL collections.OrderedDict (then
// memoized and fetched again with BINGET), EMPTY_TUPLE, REDUCE, its items
// (SETITEMS), then its attributes (BUILD). libtorch 1.13's unpickler makes
// that GLOBAL None and cannot BUILD, and knows no opcode to drop a value. So
// the stream is replayed on a simulated stack that records where each value's
// opcodes begin in the output, and:
//   the class and its memo slot are left out;
//   REDUCE of the class on an empty tuple becomes EMPTY_DICT;
//   BUILD on such a dict is left out together with its argument's opcodes.
std::string plain_dict_pickle(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  std::vector<Item> stack;
  std::set<std::uint64_t> od_slots;                // memo slots that hold the class
  std::map<std::uint64_t, std::size_t> memo_at;   // memo slot -> output offset of its PUT
  std::set<std::uint64_t> dropped_slots;           // PUTs cut out with a BUILD argument
  const std::string od_global = "collections\nOrderedDict\n";
  auto fail = [](const std::string& why) { throw std::runtime_error("unsupported pickle: " + why); };
  auto pop = [&]() {
    if (stack.empty()) fail("stack underflow");
    Item top = stack.back();
    stack.pop_back();
    return top;
  };
  auto cut = [&](std::size_t at) {  // drops out[at..]
    out.resize(at);
    for (auto it = memo_at.begin(); it != memo_at.end();) {
      if (it->second >= at) {
        dropped_slots.insert(it->first);
        it = memo_at.erase(it);
      } else {
        ++it;
      }
    }
  };
  std::size_t i = 0;
  auto need = [&](std::uint64_t n) {
    if (n > in.size() - i) fail("truncated");
  };
  while (i < in.size()) {
    const auto op = static_cast<unsigned char>(in[i]);
    const std::size_t op_at = i++;
    // The argument's length.
    std::size_t arg = 0;
    if (int n = fixed_argument_bytes(op)) {
      arg = static_cast<std::size_t>(n);
    } else if (int n = counted_argument_bytes(op)) {
      need(static_cast<std::size_t>(n));
      const std::uint64_t length = little_endian(in, i, n);
      need(length);  // before adding: a length near 2^64 must not wrap
      arg = static_cast<std::size_t>(n) + static_cast<std::size_t>(length);
    } else if (int lines = line_arguments(op)) {
      std::size_t j = i;
      for (int l = 0; l < lines; ++l) {
        j = in.find('\n', j);
        if (j == std::string::npos) fail("truncated");
        ++j;
      }
      arg = j - i;
    }
    need(arg);
    const std::size_t out_at = out.size();
    const bool is_put = op == 'q' || op == 'r';
    const bool is_get = op == 'h' || op == 'j';
    const std::uint64_t slot = (is_put || is_get) ? little_endian(in, i, op == 'q' || op == 'h' ? 1 : 4) : 0;
    i += arg;

    if (op == 'c' && in.compare(op_at + 1, arg, od_global) == 0) {
      stack.push_back({Item::od_class, out_at});
      continue;
    }
    if (is_put && !stack.empty() && stack.back().kind == Item::od_class) {
      od_slots.insert(slot);
      continue;
    }
    if (is_get && od_slots.count(slot)) {
      stack.push_back({Item::od_class, out_at});
      continue;
    }
    if (is_get && dropped_slots.count(slot)) fail("a value of a dropped OrderedDict attribute is used again");
    if (op == 'R' && stack.size() >= 2 && stack[stack.size() - 2].kind == Item::od_class) {
      const Item args = pop();
      const Item cls = pop();
      if (out.compare(args.start, std::string::npos, ")") != 0) fail("an OrderedDict built with arguments");
      cut(cls.start);
      out += '}';
      stack.push_back({Item::od_dict, cls.start});
      continue;
    }
    if (op == 'b' && stack.size() >= 2 && stack[stack.size() - 2].kind == Item::od_dict) {
      cut(pop().start);  // the attributes go, the dict stays
      continue;
    }

    out.append(in, op_at, 1 + arg);
    if (is_put) memo_at[slot] = out_at;
    if (op == '(') {
      stack.push_back({Item::mark, out_at});
      continue;
    }
    const auto effect = effect_of(op);
    if (!effect) fail("opcode " + std::to_string(op) + " (protocol 2 only)");
    // The class (left out of the output) may only be called or memoized.
    auto pop_value = [&]() {
      const Item item = pop();
      if (item.kind == Item::od_class) fail("OrderedDict used other than as OrderedDict()");
      return item;
    };
    if (op == '2' && !stack.empty() && stack.back().kind == Item::od_class) fail("OrderedDict duplicated");
    std::size_t start = out_at;
    if (effect->to_mark) {
      while (!stack.empty() && stack.back().kind != Item::mark) pop_value();
      if (stack.empty()) fail("no MARK");
      start = pop().start;
      // SETITEMS/APPENDS leave the container below the mark, with its own start.
      if (effect->push == 0) continue;
    }
    for (int k = 0; k < effect->pop; ++k) start = pop_value().start;
    for (int k = 0; k < effect->push; ++k) stack.push_back({Item::value, start});
    if (op == '.') break;
  }
  return out;
}

namespace {

// A zip archive written by torch.save: <archive>/data.pkl, tensors in <archive>/data/.
c10::IValue unpickle(const std::string& path) {
  check_zip_record_sizes(path);  // the reader allocates each record's declared size
  caffe2::serialize::PyTorchStreamReader reader(path);
  if (!reader.hasRecord("data.pkl")) throw std::runtime_error("no data.pkl in the archive");
  auto [pkl_ptr, pkl_size] = reader.getRecord("data.pkl");
  const std::string pickle =
      plain_dict_pickle(std::string(static_cast<const char*>(pkl_ptr.get()), pkl_size));
  std::size_t pos = 0;
  auto read = [&](char* buffer, std::size_t n) {
    const std::size_t take = std::min(n, pickle.size() - pos);
    std::memcpy(buffer, pickle.data() + pos, take);
    pos += take;
    return take;
  };
  auto read_record = [&](const std::string& name) { return std::get<0>(reader.getRecord("data/" + name)); };
  torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::Device(c10::kCPU));
  return unpickler.parse_ivalue();
}

}  // namespace


c10::IValue read_torch_save(const std::string& path) {
  try {
    return unpickle(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "' is not a file saved by torch.save (" + first_line(e.what()) + ")");
  }
}

}  // namespace skein
