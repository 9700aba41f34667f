// SplitInitializerData: the skeleton plus the removed raw_data put back is the message the bytes
// parse to; anything the walk cannot take apart exactly is left to protobuf (nullopt); and a
// model imported from a file keeps weights that point into it, valid after the file is gone.
#include "onnx/wire_split.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "onnx/import.h"
#include "onnx/onnx_pb.h"
#include "tests/onnx/onnx_test_util.h"

namespace tunejit::onnx_import {
namespace {

using testing::OnnxBuilder;
using testing::Ramp;

absl::Span<const uint8_t> AsBytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// A conv whose weight (36 KB) is split off, a bias (16 B) and a float_data initializer that are
// not.
OnnxBuilder ConvModel() {
  OnnxBuilder b;
  b.Input("x", {1, 16, 8, 8}).Init("w", {64, 16, 3, 3}, Ramp(64 * 16 * 9));
  b.Init("b", {64}, Ramp(64, 0.5f));
  onnx::TensorProto* typed = b.model().mutable_graph()->add_initializer();
  typed->set_name("unused_typed");
  typed->set_data_type(onnx::TensorProto::FLOAT);
  typed->add_dims(2);
  typed->add_float_data(1.5f);
  typed->add_float_data(2.5f);
  OnnxBuilder::Ints(b.Node("Conv", {"x", "w", "b"}, {"y"}, "conv"), "pads", {1, 1, 1, 1});
  b.Output("y");
  return b;
}

// Parses the skeleton and sets every removed raw_data back.
onnx::ModelProto Reassemble(const SplitModel& split) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(split.skeleton));
  EXPECT_EQ(static_cast<int>(split.raw_data.size()), m.graph().initializer_size());
  for (size_t i = 0; i < split.raw_data.size(); ++i) {
    absl::Span<const uint8_t> raw = split.raw_data[i];
    if (raw.empty()) continue;
    EXPECT_FALSE(m.graph().initializer(static_cast<int>(i)).has_raw_data());
    m.mutable_graph()
        ->mutable_initializer(static_cast<int>(i))
        ->set_raw_data(std::string(reinterpret_cast<const char*>(raw.data()), raw.size()));
  }
  return m;
}

TEST(WireSplitTest, SkeletonPlusRawDataIsTheModel) {
  const std::string bytes = ConvModel().Bytes();
  std::optional<SplitModel> split = SplitInitializerData(AsBytes(bytes));
  ASSERT_TRUE(split.has_value());
  ASSERT_EQ(split->raw_data.size(), 3u);
  EXPECT_EQ(split->raw_data[0].size(), 64u * 16 * 9 * 4);  // w: a view into `bytes`
  EXPECT_GE(split->raw_data[0].data(), AsBytes(bytes).data());
  EXPECT_LE(split->raw_data[0].data() + split->raw_data[0].size(),
            AsBytes(bytes).data() + bytes.size());
  EXPECT_TRUE(split->raw_data[1].empty());  // b: under kMinSplitRawData, left in
  EXPECT_TRUE(split->raw_data[2].empty());  // float_data: no raw_data
  EXPECT_LT(split->skeleton.size(), 1024u);
  EXPECT_EQ(Reassemble(*split).SerializeAsString(), bytes);
}

TEST(WireSplitTest, NothingLargeLeavesTheBytesToProtobuf) {
  EXPECT_FALSE(SplitInitializerData(AsBytes(testing::SmallConvNet().Bytes())).has_value());
  EXPECT_FALSE(SplitInitializerData({}).has_value());
}

// Every prefix of a model: the walk refuses a cut inside a field; a cut between top-level
// fields is a smaller valid message, which must reassemble to what protobuf parses.
TEST(WireSplitTest, TruncatedBytesAreRefusedOrExact) {
  const std::string bytes = ConvModel().Bytes();
  int splits = 0;
  // Byte by byte at both ends (where the tags are), in strides through the weight.
  for (size_t n = 0; n <= bytes.size(); n += (n < 64 || bytes.size() - n < 160) ? 1 : 97) {
    const std::string prefix = bytes.substr(0, n);
    std::optional<SplitModel> split = SplitInitializerData(AsBytes(prefix));
    if (!split) continue;
    ++splits;
    onnx::ModelProto direct;
    ASSERT_TRUE(direct.ParseFromString(prefix)) << n;
    EXPECT_EQ(Reassemble(*split).SerializeAsString(), direct.SerializeAsString()) << n;
  }
  EXPECT_GT(splits, 0);
}

// A length-delimited field `number` holding `payload`, as protobuf writes it.
std::string LengthDelimited(int number, const std::string& payload) {
  std::string out(1, static_cast<char>((number << 3) | 2));
  for (uint64_t v = payload.size();; v >>= 7) {
    out += static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
    if (v < 0x80) break;
  }
  return out + payload;
}

TEST(WireSplitTest, RepeatedRawDataOrGraphIsLeftToProtobuf) {
  // The weight with a second raw_data field (9): protobuf keeps the last.
  onnx::ModelProto m = ConvModel().model();
  const std::string last(8192, '\1');
  const std::string weight =
      m.graph().initializer(0).SerializeAsString() + LengthDelimited(9, last);
  m.mutable_graph()->mutable_initializer()->DeleteSubrange(0, 1);
  const std::string graph = LengthDelimited(5, weight) + m.graph().SerializeAsString();
  m.clear_graph();
  const std::string bytes = m.SerializeAsString() + LengthDelimited(7, graph);
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.graph().initializer(0).raw_data(), last);
  EXPECT_FALSE(SplitInitializerData(AsBytes(bytes)).has_value());
  // Two graph fields (7): protobuf merges them.
  const std::string model = ConvModel().Bytes();
  EXPECT_FALSE(SplitInitializerData(AsBytes(model + model)).has_value());
}

TEST(WireSplitTest, GroupsAndFieldZeroAreLeftToProtobuf) {
  const std::string bytes = ConvModel().Bytes();
  EXPECT_FALSE(SplitInitializerData(AsBytes(bytes + std::string("\x0b\x0c", 2))).has_value());
  EXPECT_FALSE(SplitInitializerData(AsBytes(bytes + std::string("\x00\x01", 2))).has_value());
  // A varint over ten bytes.
  EXPECT_FALSE(SplitInitializerData(AsBytes(bytes + "\x08" + std::string(11, '\xff'))).has_value());
}

// Imported from a file, the weights are views into its mapping: equal to the in-memory import's,
// and still readable after the file is removed.
TEST(WireSplitTest, FileWeightsMatchAndOutliveTheFile) {
  const std::string bytes = ConvModel().Bytes();
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("wire_split_test_" + std::to_string(getpid()) + ".onnx");
  { std::ofstream(path, std::ios::binary) << bytes; }
  absl::StatusOr<OnnxModel> from_file = ImportOnnx(path.string(), {});
  std::filesystem::remove(path);
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  absl::StatusOr<OnnxModel> from_bytes = ConvModel().Import();
  ASSERT_TRUE(from_bytes.ok()) << from_bytes.status();
  const std::vector<float> w = testing::WeightFloats(*from_file, "w");
  EXPECT_EQ(w, Ramp(64 * 16 * 9));
  EXPECT_EQ(w, testing::WeightFloats(*from_bytes, "w"));
  EXPECT_EQ(testing::WeightFloats(*from_file, "b"), Ramp(64, 0.5f));
}

}  // namespace
}  // namespace tunejit::onnx_import
