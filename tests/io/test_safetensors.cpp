// safetensors reader/writer: exact round trips, the on-disk layout as other tools expect it, and a
// rejection with a useful message (file + tensor + problem) for every kind of corrupt file.
#include "io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "io/mapped_pages.h"
#include "util/error.h"

namespace fs = std::filesystem;
using adtree::io::DType;
using adtree::io::SafetensorsReader;
using adtree::io::write_safetensors;

namespace {

// The names in `path`'s folder that start with its file name (the file and any temporary).
std::vector<std::string> files_starting(const std::string& path) {
  const auto name = std::filesystem::path(path).filename().string();
  std::vector<std::string> out;
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path())) {
    if (e.path().filename().string().rfind(name, 0) == 0)
      out.push_back(e.path().filename().string());
  }
  return out;
}

std::string le64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return out;
}

// A complete file from header text and data bytes, with a correct length field.
std::string st_file(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The bytes of a tensor in memory order, for bit-exact comparisons (NaN payloads, -0.0).
std::string bytes_of(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

void expect_bit_identical(const at::Tensor& expected, const at::Tensor& actual,
                          const std::string& name) {
  ASSERT_TRUE(actual.defined()) << name;
  EXPECT_EQ(actual.scalar_type(), expected.scalar_type()) << name;
  EXPECT_EQ(actual.sizes().vec(), expected.sizes().vec()) << name;
  EXPECT_TRUE(actual.device().is_cpu()) << name;
  EXPECT_TRUE(actual.is_contiguous()) << name;
  EXPECT_EQ(bytes_of(actual), bytes_of(expected)) << name;
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           ("adtree_safetensors_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string path(const std::string& file) const { return (dir_ / file).string(); }

  // Writes `bytes` to `file` and expects opening it to throw adtree::Error whose message names
  // the file and contains every one of `needles`.
  void expect_rejected(const std::string& file, const std::string& bytes,
                       std::initializer_list<std::string> needles) {
    const std::string p = path(file);
    write_bytes(p, bytes);
    expect_open_error(p, needles);
  }

  static void expect_open_error(const std::string& p, std::initializer_list<std::string> needles) {
    try {
      SafetensorsReader reader(p);
      ADD_FAILURE() << "expected adtree::Error opening " << p;
    } catch (const adtree::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p), std::string::npos) << "message does not name the file: " << msg;
      for (const std::string& needle : needles) {
        EXPECT_NE(msg.find(needle), std::string::npos)
            << "message lacks \"" << needle << "\": " << msg;
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "expected adtree::Error, got another exception: " << e.what();
    }
  }

  fs::path dir_;
};

// A bit pattern tensor of 2-byte floats: signed zeros, denormals, infinities, NaN payloads.
at::Tensor half_bits(at::ScalarType type) {
  const std::vector<int16_t> bits = {0x0000,
                                     static_cast<int16_t>(0x8000),
                                     0x0001,
                                     0x3C00,
                                     0x7C00,
                                     static_cast<int16_t>(0xFC00),
                                     0x7E01,
                                     0x7FC1,
                                     0x3F80,
                                     0x4049,
                                     static_cast<int16_t>(0xC2F7),
                                     0x1234};
  return at::tensor(bits, at::kShort).view(type).reshape({3, 4}).clone();
}

std::map<std::string, at::Tensor> every_dtype() {
  std::map<std::string, at::Tensor> t;
  const float fmax = std::numeric_limits<float>::max();
  const float fden = std::numeric_limits<float>::denorm_min();
  t["f32"] = at::tensor(std::vector<float>{0.0f, -0.0f, 1.5f, -3.25f, fmax, fden,
                                           std::numeric_limits<float>::infinity(), 1e-30f},
                        at::kFloat)
                 .reshape({2, 2, 2});
  t["f64"] = at::tensor(std::vector<double>{3.141592653589793, -1e300, 5e-324, -0.0}, at::kDouble);
  t["f16"] = half_bits(at::kHalf);
  t["bf16"] = half_bits(at::kBFloat16);
  t["i32"] = at::tensor(std::vector<int32_t>{std::numeric_limits<int32_t>::min(), -1, 0, 1,
                                             std::numeric_limits<int32_t>::max(), 0x01020304},
                        at::kInt)
                 .reshape({3, 2});
  t["i64"] = at::tensor(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1, 0,
                                             std::numeric_limits<int64_t>::max()},
                        at::kLong);
  t["i16"] = at::tensor(std::vector<int16_t>{-32768, -1, 0, 32767}, at::kShort);
  t["i8"] = at::tensor(std::vector<int8_t>{-128, -1, 0, 127}, at::kChar);
  t["u8"] = at::arange(256, at::kLong).to(at::kByte).reshape({16, 16});
  t["bool"] = at::tensor(std::vector<int64_t>{1, 0, 0, 1, 1, 1, 0}, at::kLong).to(at::kBool);
  return t;
}

nlohmann::json header_of(const std::string& bytes, uint64_t* header_len = nullptr) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  if (header_len != nullptr) *header_len = n;
  return nlohmann::json::parse(bytes.substr(8, n));
}

// ---------------------------------------------------------------------------------------------
// Round trips

// io/mapped_pages.h: a mapped tensor's pages leave the resident set and come back with the same
// values; a tensor outside any file mapping is left alone (madvise would zero its pages).
TEST_F(SafetensorsTest, ReleasedMappedPagesKeepTheirValues) {
  const auto big = at::arange(0, 1 << 20, at::kFloat);  // 4 MiB: many whole pages
  adtree::io::write_safetensors(path("big.safetensors"), {{"w", big}, {"b", at::ones({3})}});
  {
    auto mapped = adtree::io::map_safetensors(path("big.safetensors"));
    EXPECT_TRUE(mapped.at("w").equal(big));  // every page touched
    EXPECT_TRUE(adtree::io::release_mapped_pages(mapped.at("w")));
    EXPECT_TRUE(mapped.at("w").equal(big));  // faulted back in from the file
    EXPECT_FALSE(adtree::io::release_mapped_pages(mapped.at("b")));  // no whole page inside
  }
  const auto copy = big.clone();
  EXPECT_FALSE(adtree::io::release_mapped_pages(copy));
  EXPECT_TRUE(copy.equal(big));
  // The file's mapping is gone with its tensors: their old addresses are no longer released.
  auto again = adtree::io::map_safetensors(path("big.safetensors")).at("w").clone();
  EXPECT_FALSE(adtree::io::release_mapped_pages(again));
  EXPECT_TRUE(again.equal(big));
}

TEST_F(SafetensorsTest, RoundTripOfEveryDtypeIsBitExact) {
  const auto tensors = every_dtype();
  write_safetensors(path("all.safetensors"), tensors);
  SafetensorsReader reader(path("all.safetensors"));
  ASSERT_EQ(reader.tensors().size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    expect_bit_identical(t, reader.tensor(name), name);
  }
  // Value equality too, for the types where NaN does not make equal() meaningless.
  for (const char* name : {"f32", "f64", "i32", "i64", "i16", "i8", "u8", "bool"}) {
    EXPECT_TRUE(at::equal(reader.tensor(name), tensors.at(name))) << name;
  }
  const auto all = reader.all();
  ASSERT_EQ(all.size(), tensors.size());
  for (const auto& [name, t] : tensors) expect_bit_identical(t, all.at(name), name);
}

TEST_F(SafetensorsTest, RoundTripRecordsDtypeAndShapeInHeader) {
  write_safetensors(path("m.safetensors"), every_dtype());
  SafetensorsReader reader(path("m.safetensors"));
  const std::map<std::string, std::pair<DType, std::vector<int64_t>>> expected = {
      {"f32", {DType::F32, {2, 2, 2}}}, {"f64", {DType::F64, {4}}},
      {"f16", {DType::F16, {3, 4}}},    {"bf16", {DType::BF16, {3, 4}}},
      {"i32", {DType::I32, {3, 2}}},    {"i64", {DType::I64, {4}}},
      {"i16", {DType::I16, {4}}},       {"i8", {DType::I8, {4}}},
      {"u8", {DType::U8, {16, 16}}},    {"bool", {DType::BOOL, {7}}}};
  for (const auto& [name, want] : expected) {
    const auto* info = reader.find(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->name, name);
    EXPECT_EQ(info->dtype, want.first) << name;
    EXPECT_EQ(info->shape, want.second) << name;
  }
}

TEST_F(SafetensorsTest, ScalarTensorWithEmptyShapeRoundTrips) {
  const std::map<std::string, at::Tensor> tensors = {
      {"scalar_f64", at::scalar_tensor(-2.5, at::kDouble)},
      {"scalar_i64", at::scalar_tensor(42, at::kLong)},
      {"scalar_bool", at::scalar_tensor(true, at::kBool)}};
  write_safetensors(path("s.safetensors"), tensors);
  SafetensorsReader reader(path("s.safetensors"));
  for (const auto& [name, t] : tensors) {
    const at::Tensor back = reader.tensor(name);
    EXPECT_EQ(back.dim(), 0) << name;
    EXPECT_TRUE(reader.find(name)->shape.empty()) << name;
    EXPECT_EQ(reader.find(name)->end - reader.find(name)->begin,
              static_cast<uint64_t>(t.element_size()))
        << name;
    expect_bit_identical(t, back, name);
  }
  EXPECT_EQ(reader.tensor("scalar_f64").item<double>(), -2.5);
  EXPECT_EQ(reader.tensor("scalar_i64").item<int64_t>(), 42);
}

TEST_F(SafetensorsTest, ZeroElementTensorsRoundTripWithEmptyByteRange) {
  const std::map<std::string, at::Tensor> tensors = {
      {"a_empty", at::empty({0, 3}, at::kFloat)},
      {"b_value", at::tensor(std::vector<int32_t>{7, 8}, at::kInt)},
      {"c_empty", at::empty({4, 0, 2}, at::kBFloat16)}};
  write_safetensors(path("z.safetensors"), tensors);
  SafetensorsReader reader(path("z.safetensors"));
  for (const auto& [name, t] : tensors) expect_bit_identical(t, reader.tensor(name), name);
  EXPECT_EQ(reader.find("a_empty")->begin, reader.find("a_empty")->end);
  EXPECT_EQ(reader.find("c_empty")->begin, reader.find("c_empty")->end);
  EXPECT_EQ(reader.tensor("c_empty").sizes().vec(), (std::vector<int64_t>{4, 0, 2}));
}

TEST_F(SafetensorsTest, FileWithOnlyEmptyTensorsHasEmptyDataArea) {
  write_safetensors(path("e.safetensors"), {{"nothing", at::empty({0}, at::kLong)}});
  uint64_t n = 0;
  const std::string bytes = read_bytes(path("e.safetensors"));
  header_of(bytes, &n);
  EXPECT_EQ(bytes.size(), 8 + n);
  SafetensorsReader reader(path("e.safetensors"));
  EXPECT_EQ(reader.tensor("nothing").numel(), 0);
}

TEST_F(SafetensorsTest, FileWithNoTensorsRoundTrips) {
  write_safetensors(path("none.safetensors"), {}, {{"k", "v"}});
  SafetensorsReader reader(path("none.safetensors"));
  EXPECT_TRUE(reader.tensors().empty());
  EXPECT_TRUE(reader.all().empty());
  EXPECT_EQ(reader.metadata().at("k"), "v");
}

TEST_F(SafetensorsTest, MetadataRoundTrips) {
  const std::map<std::string, std::string> meta = {{"format", "pt"},
                                                   {"empty", ""},
                                                   {"unicode", "\xC3\xA9t\xC3\xA9 \xE2\x9C\x93"},
                                                   {"quotes and \"escapes\"", "line1\nline2\t\\"},
                                                   {"json_inside", R"({"a": [1, 2]})"}};
  write_safetensors(path("meta.safetensors"), {{"w", at::ones({2}, at::kFloat)}}, meta);
  SafetensorsReader reader(path("meta.safetensors"));
  EXPECT_EQ(reader.metadata(), meta);
  EXPECT_EQ(reader.find("__metadata__"), nullptr);
  EXPECT_EQ(reader.tensors().size(), 1u);
}

TEST_F(SafetensorsTest, NoMetadataMeansNoMetadataKeyAndEmptyMap) {
  write_safetensors(path("nometa.safetensors"), {{"w", at::ones({2}, at::kFloat)}});
  EXPECT_FALSE(header_of(read_bytes(path("nometa.safetensors"))).contains("__metadata__"));
  SafetensorsReader reader(path("nometa.safetensors"));
  EXPECT_TRUE(reader.metadata().empty());
}

TEST_F(SafetensorsTest, WriterCopiesNonContiguousTensorsInLogicalOrder) {
  const at::Tensor base = at::arange(12, at::kFloat).reshape({3, 4});
  const at::Tensor transposed = base.t();             // non-contiguous view
  const at::Tensor strided = base.slice(1, 0, 4, 2);  // every other column
  ASSERT_FALSE(transposed.is_contiguous());
  write_safetensors(path("nc.safetensors"), {{"t", transposed}, {"s", strided}});
  SafetensorsReader reader(path("nc.safetensors"));
  EXPECT_TRUE(at::equal(reader.tensor("t"), transposed));
  EXPECT_TRUE(at::equal(reader.tensor("s"), strided));
  EXPECT_EQ(reader.tensor("t").sizes().vec(), (std::vector<int64_t>{4, 3}));
}

TEST_F(SafetensorsTest, WriterIgnoresAutogradState) {
  const at::Tensor w = at::ones({2, 2}, at::kFloat).set_requires_grad(true);
  write_safetensors(path("grad.safetensors"), {{"w", w}});
  SafetensorsReader reader(path("grad.safetensors"));
  EXPECT_TRUE(at::equal(reader.tensor("w"), w.detach()));
  EXPECT_FALSE(reader.tensor("w").requires_grad());
}

TEST_F(SafetensorsTest, TensorsAreOwnedCopiesThatOutliveTheReader) {
  write_safetensors(path("own.safetensors"), {{"x", at::arange(5, at::kLong)}});
  at::Tensor x;
  {
    SafetensorsReader reader(path("own.safetensors"));
    x = reader.tensor("x");
    const at::Tensor y = reader.tensor("x");
    EXPECT_NE(x.data_ptr(), y.data_ptr());
    x.add_(1);  // writable: must not be backed by the read-only mapping
    EXPECT_TRUE(at::equal(y, at::arange(5, at::kLong)));
  }
  EXPECT_TRUE(at::equal(x, at::arange(1, 6, at::kLong)));
}

TEST_F(SafetensorsTest, OverwritingReplacesTheFileAndLeavesNoTempFile) {
  const std::string p = path("over.safetensors");
  write_safetensors(p, {{"a", at::ones({100}, at::kDouble)}});
  write_safetensors(p, {{"b", at::zeros({2}, at::kInt)}});
  EXPECT_EQ(files_starting(p), std::vector<std::string>{"over.safetensors"});
  SafetensorsReader reader(p);
  EXPECT_EQ(reader.find("a"), nullptr);
  ASSERT_NE(reader.find("b"), nullptr);
  EXPECT_TRUE(at::equal(reader.tensor("b"), at::zeros({2}, at::kInt)));
}

TEST_F(SafetensorsTest, WriteIsDeterministic) {
  write_safetensors(path("d1.safetensors"), every_dtype(), {{"k", "v"}});
  write_safetensors(path("d2.safetensors"), every_dtype(), {{"k", "v"}});
  EXPECT_EQ(read_bytes(path("d1.safetensors")), read_bytes(path("d2.safetensors")));
}

// ---------------------------------------------------------------------------------------------
// Layout, checked by an independent parser

TEST_F(SafetensorsTest, WrittenLayoutMatchesSpecificationByHandParsing) {
  const auto tensors = every_dtype();
  const std::string p = path("layout.safetensors");
  write_safetensors(p, tensors, {{"format", "pt"}});
  const std::string bytes = read_bytes(p);
  ASSERT_GE(bytes.size(), 8u);

  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ((8 + n) % 8, 0u) << "data area must start 8-byte aligned";
  const std::string header = bytes.substr(8, n);
  // Only trailing spaces may pad the JSON; the JSON itself ends with '}'.
  const size_t last = header.find_last_not_of(' ');
  ASSERT_NE(last, std::string::npos);
  EXPECT_EQ(header[last], '}');
  EXPECT_LT(header.size() - 1 - last, 8u) << "more padding than alignment needs";

  const auto j = nlohmann::json::parse(header);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.at("__metadata__"), nlohmann::json({{"format", "pt"}}));
  const std::string data = bytes.substr(8 + n);

  // Tensors are packed contiguously, in name order, with no gaps, up to the end of the file.
  uint64_t expected_begin = 0;
  for (const auto& [name, t] : tensors) {  // std::map: name order
    ASSERT_TRUE(j.contains(name)) << name;
    const auto& e = j.at(name);
    EXPECT_EQ(e.at("dtype").get<std::string>(),
              adtree::io::dtype_name(adtree::io::from_scalar_type(t.scalar_type())));
    EXPECT_EQ(e.at("shape").get<std::vector<int64_t>>(), t.sizes().vec()) << name;
    const auto off = e.at("data_offsets").get<std::vector<uint64_t>>();
    ASSERT_EQ(off.size(), 2u);
    EXPECT_EQ(off[0], expected_begin) << name;
    EXPECT_EQ(off[1] - off[0], t.nbytes()) << name;
    ASSERT_LE(off[1], data.size());
    EXPECT_EQ(data.substr(off[0], off[1] - off[0]), bytes_of(t)) << name;
    expected_begin = off[1];
  }
  EXPECT_EQ(expected_begin, data.size());
  EXPECT_EQ(j.size(), tensors.size() + 1);
}

TEST_F(SafetensorsTest, WrittenBytesAreLittleEndianAndBoolIsOneBytePerElement) {
  const std::string p = path("le.safetensors");
  write_safetensors(p, {{"a", at::tensor(std::vector<int32_t>{0x01020304}, at::kInt)},
                        {"b", at::tensor(std::vector<int64_t>{1, 0, 1}, at::kLong).to(at::kBool)},
                        {"c", at::scalar_tensor(1.0, at::kHalf)}});
  const std::string bytes = read_bytes(p);
  uint64_t n = 0;
  const auto j = header_of(bytes, &n);
  EXPECT_EQ(j.at("a").at("data_offsets"), nlohmann::json({0, 4}));
  EXPECT_EQ(j.at("b").at("data_offsets"), nlohmann::json({4, 7}));
  EXPECT_EQ(j.at("c").at("data_offsets"), nlohmann::json({7, 9}));
  EXPECT_EQ(j.at("c").at("shape"), nlohmann::json::array());
  EXPECT_EQ(bytes.substr(8 + n), std::string("\x04\x03\x02\x01\x01\x00\x01\x00\x3C", 9));
}

TEST_F(SafetensorsTest, ReadsHandWrittenFileWithUnalignedOffsetsAndSpacePadding) {
  // U8 first pushes the F32 tensor to offset 3: copying must not assume alignment.
  const std::string header = R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[3,11]},)"
                             R"("a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]},)"
                             R"("__metadata__":{"who":"hand"}}     )";
  float f[2] = {1.25f, -7.0f};
  std::string data = "\x01\x02\x03";
  data.append(reinterpret_cast<const char*>(f), sizeof f);
  const std::string p = path("hand.safetensors");
  write_bytes(p, st_file(header, data));
  SafetensorsReader reader(p);
  ASSERT_EQ(reader.tensors().size(), 2u);
  EXPECT_EQ(reader.tensors()[0].name, "a");  // data-area order, not header order
  EXPECT_EQ(reader.tensors()[1].name, "b");
  EXPECT_TRUE(at::equal(reader.tensor("b"), at::tensor(std::vector<float>{1.25f, -7.0f})));
  EXPECT_TRUE(at::equal(reader.tensor("a"), at::tensor(std::vector<uint8_t>{1, 2, 3})));
  EXPECT_EQ(std::memcmp(reader.data(*reader.find("b")), f, sizeof f), 0);
  EXPECT_EQ(reader.metadata().at("who"), "hand");
  EXPECT_EQ(reader.path(), p);
}

TEST_F(SafetensorsTest, ToleratesGapsAndTrailingBytesInDataArea) {
  const std::string header = R"({"x":{"dtype":"I8","shape":[2],"data_offsets":[2,4]}})";
  const std::string p = path("gap.safetensors");
  write_bytes(p, st_file(header, std::string("\xAA\xBB\x05\xFB\xCC", 5)));
  SafetensorsReader reader(p);
  EXPECT_TRUE(at::equal(reader.tensor("x"), at::tensor(std::vector<int8_t>{5, -5})));
}

TEST_F(SafetensorsTest, BoolBytesOtherThanZeroOrOneReadAsTrue) {
  const std::string header = R"({"m":{"dtype":"BOOL","shape":[4],"data_offsets":[0,4]}})";
  const std::string p = path("bool.safetensors");
  write_bytes(p, st_file(header, std::string("\x00\x01\x02\xFF", 4)));
  SafetensorsReader reader(p);
  const at::Tensor m = reader.tensor("m");
  EXPECT_EQ(bytes_of(m), std::string("\x00\x01\x01\x01", 4));
  EXPECT_EQ(m.sum().item<int64_t>(), 3);
}

TEST_F(SafetensorsTest, TensorsSharingAnOffsetWithAnEmptyTensorDoNotOverlap) {
  const std::string header = R"({"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},)"
                             R"("x":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})";
  const std::string p = path("share.safetensors");
  write_bytes(p, st_file(header, std::string(8, '\0')));
  SafetensorsReader reader(p);
  EXPECT_EQ(reader.tensor("e").numel(), 0);
  EXPECT_EQ(reader.tensor("x").numel(), 2);
}

// ---------------------------------------------------------------------------------------------
// API errors

TEST_F(SafetensorsTest, TensorOnMissingNameThrowsNamingFileAndTensor) {
  const std::string p = path("miss.safetensors");
  write_safetensors(p, {{"present", at::ones({1})}});
  SafetensorsReader reader(p);
  EXPECT_EQ(reader.find("absent"), nullptr);
  try {
    reader.tensor("absent");
    ADD_FAILURE() << "expected adtree::Error";
  } catch (const adtree::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find("absent"), std::string::npos) << msg;
  }
}

TEST_F(SafetensorsTest, DataRejectsInfoOutsideTheDataArea) {
  const std::string p = path("info.safetensors");
  write_safetensors(p, {{"x", at::ones({2}, at::kFloat)}});
  SafetensorsReader reader(p);
  adtree::io::TensorInfo bogus = *reader.find("x");
  bogus.end = 1u << 20;
  EXPECT_THROW(reader.data(bogus), adtree::Error);
}

TEST_F(SafetensorsTest, MissingFileThrowsNamingIt) {
  expect_open_error(path("does_not_exist.safetensors"), {"No such file"});
}

TEST_F(SafetensorsTest, DirectoryIsRejected) {
  fs::create_directories(path("adir"));
  expect_open_error(path("adir"), {"not a regular file"});
}

TEST_F(SafetensorsTest, WriteIntoMissingDirectoryThrowsNamingPath) {
  const std::string p = path("no/such/dir/x.safetensors");
  try {
    write_safetensors(p, {{"x", at::ones({1})}});
    ADD_FAILURE() << "expected adtree::Error";
  } catch (const adtree::Error& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsTest, WriterRejectsUnsupportedDtypeReservedNameAndUndefinedTensor) {
  const std::string p = path("bad_write.safetensors");
  EXPECT_THROW(write_safetensors(p, {{"c", at::ones({2}, at::kComplexFloat)}}), adtree::Error);
  EXPECT_THROW(write_safetensors(p, {{"__metadata__", at::ones({2})}}), adtree::Error);
  EXPECT_THROW(write_safetensors(p, {{"u", at::Tensor()}}), adtree::Error);
  EXPECT_FALSE(fs::exists(p));
  EXPECT_TRUE(files_starting(p).empty());  // no temporary file left either
}

TEST(SafetensorsDtype, NamesSizesAndScalarTypesAreConsistent) {
  for (DType d : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                  DType::I16, DType::I8, DType::U8, DType::BOOL}) {
    EXPECT_EQ(adtree::io::parse_dtype(adtree::io::dtype_name(d)), d);
    EXPECT_EQ(adtree::io::from_scalar_type(adtree::io::to_scalar_type(d)), d);
    EXPECT_EQ(adtree::io::dtype_size(d),
              static_cast<size_t>(c10::elementSize(adtree::io::to_scalar_type(d))));
  }
  EXPECT_EQ(adtree::io::dtype_name(DType::BF16), "BF16");
  EXPECT_THROW(adtree::io::parse_dtype("f32"), adtree::Error);  // names are case-sensitive
  EXPECT_THROW(adtree::io::parse_dtype("F8_E4M3"), adtree::Error);
  EXPECT_THROW(adtree::io::from_scalar_type(at::kComplexDouble), adtree::Error);
}

// ---------------------------------------------------------------------------------------------
// Malformed files: each one is an adtree::Error naming the file, the tensor and the problem.

const std::string kGoodEntry = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
const std::string kEightBytes(8, '\0');

TEST_F(SafetensorsTest, EmptyFileIsRejected) {
  expect_rejected("empty.safetensors", "", {"0 bytes", "shorter than the 8-byte"});
}

TEST_F(SafetensorsTest, FileShorterThanLengthFieldIsRejected) {
  expect_rejected("short.safetensors", std::string("\x05\x00\x00", 3),
                  {"3 bytes", "shorter than the 8-byte"});
}

TEST_F(SafetensorsTest, HeaderLengthBeyondFileIsRejected) {
  expect_rejected("len.safetensors", le64(100) + "{}", {"header length 100", "beyond the file"});
}

TEST_F(SafetensorsTest, AbsurdHeaderLengthIsRejected) {
  expect_rejected("huge.safetensors", le64(std::numeric_limits<uint64_t>::max()) + "{}",
                  {"absurdly large"});
  expect_rejected("huge2.safetensors", le64(1ull << 40) + "{}", {"absurdly large"});
}

TEST_F(SafetensorsTest, HeaderThatIsNotJsonIsRejected) {
  expect_rejected("badjson.safetensors", st_file(R"({"x": {"dtype": )"), {"not valid JSON"});
  expect_rejected("trailing.safetensors", st_file("{} garbage"), {"not valid JSON"});
  expect_rejected("emptyheader.safetensors", st_file(""), {"not valid JSON"});
  expect_rejected("nulpad.safetensors", st_file(std::string("{}\0\0", 4)), {"not valid JSON"});
}

TEST_F(SafetensorsTest, HeaderWithInvalidUtf8IsRejected) {
  expect_rejected("utf8.safetensors", st_file("{\"\xFF\xFE\":" + kGoodEntry + "}", kEightBytes),
                  {"not valid JSON"});
}

TEST_F(SafetensorsTest, HeaderThatIsAnArrayIsRejected) {
  expect_rejected("array.safetensors", st_file("[" + kGoodEntry + "]", kEightBytes),
                  {"header must be a JSON object", "array"});
  expect_rejected("number.safetensors", st_file("42"), {"header must be a JSON object", "number"});
}

TEST_F(SafetensorsTest, DeeplyNestedHeaderIsRejected) {
  expect_rejected("deep.safetensors",
                  st_file("{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}"),
                  {"nested"});
}

TEST_F(SafetensorsTest, DuplicateTensorNameIsRejected) {
  expect_rejected("dup.safetensors",
                  st_file(R"({"w":)" + kGoodEntry + R"(,"w":)" + kGoodEntry + "}", kEightBytes),
                  {"'w'", "duplicate"});
}

TEST_F(SafetensorsTest, EntryThatIsNotAnObjectIsRejected) {
  expect_rejected("entry.safetensors", st_file(R"({"weight": [1, 2]})"),
                  {"tensor 'weight'", "must be a JSON object"});
}

TEST_F(SafetensorsTest, UnknownDtypeIsRejected) {
  expect_rejected("dtype.safetensors",
                  st_file(R"({"w":{"dtype":"F8","shape":[2],"data_offsets":[0,2]}})", "ab"),
                  {"tensor 'w'", "unknown dtype \"F8\""});
}

TEST_F(SafetensorsTest, MissingFieldsAreRejected) {
  expect_rejected("nooff.safetensors", st_file(R"({"w":{"dtype":"F32","shape":[2]}})", kEightBytes),
                  {"tensor 'w'", "missing \"data_offsets\""});
  expect_rejected("nodtype.safetensors",
                  st_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", kEightBytes),
                  {"tensor 'w'", "missing \"dtype\""});
  expect_rejected("noshape.safetensors",
                  st_file(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", kEightBytes),
                  {"tensor 'w'", "missing \"shape\""});
}

TEST_F(SafetensorsTest, FieldsOfWrongJsonTypeAreRejected) {
  expect_rejected("t1.safetensors",
                  st_file(R"({"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}})", kEightBytes),
                  {"tensor 'w'", "\"dtype\" must be a string"});
  expect_rejected("t2.safetensors",
                  st_file(R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,8]}})", kEightBytes),
                  {"tensor 'w'", "\"shape\" must be an array"});
  expect_rejected(
      "t3.safetensors",
      st_file(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", kEightBytes),
      {"tensor 'w'", "shape dimension 0 must be a non-negative integer"});
  expect_rejected(
      "t4.safetensors",
      st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":["0","8"]}})", kEightBytes),
      {"tensor 'w'", "data_offsets begin must be a non-negative integer"});
  expect_rejected(
      "t5.safetensors",
      st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":{"b":0}}})", kEightBytes),
      {"tensor 'w'", "[begin, end]"});
  expect_rejected(
      "t6.safetensors",
      st_file(R"({"w":{"dtype":"F32","shape":[null],"data_offsets":[0,8]}})", kEightBytes),
      {"tensor 'w'", "shape dimension 0"});
}

TEST_F(SafetensorsTest, NegativeDimensionIsRejected) {
  expect_rejected(
      "neg.safetensors",
      st_file(R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,8]}})", kEightBytes),
      {"tensor 'w'", "shape dimension 1 is negative"});
}

TEST_F(SafetensorsTest, ShapeProductOverflowIsRejected) {
  expect_rejected(
      "ovf.safetensors",
      st_file(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296,2],"data_offsets":[0,0]}})"),
      {"tensor 'w'", "overflows"});
  // The element count fits but the byte count does not.
  expect_rejected(
      "ovf2.safetensors",
      st_file(R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}})"),
      {"tensor 'w'", "overflows"});
  expect_rejected(
      "big.safetensors",
      st_file(R"({"w":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,0]}})"),
      {"tensor 'w'", "too large"});
}

TEST_F(SafetensorsTest, ShapeAndByteSizeMismatchIsRejected) {
  expect_rejected("mismatch.safetensors",
                  st_file(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", kEightBytes),
                  {"tensor 'w'", "size mismatch", "needs 12 bytes"});
}

TEST_F(SafetensorsTest, OffsetsOfWrongArityOrOrderAreRejected) {
  expect_rejected("arity.safetensors",
                  st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", kEightBytes),
                  {"tensor 'w'", "[begin, end]"});
  expect_rejected("order.safetensors",
                  st_file(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[8,0]}})", kEightBytes),
                  {"tensor 'w'", "begin 8 is after end 0"});
  expect_rejected("negoff.safetensors",
                  st_file(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[-1,-1]}})"),
                  {"tensor 'w'", "negative"});
}

TEST_F(SafetensorsTest, OffsetsBeyondDataAreaAreRejected) {
  expect_rejected(
      "range.safetensors",
      st_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", kEightBytes),
      {"tensor 'w'", "beyond the data area"});
  // Zero-size tensors still have to point inside the file.
  expect_rejected("range0.safetensors",
                  st_file(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[9,9]}})", kEightBytes),
                  {"tensor 'w'", "beyond the data area"});
}

TEST_F(SafetensorsTest, OverlappingTensorsAreRejected) {
  expect_rejected("overlap.safetensors",
                  st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"I32","shape":[2],"data_offsets":[4,12]}})",
                          std::string(12, '\0')),
                  {"tensor 'b'", "overlap", "'a'"});
  expect_rejected("same.safetensors",
                  st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}})",
                          kEightBytes),
                  {"overlap"});
}

TEST_F(SafetensorsTest, MetadataWithNonStringValueIsRejected) {
  expect_rejected("meta.safetensors",
                  st_file(R"({"__metadata__":{"epoch":3},"w":)" + kGoodEntry + "}", kEightBytes),
                  {"__metadata__", "'epoch'", "must be a string", "number"});
}

TEST_F(SafetensorsTest, MetadataThatIsNotAnObjectIsRejected) {
  expect_rejected("meta2.safetensors", st_file(R"({"__metadata__":["a","b"]})"),
                  {"__metadata__", "must be an object"});
}

TEST_F(SafetensorsTest, FileTruncatedInDataAreaIsRejected) {
  const std::string good = path("good.safetensors");
  write_safetensors(good, {{"a", at::ones({4}, at::kFloat)}, {"b", at::ones({4}, at::kDouble)}});
  const std::string bytes = read_bytes(good);
  expect_rejected("cut.safetensors", bytes.substr(0, bytes.size() - 1),
                  {"tensor 'b'", "beyond the data area", "truncated"});
}

// Every prefix of a valid file and many one-byte corruptions of its header: each either opens
// and reads every tensor, or fails with adtree::Error. Nothing else (no crash, no other type).
TEST_F(SafetensorsTest, TruncationsAndHeaderCorruptionsNeverEscapeAsOtherErrors) {
  const std::string good = path("fuzz_src.safetensors");
  write_safetensors(good,
                    {{"a", at::arange(6, at::kFloat).reshape({2, 3})},
                     {"b", at::ones({3}, at::kBool)},
                     {"c", at::empty({0}, at::kLong)}},
                    {{"k", "v"}});
  const std::string bytes = read_bytes(good);
  uint64_t n = 0;
  header_of(bytes, &n);
  const std::string p = path("fuzz.safetensors");
  int opened = 0, rejected = 0;
  auto probe = [&](const std::string& content, const std::string& what) {
    fs::remove(p);  // truncating a file in place makes ext4 flush it on close: slow
    write_bytes(p, content);
    try {
      SafetensorsReader reader(p);
      for (const auto& t : reader.tensors()) (void)reader.tensor(t.name);
      ++opened;
    } catch (const adtree::Error& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << what << ": " << e.what();
      ++rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << what << ": escaped as a non-adtree exception: " << e.what();
    }
  };
  for (size_t len = 0; len < bytes.size(); ++len) {
    probe(bytes.substr(0, len), "prefix of " + std::to_string(len) + " bytes");
  }
  for (size_t i = 0; i < 8 + n; ++i) {
    for (char c : {'\0', '"', '-', '9', '[', ']', '{', '}', ',', ':', '\xFF'}) {
      std::string mutated = bytes;
      mutated[i] = c;
      probe(mutated, "byte " + std::to_string(i) + " set to " + std::to_string(int(c)));
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(opened, 0);  // some corruptions (inside padding, metadata text) are harmless
}

// The in-memory reader (used by fuzz/fuzz_safetensors.cpp) runs the same validation as the file
// reader: same tensors and metadata for a good file, the same error for a bad one.
TEST_F(SafetensorsTest, MemoryReaderMatchesFileReader) {
  const std::string p = path("m.safetensors");
  write_safetensors(p, {{"a", at::arange(6, at::kFloat).reshape({2, 3})}, {"b", at::ones({0})}},
                    {{"k", "v"}});
  const std::string bytes = read_bytes(p);
  const SafetensorsReader file(p);
  const SafetensorsReader mem(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem");
  EXPECT_EQ(mem.path(), "mem");
  EXPECT_EQ(mem.metadata(), file.metadata());
  ASSERT_EQ(mem.tensors().size(), file.tensors().size());
  for (const auto& t : file.tensors()) {
    expect_bit_identical(file.tensor(t.name), mem.tensor(t.name), t.name);
  }

  for (size_t cut : {size_t(0), size_t(5), bytes.size() / 2, bytes.size() - 1}) {
    const std::string part = bytes.substr(0, cut);
    write_bytes(path("cut.safetensors"), part);
    std::string file_msg, mem_msg;
    try {
      SafetensorsReader r(path("cut.safetensors"));
    } catch (const adtree::Error& e) {
      file_msg = e.what();
    }
    try {
      SafetensorsReader r(reinterpret_cast<const uint8_t*>(part.data()), part.size(),
                          path("cut.safetensors"));
    } catch (const adtree::Error& e) {
      mem_msg = e.what();
    }
    EXPECT_FALSE(mem_msg.empty()) << "cut at " << cut;
    EXPECT_EQ(mem_msg, file_msg) << "cut at " << cut;
  }
}

// ---------------------------------------------------------------------------------------------
// Memory-mapped tensors (converted LlamaGen checkpoints are loaded without a second copy)

TEST_F(SafetensorsTest, MappedTensorsViewTheFileOutliveTheCallAndNeverWriteBack) {
  const std::string p = path("mapped.safetensors");
  write_safetensors(p, every_dtype());
  const auto before = read_bytes(p);
  auto mapped = adtree::io::map_safetensors(p);
  const auto copies = SafetensorsReader(p).all();
  ASSERT_EQ(mapped.size(), copies.size());
  for (const auto& [name, t] : copies) {  // bytes, not values: some dtypes hold NaN
    const auto& m = mapped.at(name);
    ASSERT_EQ(m.sizes(), t.sizes()) << name;
    ASSERT_EQ(m.scalar_type(), t.scalar_type()) << name;
    EXPECT_EQ(std::memcmp(m.data_ptr(), t.data_ptr(), t.nbytes()), 0) << name;
  }
  // Writing into a mapped tensor changes the tensor (private copy-on-write), not the file.
  mapped.at("f32").fill_(42.0f);
  EXPECT_EQ(mapped.at("f32").max().item<float>(), 42.0f);
  EXPECT_EQ(read_bytes(p), before);
  // The writer aligns every tensor, so a fresh map hands out the file's bytes unchanged.
  auto again = adtree::io::map_safetensors(p);
  EXPECT_EQ(std::memcmp(again.at("f32").data_ptr(), copies.at("f32").data_ptr(),
                        copies.at("f32").nbytes()),
            0);
}

TEST_F(SafetensorsTest, MappedTensorsAtUnalignedOffsetsAreCopied) {
  const std::string header = R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[3,11]},)"
                             R"("a":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}})";
  float f[2] = {1.25f, -7.0f};
  std::string data = "\x01\x02\x03";
  data.append(reinterpret_cast<const char*>(f), sizeof f);
  const std::string p = path("unaligned.safetensors");
  write_bytes(p, st_file(header, data));
  const auto m = adtree::io::map_safetensors(p);
  EXPECT_TRUE(at::equal(m.at("b"), at::tensor(std::vector<float>{1.25f, -7.0f})));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(m.at("b").data_ptr()) % alignof(float), 0u);
  EXPECT_THROW(adtree::io::map_safetensors(path("missing.safetensors")), adtree::Error);
}

}  // namespace
