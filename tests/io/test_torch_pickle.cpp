// The restricted unpickler (io/torch_pickle.h) on hand-written opcode streams: what a state dict
// needs is read, anything else is refused by name, and malformed streams are errors, not crashes.
#include <gtest/gtest.h>

#include <string>

#include "io/torch_pickle.h"
#include "util/error.h"

using namespace adtree;
using namespace adtree::io::pickle;

namespace {

// The bytes of a literal, NULs included (not its terminating one).
template <size_t N>
std::string b(const char (&s)[N]) {
  return std::string(s, N - 1);
}

Pickle run(const std::string& s) {
  return unpickle(reinterpret_cast<const uint8_t*>(s.data()), s.size(), "test");
}

std::string error_of(const std::string& s) {
  try {
    run(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TorchPickle, ReadsContainersNumbersAndStrings) {
  // {'a': [1, -2, 300], 'b': (True, None, 'x')} in protocol 2, with memo puts and a get.
  const std::string s =
      b("\x80\x02}q\x00(X\x01\x00\x00\x00"
        "aq\x01]q\x02(K\x01J\xfe\xff\xff\xff"
        "M,\x01"
        "eX\x01\x00\x00\x00"
        "b\x88N\x8c\x01x\x87u.");
  const Pickle p = run(s);
  ASSERT_EQ(p.at(p.root).kind, Kind::Dict);
  const Ref a = p.find(p.root, "a"), b = p.find(p.root, "b");
  ASSERT_NE(a, kNoRef);
  ASSERT_EQ(p.at(a).items.size(), 3u);
  EXPECT_EQ(p.at(p.at(a).items[0]).i, 1);
  EXPECT_EQ(p.at(p.at(a).items[1]).i, -2);
  EXPECT_EQ(p.at(p.at(a).items[2]).i, 300);
  ASSERT_EQ(p.at(b).kind, Kind::Tuple);
  EXPECT_EQ(p.at(p.at(b).items[0]).kind, Kind::Bool);
  EXPECT_EQ(p.at(p.at(b).items[1]).kind, Kind::None);
  EXPECT_EQ(p.at(p.at(b).items[2]).text, "x");
  EXPECT_EQ(p.end, s.size());
}

TEST(TorchPickle, LongsAndFloats) {
  // LONG1 of 8 bytes (-1), BINFLOAT 0.5, in a tuple.
  const std::string s =
      b("\x80\x02\x8a\x08\xff\xff\xff\xff\xff\xff\xff\xff"
        "G\x3f\xe0\x00\x00\x00\x00\x00\x00\x86.");
  const Pickle p = run(s);
  EXPECT_EQ(p.at(p.at(p.root).items[0]).i, -1);
  EXPECT_EQ(p.at(p.at(p.root).items[1]).f, 0.5);
  EXPECT_NE(error_of(b("\x80\x02\x8a\x09"
                       "123456789."))
                .find("wider than 64"),
            std::string::npos);
}

TEST(TorchPickle, RefusesGlobalsOutsideItsTableByName) {
  EXPECT_NE(error_of("cos\nsystem\n(S'ls'\ntR.").find("'os.system'"), std::string::npos);
  EXPECT_NE(error_of("cbuiltins\neval\n.").find("'builtins.eval'"), std::string::npos);
  // STACK_GLOBAL is looked up the same way.
  const std::string sg = b("\x80\x04\x8c\x02os\x8c\x06system\x93.");
  EXPECT_NE(error_of(sg).find("'os.system'"), std::string::npos);
  // An allowed global called in a way it is not: refused, not run.
  EXPECT_NE(error_of("ctorch\nFloatStorage\n)R.").find("does not carry out"), std::string::npos);
}

TEST(TorchPickle, OpcodesItDoesNotReadAreNamed) {
  EXPECT_NE(error_of("(i__main__\nX\no.").find("0x69"), std::string::npos);  // INST
}

TEST(TorchPickle, MalformedStreamsAreErrors) {
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("\x80\x02]").find("ends early"), std::string::npos);     // no STOP
  EXPECT_NE(error_of(b("\x80\x02h\x05.")).find("unset"), std::string::npos);  // memo
  EXPECT_NE(error_of("\x80\x02"
                     "a.")
                .find("stack"),
            std::string::npos);  // APPEND
  EXPECT_NE(error_of("\x80\x02X\xff\xff\xff\x7f"
                     "ab.")
                .find("past the end"),
            std::string::npos);
  EXPECT_NE(error_of("\x80\x02K\x01K\x02.").find("one object"), std::string::npos);  // two left
  EXPECT_NE(error_of("\x80\x02K\x01K\x02K\x03s.").find("something else"), std::string::npos);
  EXPECT_NE(error_of("\x80\x02"
                     "1.")
                .find("MARK"),
            std::string::npos);  // POP_MARK
}

// A list appended to itself (a cycle through the memo) is read without looping or leaking.
TEST(TorchPickle, CyclesAreHarmless) {
  const Pickle p =
      run(b("\x80\x02]q\x00h\x00"
            "a."));
  ASSERT_EQ(p.at(p.root).kind, Kind::List);
  EXPECT_EQ(p.at(p.root).items[0], p.root);
}
