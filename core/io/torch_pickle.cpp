#include "io/torch_pickle.h"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "util/error.h"

namespace adtree::io::pickle {

Ref Pickle::find(Ref d, const std::string& key) const {
  if (d == kNoRef || at(d).kind != Kind::Dict) return kNoRef;
  const auto& it = at(d).items;
  for (size_t k = 0; k + 1 < it.size(); k += 2) {
    if (at(it[k]).kind == Kind::Str && at(it[k]).text == key) return it[k + 1];
  }
  return kNoRef;
}

namespace {

// The globals a state dict needs. Storage classes name a tensor's element type; the functions
// are recognised by name and carried out here on inert values, never looked up in Python.
const std::unordered_set<std::string>& allowed_globals() {
  static const std::unordered_set<std::string> g = {
      "collections.OrderedDict",
      "torch._utils._rebuild_tensor",
      "torch._utils._rebuild_tensor_v2",
      "torch._utils._rebuild_parameter",
      "torch._utils._rebuild_parameter_with_state",
      "torch._tensor._rebuild_from_type_v2",
      "torch.nn.parameter.Parameter",
      "torch.Tensor",
      "_codecs.encode",
      "builtins.set",
      "builtins.frozenset",
      "argparse.Namespace",
      "torch.FloatStorage",
      "torch.DoubleStorage",
      "torch.HalfStorage",
      "torch.BFloat16Storage",
      "torch.LongStorage",
      "torch.IntStorage",
      "torch.ShortStorage",
      "torch.CharStorage",
      "torch.ByteStorage",
      "torch.BoolStorage",
  };
  return g;
}

bool is_container_op(uint8_t op) {
  switch (op) {
    case '}':
    case ']':
    case ')':
    case 't':
    case 'l':
    case 'd':
    case 'a':
    case 'e':
    case 's':
    case 'u':
    case 0x85:
    case 0x86:
    case 0x87:
    case 0x8f:
    case 0x90:
    case 0x91:
      return true;
    default:
      return false;
  }
}

class Machine {
 public:
  Machine(const uint8_t* data, size_t size, const std::string& what)
      : p_(data), n_(size), what_(what) {}

  Pickle run() {
    while (true) {
      const uint8_t op = byte();
      if (op == '.') break;  // STOP
      step(op);
    }
    if (stack_.size() != 1 || !marks_.empty()) fail("the stream does not end with one object");
    out_.root = stack_.back();
    out_.end = pos_;
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw Error(what_ + ": not a checkpoint this reader takes: " + why + " (pickle byte " +
                std::to_string(pos_) + ")");
  }

  // ---- reading the stream ----
  const uint8_t* take(size_t k) {
    if (k > n_ - pos_) fail("the pickle stream ends early (truncated file?)");
    const uint8_t* at = p_ + pos_;
    pos_ += k;
    return at;
  }
  uint8_t byte() { return *take(1); }
  uint64_t uint_le(size_t k) {
    const uint8_t* b = take(k);
    uint64_t v = 0;
    for (size_t j = 0; j < k; ++j) v |= uint64_t(b[j]) << (8 * j);
    return v;
  }
  std::string bytes(uint64_t k) {
    if (k > n_ - pos_) fail("a string runs past the end of the stream");
    const uint8_t* b = take(size_t(k));
    return std::string(reinterpret_cast<const char*>(b), size_t(k));
  }
  std::string line() {
    const void* nl = std::memchr(p_ + pos_, '\n', n_ - pos_);
    if (nl == nullptr) fail("a GLOBAL name has no end of line");
    const size_t k = size_t(static_cast<const uint8_t*>(nl) - (p_ + pos_));
    std::string s = bytes(k);
    pos_ += 1;
    return s;
  }
  int64_t long_int(uint64_t k) {  // LONG1 / LONG4: little-endian two's complement
    if (k > 8) fail("an integer wider than 64 bits");
    if (k == 0) return 0;
    uint64_t v = uint_le(size_t(k));
    if (k < 8 && (v >> (8 * k - 1)) & 1) v |= ~uint64_t(0) << (8 * k);
    return int64_t(v);
  }

  // ---- values and the stack ----
  Ref make(Value v) {
    out_.values.push_back(std::move(v));
    return Ref(out_.values.size() - 1);
  }
  Ref make(Kind k) {
    Value v;
    v.kind = k;
    return make(std::move(v));
  }
  Value& val(Ref r) { return out_.values[r]; }
  void push(Ref r) { stack_.push_back(r); }
  Ref pop() {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor) fail("an opcode finds the stack empty");
    const Ref r = stack_.back();
    stack_.pop_back();
    return r;
  }
  Ref& top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("the stack is empty");
    return stack_.back();
  }
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Ref> items(stack_.begin() + std::ptrdiff_t(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Ref tuple(std::vector<Ref> items) {
    Value v;
    v.kind = Kind::Tuple;
    v.items = std::move(items);
    return make(std::move(v));
  }

  void step(uint8_t op);
  void literal(uint8_t op);
  void container(uint8_t op);
  void memo(uint8_t op);
  void global(std::string module, std::string name);
  void reduce(Ref callable, Ref args);
  Ref call(const std::string& fn, const std::vector<Ref>& args);
  Ref rebuild_tensor(const std::vector<Ref>& args);
  void newobj(Ref cls, Ref args);
  void build(Ref obj, Ref state);
  void persistent_id(Ref pid);
  std::vector<int64_t> ints(Ref tuple, const char* what);

  const uint8_t* p_;
  size_t n_, pos_ = 0;
  std::string what_;
  Pickle out_;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
};

void Machine::step(uint8_t op) {
  switch (op) {
    case 0x80:
      byte();
      return;  // PROTO
    case 0x95:
      take(8);
      return;  // FRAME: a length hint only
    case '(':
      marks_.push_back(stack_.size());
      return;  // MARK
    case '0':
      pop();
      return;  // POP
    case '1':
      pop_mark();
      return;  // POP_MARK
    case '2':
      push(top());
      return;    // DUP
    case 'c': {  // GLOBAL
      std::string module = line();
      global(std::move(module), line());
      return;
    }
    case 0x93: {  // STACK_GLOBAL
      const Ref name = pop(), module = pop();
      if (val(module).kind != Kind::Str || val(name).kind != Kind::Str) fail("a bad STACK_GLOBAL");
      global(val(module).text, val(name).text);
      return;
    }
    case 'R': {  // REDUCE
      const Ref args = pop();
      reduce(pop(), args);
      return;
    }
    case 0x81: {  // NEWOBJ
      const Ref args = pop();
      newobj(pop(), args);
      return;
    }
    case 'b': {  // BUILD
      const Ref state = pop();
      build(top(), state);
      return;
    }
    case 'Q':
      persistent_id(pop());
      return;  // BINPERSID
    case 'q':
    case 'r':
    case 'h':
    case 'j':
    case 0x94:
      memo(op);
      return;
    default:
      break;
  }
  if (is_container_op(op)) {
    container(op);
  } else {
    literal(op);
  }
}

void Machine::literal(uint8_t op) {
  Value v;
  switch (op) {
    case 'N':
      v.kind = Kind::None;
      break;
    case 0x88:
    case 0x89:
      v.kind = Kind::Bool, v.i = op == 0x88;
      break;
    case 'J':
      v.kind = Kind::Int, v.i = int32_t(uint32_t(uint_le(4)));
      break;
    case 'K':
      v.kind = Kind::Int, v.i = uint_le(1);
      break;
    case 'M':
      v.kind = Kind::Int, v.i = int64_t(uint_le(2));
      break;
    case 0x8a:
      v.kind = Kind::Int, v.i = long_int(byte());
      break;
    case 0x8b:
      v.kind = Kind::Int, v.i = long_int(uint_le(4));
      break;
    case 'G': {  // BINFLOAT: big-endian IEEE double
      const uint8_t* b = take(8);
      uint64_t bits = 0;
      for (int j = 0; j < 8; ++j) bits = bits << 8 | b[j];
      std::memcpy(&v.f, &bits, 8);
      v.kind = Kind::Float;
      break;
    }
    case 'X':
      v.kind = Kind::Str, v.text = bytes(uint_le(4));
      break;
    case 0x8c:
      v.kind = Kind::Str, v.text = bytes(byte());
      break;
    case 0x8d:
      v.kind = Kind::Str, v.text = bytes(uint_le(8));
      break;
    case 'U':
      v.kind = Kind::Str, v.text = bytes(byte());
      break;  // SHORT_BINSTRING
    case 'T':
      v.kind = Kind::Str, v.text = bytes(uint_le(4));
      break;  // BINSTRING
    case 'C':
      v.kind = Kind::Bytes, v.text = bytes(byte());
      break;
    case 'B':
      v.kind = Kind::Bytes, v.text = bytes(uint_le(4));
      break;
    case 0x8e:
      v.kind = Kind::Bytes, v.text = bytes(uint_le(8));
      break;
    default: {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      fail(std::string("pickle opcode ") + hex + " is not one a state dict uses");
    }
  }
  push(make(std::move(v)));
}

void Machine::container(uint8_t op) {
  switch (op) {
    case '}':
      push(make(Kind::Dict));
      return;
    case ']':
    case 0x8f:
      push(make(Kind::List));
      return;  // EMPTY_LIST, EMPTY_SET
    case ')':
      push(tuple({}));
      return;
    case 't':
      push(tuple(pop_mark()));
      return;
    case 0x85:
    case 0x86:
    case 0x87: {  // TUPLE1-3
      std::vector<Ref> items(size_t(op - 0x84));
      for (size_t j = items.size(); j-- > 0;) items[j] = pop();
      push(tuple(std::move(items)));
      return;
    }
    case 'l':
    case 0x91: {  // LIST, FROZENSET
      const Ref r = make(Kind::List);
      val(r).items = pop_mark();
      push(r);
      return;
    }
    case 'd': {  // DICT
      auto items = pop_mark();
      if (items.size() % 2 != 0) fail("DICT with an odd number of items");
      const Ref r = make(Kind::Dict);
      val(r).items = std::move(items);
      push(r);
      return;
    }
    default:
      break;
  }
  // APPEND, APPENDS, ADDITEMS, SETITEM, SETITEMS: into the container below.
  std::vector<Ref> items;
  if (op == 'a' || op == 's') {
    items.push_back(pop());
    if (op == 's') items.insert(items.begin(), pop());
  } else {
    items = pop_mark();
  }
  const bool dict = op == 's' || op == 'u';
  Value& c = val(top());
  if (c.kind != (dict ? Kind::Dict : Kind::List)) fail("items added to something else");
  if (dict && items.size() % 2 != 0) fail("SETITEMS with an odd number of items");
  c.items.insert(c.items.end(), items.begin(), items.end());
}

void Machine::memo(uint8_t op) {
  switch (op) {
    case 'q':
      memo_[byte()] = top();
      return;
    case 'r':
      memo_[uint_le(4)] = top();
      return;
    case 0x94:
      memo_[memo_.size()] = top();
      return;
    default:
      break;
  }
  const uint64_t key = op == 'h' ? byte() : uint_le(4);
  const auto it = memo_.find(key);
  if (it == memo_.end()) fail("a memo lookup of an unset entry");
  push(it->second);
}

void Machine::global(std::string module, std::string name) {
  const std::string full = module + "." + name;
  if (allowed_globals().count(full) == 0) {
    fail("it holds a Python object of type '" + full +
         "', which this reader does not construct (it reads state dicts and never runs code)");
  }
  Value v;
  v.kind = Kind::Global;
  v.text = full;
  push(make(std::move(v)));
}

std::vector<int64_t> Machine::ints(Ref t, const char* what) {
  const Value& v = val(t);
  if (v.kind != Kind::Tuple && v.kind != Kind::List) fail(std::string(what) + " is not a tuple");
  std::vector<int64_t> out;
  for (Ref r : v.items) {
    if (val(r).kind != Kind::Int) fail(std::string(what) + " holds a non-integer");
    out.push_back(val(r).i);
  }
  return out;
}

void Machine::reduce(Ref callable, Ref args) {
  if (val(callable).kind != Kind::Global) fail("a call of something that is not a global");
  if (val(args).kind != Kind::Tuple) fail("call arguments that are not a tuple");
  const std::vector<Ref> a = val(args).items;  // a copy: make() may grow the arena
  push(call(val(callable).text, a));
}

// The allowed functions, carried out on inert values.
Ref Machine::call(const std::string& fn, const std::vector<Ref>& a) {
  if (fn == "collections.OrderedDict" && a.empty()) return make(Kind::Dict);
  if (fn == "torch._utils._rebuild_tensor_v2" || fn == "torch._utils._rebuild_tensor") {
    return rebuild_tensor(a);
  }
  if (fn == "torch._utils._rebuild_parameter" ||
      fn == "torch._utils._rebuild_parameter_with_state") {
    if (a.empty() || val(a[0]).kind != Kind::Tensor) fail("a parameter without its tensor");
    return a[0];
  }
  if (fn == "torch._tensor._rebuild_from_type_v2") {  // (func, type, args, state)
    if (a.size() < 3 || val(a[0]).kind != Kind::Global || val(a[1]).kind != Kind::Global ||
        val(a[2]).kind != Kind::Tuple) {
      fail("a malformed _rebuild_from_type_v2");
    }
    const std::string& type = val(a[1]).text;
    if (type != "torch.nn.parameter.Parameter" && type != "torch.Tensor") {
      fail("a tensor of type '" + type + "'");
    }
    const std::vector<Ref> inner = val(a[2]).items;
    return call(val(a[0]).text, inner);
  }
  if (fn == "_codecs.encode" && !a.empty() && val(a[0]).kind == Kind::Str) {
    Value v;  // protocol 2's bytes: the latin-1 code points of a str
    v.kind = Kind::Bytes;
    const std::string& s = val(a[0]).text;
    for (size_t j = 0; j < s.size(); ++j) {
      const auto c = uint8_t(s[j]);
      if (c < 0x80) {
        v.text += char(c);
      } else if ((c == 0xc2 || c == 0xc3) && j + 1 < s.size()) {
        v.text += char(((c & 0x03) << 6) | (uint8_t(s[++j]) & 0x3f));
      } else {
        fail("bytes that are not latin-1");
      }
    }
    return make(std::move(v));
  }
  if ((fn == "builtins.set" || fn == "builtins.frozenset") && a.size() <= 1) {
    const Ref r = make(Kind::List);
    if (!a.empty() && val(a[0]).kind == Kind::List) val(r).items = val(a[0]).items;
    return r;
  }
  fail("a call of '" + fn + "', which this reader does not carry out");
}

Ref Machine::rebuild_tensor(const std::vector<Ref>& a) {
  if (a.size() < 4 || val(a[0]).kind != Kind::Storage || val(a[1]).kind != Kind::Int) {
    fail("a malformed tensor rebuild");
  }
  Value v;
  v.kind = Kind::Tensor;
  v.items = {a[0]};
  v.i = val(a[1]).i;
  v.size = ints(a[2], "a tensor's size");
  v.stride = ints(a[3], "a tensor's stride");
  if (v.size.size() != v.stride.size()) fail("a tensor whose size and stride differ in rank");
  return make(std::move(v));
}

void Machine::newobj(Ref cls, Ref args) {
  if (val(cls).kind != Kind::Global) fail("NEWOBJ of something that is not a class");
  const std::string& name = val(cls).text;
  if (name == "argparse.Namespace") {
    Value v;
    v.kind = Kind::Record;
    v.text = name;
    push(make(std::move(v)));
    return;
  }
  if (val(args).kind != Kind::Tuple) fail("NEWOBJ arguments that are not a tuple");
  const std::vector<Ref> a = val(args).items;
  push(call(name, a));
}

void Machine::build(Ref obj, Ref state) {
  Value& o = val(obj);
  if (o.kind != Kind::Record) return;  // an OrderedDict's or a parameter's extra state: unused
  Ref s = state;
  // (dict, slots) from objects with __slots__: the dict part holds the fields.
  if (val(s).kind == Kind::Tuple && !val(s).items.empty()) s = val(s).items[0];
  if (val(s).kind != Kind::Dict) fail("a record whose state is not a dict");
  val(obj).state = s;
}

// ('storage', storage class, key, location, numel[, view metadata]): a tensor's data in the
// archive (data/<key> in a zip file, or the storages after the pickles in a legacy file).
void Machine::persistent_id(Ref pid) {
  const Value& t = val(pid);
  if (t.kind != Kind::Tuple || t.items.size() < 5 || val(t.items[0]).kind != Kind::Str ||
      val(t.items[0]).text != "storage" || val(t.items[1]).kind != Kind::Global ||
      val(t.items[2]).kind != Kind::Str || val(t.items[4]).kind != Kind::Int) {
    fail("a persistent id that is not a tensor storage");
  }
  const std::string& cls = val(t.items[1]).text;
  if (cls.size() < 14 || cls.compare(cls.size() - 7, 7, "Storage") != 0) {
    fail("a storage of class '" + cls + "'");
  }
  Value v;
  v.kind = Kind::Storage;
  v.dtype = cls.substr(6);  // after "torch."
  v.text = val(t.items[2]).text;
  v.i = val(t.items[4]).i;
  if (v.i < 0) fail("a storage of negative size");
  push(make(std::move(v)));
}

}  // namespace

Pickle unpickle(const uint8_t* data, size_t size, const std::string& what) {
  if (data == nullptr || size == 0) throw Error(what + ": empty pickle stream");
  return Machine(data, size, what).run();
}

}  // namespace adtree::io::pickle
