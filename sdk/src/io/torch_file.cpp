#include "skein/io/torch_file.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_set>
#include <vector>

#include <c10/util/StringUtil.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include "skein/errors.hpp"
#include "skein/io/input_file.hpp"
#include "skein/io/memory.hpp"
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
// and whether it first pops down to the last MARK. Protocol-2 opcodes only
// (and not the memo's text forms): libtorch's unpickler reads nothing else.
struct StackEffect {
  int pop = 0;
  int push = 0;
  bool to_mark = false;
};
std::optional<StackEffect> effect_of(unsigned char op) {
  switch (op) {
    case '(': return StackEffect{0, 0, false};  // MARK: handled by the caller
    case '.': case 0x80: case 'q': case 'r': return StackEffect{};
    case 'N': case 0x88: case 0x89: case ')': case ']': case '}': case 'c': case 'h': case 'j':
    case 'K': case 'M': case 'J': case 'G': case 'X': case 'U': case 'T': case 'B': case 'C': case 0x8a:
    case 0x8b: case 'I': case 'L': case 'S': case 'V': case 'F': case 'P': case '2':
      return StackEffect{0, 1, false};
    case 't': case 'l': case 'd': return StackEffect{0, 1, true};
    case 'e': case 'u': return StackEffect{0, 0, true};
    case '1': return StackEffect{0, 0, true};
    case 0x85: case 'Q': return StackEffect{1, 1, false};
    // BUILD as libtorch reads it: a call of the value below on the top one.
    case 0x86: case 'R': case 0x81: case 'b': return StackEffect{2, 1, false};
    case 0x87: return StackEffect{3, 1, false};
    case 'a': case '0': return StackEffect{1, 0, false};
    case 's': return StackEffect{2, 0, false};
    default: return std::nullopt;
  }
}

std::uint64_t little_endian(std::string_view s, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// A problem of a file that is a torch.save archive, reported as "PATH: what".
class FileProblem : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Values nested deeper than this are refused: libtorch frees a value by
// recursion, one stack frame or more per level, and Python stops at 1000.
constexpr std::uint32_t kMaxDepth = 1000;

// What reading one file may allocate: no more than the machine's memory, and
// no more than 64 MiB plus 64 times the file's size. torch.save stores its
// records uncompressed and its pickle holds a few opcodes per tensor, so a
// file it wrote needs about its own size; the bound stops a small file whose
// pickle or compressed records would take gigabytes.
class MemoryBudget {
 public:
  explicit MemoryBudget(std::uint64_t file_size) : file_size_(file_size) {
    constexpr std::uint64_t kFloor = 64ull << 20, kPerByte = 64;
    const std::uint64_t by_file =
        file_size > (std::numeric_limits<std::uint64_t>::max() - kFloor) / kPerByte ? std::numeric_limits<std::uint64_t>::max()
                                                                                   : kFloor + kPerByte * file_size;
    machine_ = physical_memory_bytes();
    limit_ = std::min(by_file, machine_);
  }

  // Counts `bytes` more; throws FileProblem once the total passes the bound.
  void charge(std::uint64_t bytes, const char* what) {
    used_ = bytes > limit_ - std::min(used_, limit_) ? limit_ + 1 : used_ + bytes;
    if (used_ <= limit_) return;
    throw FileProblem(std::string(what) + " would take more than " +
                      (limit_ == machine_ ? "this machine's memory (" + format_bytes(static_cast<double>(limit_)) + ")"
                                          : format_bytes(static_cast<double>(limit_)) + " of memory (64 MiB and 64 times the file's " +
                                                format_bytes(static_cast<double>(file_size_)) + ")") +
                      " to read; a file written by torch.save takes about its own size");
  }

 private:
  std::uint64_t file_size_, machine_ = 0, limit_ = 0, used_ = 0;
};

// Roughly the most libtorch's unpickler (and the rewriting below) allocates
// for one opcode: a value on its stack or in a container, a container, a
// tensor built by a call. Peak RSS over 2 million opcodes of a kind with
// libtorch 1.13 (bytes per opcode): an empty dict 447, an empty list 111,
// None and a tuple of it 72, a 4-character string 97, a dict item's key or
// value 116; rounded up.
std::uint64_t unpickling_bytes(unsigned char op, std::size_t argument) {
  switch (op) {
    case '(': case 0x80: case '.': case '0': case '1': return 16;
    case 'q': case 'r': return 48;  // a memo slot, here and there
    case '}': case 'd': return 512;
    case ']': case 'l': return 256;
    case ')': case 't': case 0x85: case 0x86: case 0x87: return 128;
    case 'R': case 'b': case 0x81: case 'Q': case 'P': return 1024;
    default: return 128 + (counted_argument_bytes(op) || line_arguments(op) ? argument : 0);
  }
}

// A value on the simulated stack: where its opcodes begin in the output, and
// its node (see Node).
struct Item {
  enum Kind { value, mark, od_class, od_dict } kind = value;
  std::size_t start = 0;
  std::size_t node = 0;  // of a value or od_dict
};

// What the simulation knows of a value, shared by its copies on the stack
// and in the memo: how deep containers nest in it, and whether it may still
// change. A value put into another (or passed to a call) is frozen, so the
// depth its container took from it stays true; a container that is frozen
// may not change, which no pickle of Python's or libtorch's pickler does.
struct Node {
  std::uint32_t depth = 0;
  bool frozen = false;
};

// A memo slot of the input: the OrderedDict class, or the node PUT there and
// its slot in the output, unless its opcodes were cut from the output.
struct Slot {
  bool written = false, od_class = false, dropped = false;
  std::size_t node = 0;
  std::uint64_t out = 0;
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
// The replay also refuses what would make libtorch's unpickler crash or
// allocate without bound: values nested deeper than kMaxDepth (freed by
// recursion), memo slots far beyond those written (a 5-byte LONG_BINPUT
// resizes its memo to the slot; the output numbers its slots 0, 1, 2, ...
// again, as the class and cut values leave gaps), SETITEMS of an odd count (read past its
// stack), quantized and sparse tensors (built from unchecked tensors), and,
// with a budget, more opcodes than the budget's memory could hold.
namespace {

class PlainDictRewriter {
 public:
  PlainDictRewriter(std::string_view in, MemoryBudget* budget) : in_(in), budget_(budget) {
    if (budget_) budget_->charge(in.size(), "its pickle");  // out_
    out_.reserve(in.size());
  }

  std::string run() {
    while (at_ < in_.size()) {
      const Op op = next_op();
      if (budget_) budget_->charge(unpickling_bytes(op.code, op.arg), "the values of its pickle");
      if (op.is_put) check_put(op.slot);
      if (op.code == 'c') check_global(op);
      if (rewrite_ordered_dict(op)) continue;
      if (!copy(op)) break;  // STOP
    }
    if (marks_.empty()) return std::move(out_);
    std::string out;  // out_ with the MARKs of rewritten APPENDs
    out.reserve(out_.size() + marks_.size());
    std::size_t from = 0;
    for (const std::size_t at : marks_) {
      out.append(out_, from, at - from);
      out += '(';
      from = at;
    }
    out.append(out_, from, std::string::npos);
    return out;
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
      if (j == std::string_view::npos) fail("truncated");
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

  // Picklers number memo slots 0, 1, 2, ...: a slot past the next one would
  // only make the unpickler's memo grow to it.
  void check_put(std::uint64_t slot) {
    if (slot > memo_.size())
      fail("memo slot " + std::to_string(slot) + " written when only " + std::to_string(memo_.size()) +
           " are in use");
    if (slot == memo_.size()) memo_.emplace_back();
  }
  Slot& slot_read(std::uint64_t slot) {
    if (slot >= memo_.size() || !memo_[slot].written)
      fail("memo slot " + std::to_string(slot) + " read before it is written");
    return memo_[slot];
  }
  // Writes the output's slot number over the argument of a PUT or GET just copied.
  void renumber(const Op& op, std::uint64_t out_slot) {
    const int width = op.code == 'q' || op.code == 'h' ? 1 : 4;
    for (int i = 0; i < width; ++i) out_[op.out_at + 1 + i] = static_cast<char>((out_slot >> (8 * i)) & 0xff);
  }

  void check_global(const Op& op) const {
    const std::string_view name = in_.substr(op.at + 1, op.arg);
    for (const char* refused : {"torch._utils\n_rebuild_qtensor\n", "torch._utils\n_rebuild_sparse_tensor\n"})
      if (name == refused) fail("quantized and sparse tensors are not supported");
  }

  std::size_t new_node(std::uint32_t depth, bool frozen) {
    if (depth > kMaxDepth) fail("values nested more than " + std::to_string(kMaxDepth) + " deep");
    nodes_.push_back({depth, frozen});
    return nodes_.size() - 1;
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
    if (item.kind == Item::mark) fail("a MARK where a value was expected");
    return item;
  }
  bool below_top_is(Item::Kind kind) const { return stack_.size() >= 2 && stack_[stack_.size() - 2].kind == kind; }

  // Drops out_[at..], and forgets the memo slots PUT there.
  void cut(std::size_t at) {
    out_.resize(at);
    marks_.erase(marks_.lower_bound(at), marks_.end());
    // Puts are in output order: those cut are the last ones, and so are the
    // output slots they took first.
    while (!puts_.empty() && puts_.back().out_at >= at) {
      memo_[puts_.back().slot].dropped = true;
      if (puts_.back().took_slot) --next_out_slot_;
      puts_.pop_back();
    }
  }

  // The OrderedDict cases (see plain_dict_pickle): true when `op` was handled.
  bool rewrite_ordered_dict(const Op& op) {
    static const std::string_view od_global = "collections\nOrderedDict\n";
    if (op.code == 'c' && in_.substr(op.at + 1, op.arg) == od_global) {
      stack_.push_back({Item::od_class, op.out_at});
      return true;
    }
    if (op.is_put && !stack_.empty() && stack_.back().kind == Item::od_class) {
      memo_[op.slot] = Slot{true, true, false, 0, 0};
      return true;
    }
    if (op.is_get && slot_read(op.slot).od_class) {
      stack_.push_back({Item::od_class, op.out_at});
      return true;
    }
    if (op.is_get && memo_[op.slot].dropped) fail("a value of a dropped OrderedDict attribute is used again");
    if (op.code == 'R' && below_top_is(Item::od_class)) {
      const Item args = pop();
      const Item cls = pop();
      if (args.kind != Item::value || out_.compare(args.start, std::string::npos, ")") != 0)
        fail("an OrderedDict built with arguments");
      cut(cls.start);
      out_ += '}';
      stack_.push_back({Item::od_dict, cls.start, new_node(1, false)});
      return true;
    }
    if (op.code == 'b' && below_top_is(Item::od_dict)) {
      cut(pop_value().start);  // the attributes go, the dict stays
      return true;
    }
    return false;
  }

  // Values put into the container on top of the stack (APPEND(S), SETITEM(S)).
  void add_to_container(const std::vector<std::size_t>& children) {
    if (stack_.empty() || (stack_.back().kind != Item::value && stack_.back().kind != Item::od_dict))
      fail("no container to add values to");
    const std::size_t container = stack_.back().node;
    if (nodes_[container].frozen) fail("a value changed after it was put into another, or one that cannot change");
    std::uint32_t depth = nodes_[container].depth;
    for (const std::size_t child : children) {
      if (child == container) fail("a container put into itself");
      nodes_[child].frozen = true;
      depth = std::max(depth, nodes_[child].depth + 1);
    }
    if (depth > kMaxDepth) fail("values nested more than " + std::to_string(kMaxDepth) + " deep");
    nodes_[container].depth = depth;
  }

  // Copies `op` to the output and applies its stack effect; false for STOP.
  bool copy(const Op& op) {
    out_.append(in_.substr(op.at, 1 + op.arg));
    const unsigned char code = op.code;
    if (code == '(') {
      stack_.push_back({Item::mark, op.out_at});
      return true;
    }
    if (op.is_put) {
      if (stack_.empty() || stack_.back().kind == Item::mark) fail("PUT without a value");
      Slot& slot = memo_[op.slot];
      const bool take = !slot.written || slot.od_class || slot.dropped;
      slot = Slot{true, false, false, stack_.back().node, take ? next_out_slot_++ : slot.out};
      renumber(op, slot.out);
      puts_.push_back({op.out_at, op.slot, take});
      return true;
    }
    if (op.is_get) {
      const Slot& slot = slot_read(op.slot);
      renumber(op, slot.out);
      stack_.push_back({Item::value, op.out_at, slot.node});
      return true;
    }
    const auto effect = effect_of(code);
    if (!effect) fail("opcode " + std::to_string(code) + " (protocol 2 only)");
    if (code == 'a') {
      // libtorch 1.13's unpickler knows APPENDS but not APPEND, which Python
      // writes for a list of one value (an optimizer's one param group): a
      // MARK before the value's opcodes (inserted by run(), so that no
      // recorded offset moves) and APPENDS instead.
      const Item item = pop_value();
      out_.back() = 'e';
      marks_.insert(item.start);
      add_to_container({item.node});
      return true;
    }
    if (code == '2') {  // DUP: the same value again
      if (stack_.empty() || stack_.back().kind == Item::od_class) fail("OrderedDict duplicated");
      if (stack_.back().kind == Item::mark) fail("DUP of a MARK");
      stack_.push_back({Item::value, op.out_at, stack_.back().node});
      return true;
    }
    std::size_t start = op.out_at;
    std::vector<std::size_t> children;
    if (effect->to_mark) {
      while (!stack_.empty() && stack_.back().kind != Item::mark) children.push_back(pop_value().node);
      if (stack_.empty()) fail("no MARK");
      start = pop().start;
      if ((code == 'd' || code == 'u') && children.size() % 2 != 0) fail("dict items of an odd count");
    }
    for (int k = 0; k < effect->pop; ++k) {
      const Item item = pop_value();
      children.push_back(item.node);
      start = item.start;
    }
    switch (code) {
      case 'e': case 'u': case 'a': case 's':
        add_to_container(children);
        return true;
      case '0': case '1':
        return true;
      default:
        break;
    }
    if (effect->push == 0) return code != '.';
    // A new value: a leaf, an empty container, or built from (or by a call on) the children.
    const bool mutable_container = code == ']' || code == '}' || code == 'l' || code == 'd';
    std::uint32_t depth = mutable_container || code == ')' || code == 't' ? 1 : 0;
    for (const std::size_t child : children) {
      nodes_[child].frozen = true;
      depth = std::max(depth, nodes_[child].depth + 1);
    }
    stack_.push_back({Item::value, start, new_node(depth, !mutable_container)});
    return true;
  }

  const std::string_view in_;
  MemoryBudget* const budget_;  // or none
  std::size_t at_ = 0;          // input offset of the next opcode
  std::string out_;
  std::vector<Item> stack_;
  std::vector<Node> nodes_;
  std::vector<Slot> memo_;  // by input slot
  struct Put {
    std::size_t out_at = 0;  // output offset
    std::uint64_t slot = 0;  // input slot
    bool took_slot = false;  // the first PUT of its output slot
  };
  std::vector<Put> puts_;  // each PUT copied, in order
  std::multiset<std::size_t> marks_;  // output offsets that get a MARK (see APPEND)
  std::uint64_t next_out_slot_ = 0;
};

std::string rewrite(std::string_view pickle, MemoryBudget* budget) { return PlainDictRewriter(pickle, budget).run(); }

}  // namespace

std::string plain_dict_pickle(const std::string& in) { return rewrite(in, nullptr); }

namespace {

// A record read for the unpickler, shared by every storage that names it.
struct Record {
  at::DataPtr data;
  std::size_t size = 0;
  std::string name;
};

// A DataPtr to `record`'s bytes that keeps it alive.
at::DataPtr share(const std::shared_ptr<Record>& record) {
  auto* owner = new std::shared_ptr<Record>(record);
  return at::DataPtr(record->data.get(), owner, [](void* p) { delete static_cast<std::shared_ptr<Record>*>(p); },
                     c10::Device(c10::kCPU));
}

// Throws FileProblem unless every element of `t` lies in its storage, and its
// storage in the record read for it: libtorch's unpickler sets a tensor's
// sizes, strides and offset, and a storage's size, as the pickle says.
void check_tensor(const at::Tensor& t, const std::string& name,
                  const std::map<const void*, std::shared_ptr<Record>>& records) {
  auto problem = [&](const std::string& what) { throw FileProblem("tensor '" + name + "' " + what); };
  if (t.layout() != c10::kStrided) problem("is not a dense tensor");
  const c10::Storage& storage = t.storage();
  const std::size_t bytes = storage.nbytes();
  if (bytes > 0) {
    const auto it = records.find(storage.data_ptr().get());
    if (it == records.end())
      problem("has a storage of " + std::to_string(bytes) + " bytes that is none of the file's records");
    if (bytes > it->second->size)
      problem("has a storage of " + std::to_string(bytes) + " bytes, but its record '" + it->second->name + "' holds " +
              std::to_string(it->second->size));
  }
  const std::int64_t offset = t.storage_offset();
  if (offset < 0) problem("has a negative storage offset " + std::to_string(offset));
  // The elements it reaches from its offset: 1 + sum of (size - 1) * stride.
  std::uint64_t reach = 1;
  bool empty = false;
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    const std::int64_t size = t.size(d), stride = t.stride(d);
    if (size < 0 || stride < 0)
      problem("has shape " + c10::str(t.sizes()) + " and strides " + c10::str(t.strides()) + ", not >= 0");
    if (size == 0) empty = true;
    std::uint64_t step = 0;
    if (size > 0 && (__builtin_mul_overflow(static_cast<std::uint64_t>(size - 1), static_cast<std::uint64_t>(stride), &step) ||
                     __builtin_add_overflow(reach, step, &reach)))
      problem("of shape " + c10::str(t.sizes()) + " and strides " + c10::str(t.strides()) + " reaches past 2^64 elements");
  }
  const std::uint64_t holds = bytes / static_cast<std::size_t>(t.element_size());
  if (!empty && (reach > holds || static_cast<std::uint64_t>(offset) > holds - reach))
    problem("claims " + std::to_string(reach) + " elements of " + c10::toString(t.scalar_type()) + " at offset " +
            std::to_string(offset) + " but its storage holds " + std::to_string(holds));
}

// check_tensor on every tensor in `root`, named by its keys and indices.
void check_tensors(const c10::IValue& root, const std::map<const void*, std::shared_ptr<Record>>& records) {
  std::vector<std::pair<c10::IValue, std::string>> todo{{root, ""}};
  std::unordered_set<const void*> seen;  // containers shared by several others are checked once
  while (!todo.empty()) {
    const auto entry = std::move(todo.back());
    todo.pop_back();
    const c10::IValue& value = entry.first;
    const std::string& name = entry.second;  // a plain reference: lambdas below capture it
    if (value.isTensor()) {
      check_tensor(value.toTensor(), name.empty() ? "(the whole file)" : name, records);
      continue;
    }
    if (!value.isPtrType() || !seen.insert(value.internalToPointer()).second) continue;
    auto inner = [&](const std::string& key) { return name.empty() ? key : name + "[" + key + "]"; };
    if (value.isGenericDict()) {
      for (const auto& item : value.toGenericDict()) {
        const std::string key = item.key().isString() ? item.key().toStringRef() : item.key().tagKind();
        todo.emplace_back(item.key(), inner(key) + " (a key)");
        todo.emplace_back(item.value(), inner(key));
      }
    } else if (value.isList()) {
      const auto list = value.toListRef();
      for (std::size_t i = 0; i < list.size(); ++i) todo.emplace_back(list[i], inner(std::to_string(i)));
    } else if (value.isTuple()) {
      const auto& elements = value.toTupleRef().elements();
      for (std::size_t i = 0; i < elements.size(); ++i) todo.emplace_back(elements[i], inner(std::to_string(i)));
    }
  }
}

// A zip archive written by torch.save: <archive>/data.pkl, tensors in <archive>/data/.
c10::IValue unpickle(const std::string& path, std::uint64_t file_size) {
  MemoryBudget budget(file_size);
  // The reader allocates each record's declared size: checked against the file, then charged.
  const std::map<std::string, std::uint64_t> declared = check_zip_record_sizes(path);
  auto declared_size = [&](const std::string& name) {
    const auto it = declared.find(name);
    return it == declared.end() ? 0 : it->second;
  };
  caffe2::serialize::PyTorchStreamReader reader(path);
  if (!reader.hasRecord("data.pkl")) throw std::runtime_error("no data.pkl in the archive");
  budget.charge(declared_size("data.pkl"), "its pickle");
  std::string pickle;
  {
    auto [pkl_ptr, pkl_size] = reader.getRecord("data.pkl");
    pickle = rewrite(std::string_view(static_cast<const char*>(pkl_ptr.get()), pkl_size), &budget);
  }
  std::size_t pos = 0;
  auto read = [&](char* buffer, std::size_t n) {
    const std::size_t take = std::min(n, pickle.size() - pos);
    std::memcpy(buffer, pickle.data() + pos, take);
    pos += take;
    return take;
  };
  // Each record is read once, however many storages name it.
  std::map<std::string, std::shared_ptr<Record>> by_name;
  std::map<const void*, std::shared_ptr<Record>> by_address;
  auto read_record = [&](const std::string& key) {
    std::shared_ptr<Record>& record = by_name[key];
    if (!record) {
      const std::string name = "data/" + key;
      budget.charge(declared_size(name), "its tensors");
      auto [data, size] = reader.getRecord(name);
      record = std::make_shared<Record>(Record{std::move(data), size, name});
      by_address[record->data.get()] = record;
    }
    return share(record);
  };
  torch::jit::Unpickler unpickler(read, nullptr, nullptr, read_record, c10::Device(c10::kCPU));
  c10::IValue value = unpickler.parse_ivalue();
  check_tensors(value, by_address);
  return value;
}

}  // namespace

c10::IValue read_torch_save(const std::string& path) {
  const std::uint64_t size = regular_file_size(path);
  try {
    return unpickle(path, size);
  } catch (const FileProblem& e) {
    throw std::runtime_error(path + ": " + e.what());
  } catch (const std::exception& e) {
    throw std::runtime_error("'" + path + "' is not a file saved by torch.save (" + first_line(e.what()) + ")");
  }
}

}  // namespace skein
