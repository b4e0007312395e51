#include "skein/torch_file.hpp"

#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <vector>

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
namespace {

// One pass of plain_dict_pickle over `in`: the output so far, the simulated
// stack and the memo slots the rewriting affects.
class PlainDictRewriter {
 public:
  explicit PlainDictRewriter(const std::string& in) : in_(in) { out_.reserve(in.size()); }

  std::string run() {
    while (at_ < in_.size()) {
      const Op op = next_op();
      if (rewrite_ordered_dict(op)) continue;
      if (!copy(op)) break;  // STOP
    }
    return std::move(out_);
  }

 private:
  // An opcode read from the input: where it and its argument start, and its memo slot.
  struct Op {
    unsigned char code = 0;
    std::size_t at = 0, arg = 0;  // input offset of the opcode, argument length
    std::size_t out_at = 0;       // output offset it would be copied to
    bool is_put = false, is_get = false;
    std::uint64_t slot = 0;       // of a PUT or GET
  };

  [[noreturn]] static void fail(const std::string& why) { throw std::runtime_error("unsupported pickle: " + why); }

  void need(std::uint64_t n) const {
    if (n > in_.size() - at_) fail("truncated");
  }

  // The length of the argument that starts at at_, for opcode `op`.
  std::size_t argument_length(unsigned char op) const {
    if (int n = fixed_argument_bytes(op)) return static_cast<std::size_t>(n);
    if (int n = counted_argument_bytes(op)) {
      need(static_cast<std::size_t>(n));
      const std::uint64_t length = little_endian(in_, at_, n);
      need(length);  // before adding: a length near 2^64 must not wrap
      return static_cast<std::size_t>(n) + static_cast<std::size_t>(length);
    }
    std::size_t j = at_;
    for (int l = 0; l < line_arguments(op); ++l) {
      j = in_.find('\n', j);
      if (j == std::string::npos) fail("truncated");
      ++j;
    }
    return j - at_;
  }

  // Reads the opcode at at_ and its argument; at_ moves past both.
  Op next_op() {
    Op op;
    op.code = static_cast<unsigned char>(in_[at_]);
    op.at = at_++;
    op.arg = argument_length(op.code);
    need(op.arg);
    op.out_at = out_.size();
    op.is_put = op.code == 'q' || op.code == 'r';
    op.is_get = op.code == 'h' || op.code == 'j';
    if (op.is_put || op.is_get) op.slot = little_endian(in_, at_, op.code == 'q' || op.code == 'h' ? 1 : 4);
    at_ += op.arg;
    return op;
  }

  Item pop() {
    if (stack_.empty()) fail("stack underflow");
    Item top = stack_.back();
    stack_.pop_back();
    return top;
  }
  // The class (left out of the output) may only be called or memoized.
  Item pop_value() {
    const Item item = pop();
    if (item.kind == Item::od_class) fail("OrderedDict used other than as OrderedDict()");
    return item;
  }
  bool below_top_is(Item::Kind kind) const { return stack_.size() >= 2 && stack_[stack_.size() - 2].kind == kind; }

  // Drops out_[at..], and forgets the memo slots PUT there.
  void cut(std::size_t at) {
    out_.resize(at);
    for (auto it = memo_at_.begin(); it != memo_at_.end();) {
      if (it->second >= at) {
        dropped_slots_.insert(it->first);
        it = memo_at_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // The OrderedDict cases (see plain_dict_pickle): true when `op` was handled.
  bool rewrite_ordered_dict(const Op& op) {
    static const std::string od_global = "collections\nOrderedDict\n";
    if (op.code == 'c' && in_.compare(op.at + 1, op.arg, od_global) == 0) {
      stack_.push_back({Item::od_class, op.out_at});
      return true;
    }
    if (op.is_put && !stack_.empty() && stack_.back().kind == Item::od_class) {
      od_slots_.insert(op.slot);
      return true;
    }
    if (op.is_get && od_slots_.count(op.slot)) {
      stack_.push_back({Item::od_class, op.out_at});
      return true;
    }
    if (op.is_get && dropped_slots_.count(op.slot)) fail("a value of a dropped OrderedDict attribute is used again");
    if (op.code == 'R' && below_top_is(Item::od_class)) {
      const Item args = pop();
      const Item cls = pop();
      if (out_.compare(args.start, std::string::npos, ")") != 0) fail("an OrderedDict built with arguments");
      cut(cls.start);
      out_ += '}';
      stack_.push_back({Item::od_dict, cls.start});
      return true;
    }
    if (op.code == 'b' && below_top_is(Item::od_dict)) {
      cut(pop().start);  // the attributes go, the dict stays
      return true;
    }
    return false;
  }

  // Copies `op` to the output and applies its stack effect; false for STOP.
  bool copy(const Op& op) {
    out_.append(in_, op.at, 1 + op.arg);
    if (op.is_put) memo_at_[op.slot] = op.out_at;
    if (op.code == '(') {
      stack_.push_back({Item::mark, op.out_at});
      return true;
    }
    const auto effect = effect_of(op.code);
    if (!effect) fail("opcode " + std::to_string(op.code) + " (protocol 2 only)");
    if (op.code == '2' && !stack_.empty() && stack_.back().kind == Item::od_class) fail("OrderedDict duplicated");
    std::size_t start = op.out_at;
    if (effect->to_mark) {
      while (!stack_.empty() && stack_.back().kind != Item::mark) pop_value();
      if (stack_.empty()) fail("no MARK");
      start = pop().start;
      // SETITEMS/APPENDS leave the container below the mark, with its own start.
      if (effect->push == 0) return true;
    }
    for (int k = 0; k < effect->pop; ++k) start = pop_value().start;
    for (int k = 0; k < effect->push; ++k) stack_.push_back({Item::value, start});
    return op.code != '.';
  }

  const std::string& in_;
  std::size_t at_ = 0;  // input offset of the next opcode
  std::string out_;
  std::vector<Item> stack_;
  std::set<std::uint64_t> od_slots_;               // memo slots that hold the class
  std::map<std::uint64_t, std::size_t> memo_at_;   // memo slot -> output offset of its PUT
  std::set<std::uint64_t> dropped_slots_;          // PUTs cut out with a BUILD argument
};

}  // namespace

std::string plain_dict_pickle(const std::string& in) { return PlainDictRewriter(in).run(); }

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
