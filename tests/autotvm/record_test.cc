// Record line parsing: both formats, the traps real logs contain, and every kind of bad line.
#include "autotvm/record.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "tests/testing/test_data.h"

namespace tunejit::autotvm {
namespace {

std::vector<std::string> SeedLines() {
  std::ifstream in(::tunejit::testing::RepoData("seed-vgg16-v100.log"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The dense_small_batch seed line (line 2), used as the base of most mutations below.
const std::string& Small() {
  static const std::string* line = new std::string(SeedLines()[1]);
  return *line;
}

std::string Replace(const std::string& line, const std::string& from, const std::string& to) {
  std::string out = absl::StrReplaceAll(line, {{from, to}});
  EXPECT_NE(out, line) << "mutation did not apply: " << from;
  return out;
}

void ExpectBad(const std::string& line, const std::string& reason) {
  absl::StatusOr<Record> r = ParseRecordLine(line);
  ASSERT_FALSE(r.ok()) << line;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(reason), std::string::npos)
      << "got: " << r.status().message() << "\nwant: " << reason;
}

TEST(RecordTest, ParsesSeedFieldsV02) {
  absl::StatusOr<Record> r = ParseRecordLine(SeedLines()[0]);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->format, RecordFormat::kV02);
  EXPECT_EQ(r->target.text, "cuda -model=unknown");
  EXPECT_EQ(r->target.model, "unknown");
  EXPECT_EQ(r->workload.task_name, "dense_large_batch.cuda");
  EXPECT_EQ(r->index, 771496);
  EXPECT_TRUE(r->code_hash.is_null());
  ASSERT_EQ(r->config.knobs.size(), 3u);
  EXPECT_EQ(*r->config.Split("tile_k"), (std::vector<int64_t>{-1, 8, 2}));
  ASSERT_EQ(r->result.costs.size(), 1u);
  EXPECT_DOUBLE_EQ(r->result.costs[0], 0.000854268221590909);
  EXPECT_EQ(r->result.error_no, 0);
  EXPECT_DOUBLE_EQ(r->result.all_cost, 1.6328115463256836);
  EXPECT_DOUBLE_EQ(r->result.timestamp, 1584199993.2121232);
  EXPECT_EQ(r->tvm_version, "0.7.dev1");
  EXPECT_TRUE(r->ok());
}

TEST(RecordTest, ParsesV01WithAnyKeyOrder) {
  const std::string line =
      R"({"r": [[5.69732536806342e-05], 0, 14.116215467453003, 1535423916.7184713], "i": ["cuda -model=titanx", "topi_nn_conv2d", [["TENSOR", [1, 2048, 8, 8], "float32"], ["TENSOR", [192, 2048, 1, 1], "float32"], [1, 1], [0, 0], "NCHW", "float32"], {}, ["conv2d", [1, 2048, 8, 8, "float32"], [192, 2048, 1, 1, "float32"], [1, 1], [0, 0], "NCHW", "float32"], {"c": null, "e": [["tile_f", "sp", [6, 1, 32, 1]], ["tile_rc", "sp", [64, 32]], ["unroll_explicit", "ot", 1]], "t": "direct", "i": 77}], "v": 0.1})";
  absl::StatusOr<Record> r = ParseRecordLine(line);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->format, RecordFormat::kV01);
  EXPECT_EQ(r->target.model, "titanx");
  EXPECT_EQ(r->template_key, "direct");
  EXPECT_EQ(r->index, 77);
  EXPECT_EQ(*r->config.Split("tile_f"), (std::vector<int64_t>{6, 1, 32, 1}));
  EXPECT_EQ(SerializeRecord(*r), line);
  // The old conv2d argument list has no dilation: the typed view defaults it to 1.
  absl::StatusOr<Conv2dParams> p = ParseConv2dWorkload(r->workload);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->dilation_h, 1);
  EXPECT_EQ(p->layout, "NCHW");
  EXPECT_EQ(p->OutH(), 8);
}

TEST(RecordTest, MakeRecordWritesTvmLayout) {
  absl::StatusOr<Record> seed = ParseRecordLine(Small());
  ASSERT_TRUE(seed.ok());
  Record r = MakeRecord(seed->target, seed->workload, 5, seed->config, seed->result);
  EXPECT_EQ(SerializeRecord(r), Small());
  MeasureResult failed{{1e9}, kInstantiationError, 0.5, 1584201048.0};
  r = MakeRecord(seed->target, seed->workload, 5, seed->config, failed);
  EXPECT_NE(SerializeRecord(r).find(R"("result": [[1000000000.0], 1, 0.5, 1584201048.0], )"
                                    R"("version": 0.2, "tvm_version": "0.7.dev1"})"),
            std::string::npos)
      << SerializeRecord(r);
}

TEST(RecordTest, TrapsKnobsInEitherOrderAndRepeatedKeys) {
  // Knobs are looked up by name whatever their order.
  std::string line = SeedLines()[0];
  line = Replace(
      line,
      R"([["tile_x", "sp", [-1, 2, 4, 1]], ["tile_y", "sp", [-1, 2, 4, 1]], ["tile_k", "sp", [-1, 8, 2]]])",
      R"([["tile_k", "sp", [-1, 8, 2]], ["tile_y", "sp", [-1, 2, 4, 1]], ["tile_x", "sp", [-1, 2, 4, 1]]])");
  absl::StatusOr<Record> r = ParseRecordLine(line);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r->config.Split("tile_k"), (std::vector<int64_t>{-1, 8, 2}));
  EXPECT_EQ(SerializeRecord(*r), line);  // written back in its own order
  // A repeated key: the last value wins, as json.loads does.
  line = Replace(Small(), R"("tvm_version": "0.7.dev1"})",
                 R"("tvm_version": "0.6", "tvm_version": "0.7.dev1"})");
  r = ParseRecordLine(line);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->tvm_version, "0.7.dev1");
  // Explicit outer split factors (TopHub) are accepted; -1 and real extents both parse.
  r = ParseRecordLine(Replace(Small(), "[-1, 32]", "[128, 32]"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r->config.Split("tile_k"))[0], 128);
  // A repeated knob: the last one wins, as TVM's entity map does.
  r = ParseRecordLine(Replace(Small(), R"([["tile_k", "sp", [-1, 32]]])",
                              R"([["tile_k", "sp", [-1, 32]], ["tile_k", "sp", [-1, 64]]])"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r->config.Split("tile_k"))[1], 64);
}

// TopHub cuda_v0.09/v0.10 line 688 carries ["TENSOR", shape, dtype, [0, 0]]: TVM loads it, so do
// we (byte-exact), but the typed workload view refuses the malformed entry.
TEST(RecordTest, TrapFourElementTensorEntry) {
  std::string line = Replace(Small(), R"(["TENSOR", [1000, 4096], "float32"])",
                             R"(["TENSOR", [1000, 4096], "float32", [0, 0]])");
  absl::StatusOr<Record> r = ParseRecordLine(line);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(SerializeRecord(*r), line);
  absl::StatusOr<DenseParams> p = ParseDenseWorkload(r->workload);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("is not [\"TENSOR\", shape, dtype]"), std::string::npos)
      << p.status();
  ExpectBad(Replace(line, "[1000, 4096]", "[1000, -1]"), "positive integers");
}

TEST(RecordTest, TrapPaddingEncodings) {
  // Same convolution with int, 2- and 4-element padding: different workloads, same params.
  std::string conv = SeedLines().back();  // conv2d_nchw.cuda, padding [1, 1, 1, 1]
  std::vector<std::string> variants = {
      conv, Replace(conv, "[1, 1], [1, 1, 1, 1], [1, 1]", "[1, 1], [1, 1], [1, 1]"),
      Replace(conv, "[1, 1], [1, 1, 1, 1], [1, 1]", "[1, 1], 1, [1, 1]")};
  std::vector<std::string> keys;
  for (const std::string& v : variants) {
    absl::StatusOr<Record> r = ParseRecordLine(v);
    ASSERT_TRUE(r.ok()) << r.status();
    absl::StatusOr<Conv2dParams> p = ParseConv2dWorkload(r->workload);
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->pad_top + p->pad_left + p->pad_bottom + p->pad_right, 4);
    EXPECT_EQ(p->OutH(), 224);
    keys.push_back(r->workload.Key());
  }
  EXPECT_NE(keys[0], keys[1]);
  EXPECT_NE(keys[1], keys[2]);
  // Asymmetric 4-element padding is (top, left, bottom, right).
  absl::StatusOr<Record> r = ParseRecordLine(Replace(conv, "[1, 1, 1, 1]", "[0, 1, 2, 3]"));
  ASSERT_TRUE(r.ok());
  absl::StatusOr<Conv2dParams> p = ParseConv2dWorkload(r->workload);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->pad_top, 0);
  EXPECT_EQ(p->pad_left, 1);
  EXPECT_EQ(p->pad_bottom, 2);
  EXPECT_EQ(p->pad_right, 3);
  EXPECT_EQ(p->OutH(), 224 + 2 - 3 + 1);
  EXPECT_EQ(p->OutW(), 224 + 4 - 3 + 1);
}

TEST(RecordTest, BadLinesNameTheReason) {
  ExpectBad(Small().substr(0, 120), "invalid JSON");
  ExpectBad("", "invalid JSON");
  ExpectBad("[1, 2]", "not a JSON object");
  ExpectBad("{}", "neither 'input'");
  ExpectBad(Replace(Small(), R"("version": 0.2)", R"("version": 0.3)"), "unsupported version 0.3");
  ExpectBad(Replace(Small(), R"("version": 0.2)", R"("version": "0.2")"), "unsupported version");
  ExpectBad(Replace(Small(), R"(, "version": 0.2)", ""), "missing field 'version'");
  ExpectBad(Replace(Small(), R"(, "tvm_version": "0.7.dev1")", ""), "missing field 'tvm_version'");
  ExpectBad(Replace(Small(), R"("code_hash": null, )", ""), "missing field 'code_hash'");
  ExpectBad(Replace(Small(), R"("dense_small_batch.cuda")", "7"),
            "task name must be a non-empty string");
  ExpectBad(Replace(Small(), R"("dense_small_batch.cuda")", R"("")"), "task name");
  ExpectBad(Replace(Small(), R"("cuda -model=unknown")", R"("")"), "empty target string");
  ExpectBad(Replace(Small(), R"("cuda -model=unknown")", R"("cuda model")"), "bad target option");
  ExpectBad(Replace(Small(), R"(, {}], "config")", R"(, []], "config")"),
            "kwargs must be an object");
  ExpectBad(Replace(Small(), "[128, 4096]", "[128, -4096]"), "must hold positive integers");
  ExpectBad(Replace(Small(), "[1000, 4096]", "[0, 4096]"), "must hold positive integers");
  ExpectBad(Replace(Small(), "[1000, 4096]", "[1000.5, 4096]"), "must hold positive integers");
  ExpectBad(Replace(Small(), R"(["TENSOR", [128, 4096], "float32"])",
                    R"(["TENSOR", 128, 4096, "float32"])"),
            "TENSOR entry must start");
  ExpectBad(Replace(Small(), R"(["TENSOR", [128, 4096], "float32"])", R"(["TENSOR", [128, 4096]])"),
            "TENSOR entry must start");
  ExpectBad(
      Replace(Small(), R"(["TENSOR", [128, 4096], "float32"])", R"(["TENSOR", [128, 4096], 32])"),
      "TENSOR entry must start");
  ExpectBad(Replace(Small(), R"([["tile_k", "sp", [-1, 32]]])", "[]"), "empty entity list");
  ExpectBad(Replace(Small(), R"(["tile_k", "sp", [-1, 32]])", R"(["tile_k", "sp"])"),
            "[name, type, value]");
  ExpectBad(Replace(Small(), "[-1, 32]", R"("32")"), "non-empty list");
  ExpectBad(Replace(Small(), "[-1, 32]", "[-1, 0]"), "size <= 0");
  ExpectBad(Replace(Small(), "[-1, 32]", "[-1, 3.5]"), "list of integers");
  ExpectBad(Replace(Small(), R"("sp")", R"("xx")"), "unknown knob type 'xx'");
  ExpectBad(Replace(Small(), R"("index": 5)", R"("index": -5)"), "non-negative integer");
  ExpectBad(Replace(Small(), R"("index": 5)", R"("index": "5")"), "non-negative integer");
  ExpectBad(Replace(Small(), R"("index": 5)", R"("index": 123456789012345678901234567890)"),
            "too large");
  ExpectBad(Replace(Small(), "[0.0023226218153846153]", "[1e999]"), "overflow");
  ExpectBad(Replace(Small(), "[0.0023226218153846153]", "[]"), "costs must be a non-empty list");
  ExpectBad(Replace(Small(), "[0.0023226218153846153]", R"(["fast"])"), "must be a number");
  ExpectBad(Replace(Small(), "[0.0023226218153846153], 0,", "[0.0023226218153846153], \"0\","),
            "error_no");
  ExpectBad(Replace(Small(), ", 1.3888931274414062, 1584201048.038974]", "]"),
            "[costs, error_no, all_cost, timestamp]");
  ExpectBad(std::string(5000, '[') + std::string(5000, ']'), "nested deeper");
  ExpectBad(R"({"v": 0.1})", "neither");
  ExpectBad(R"({"i": [], "r": [], "v": 0.2})", "unsupported version");
}

// TVM 0.8 and later write the dense templates' tasks as "*.gpu": the record reads as TVM 0.7's
// template and writes its own name back, byte for byte.
TEST(RecordTest, LaterTaskNamesReadAsTheSameTemplateAndWriteBack) {
  for (const std::string& line : {SeedLines()[0], SeedLines()[1]}) {
    absl::StatusOr<Record> original = ParseRecordLine(line);
    ASSERT_TRUE(original.ok()) << original.status();
    const std::string cuda = original->workload.task_name;
    const std::string gpu = absl::StrReplaceAll(cuda, {{".cuda", ".gpu"}});
    const std::string later = absl::StrReplaceAll(
        Replace(line, "\"" + cuda + "\"", "\"" + gpu + "\""), {{"\"0.7.dev1\"", "\"0.8.0\""}});
    absl::StatusOr<Record> r = ParseRecordLine(later);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->workload.task_name, cuda);
    EXPECT_EQ(r->written_task_name, gpu);
    EXPECT_EQ(r->TaskNameAsWritten(), gpu);
    EXPECT_EQ(r->workload, original->workload);  // the same workload key: chosen for .cuda queries
    EXPECT_EQ(r->tvm_version, "0.8.0");
    EXPECT_EQ(SerializeRecord(*r), later);
  }
  EXPECT_EQ(CanonicalTaskName("dense_small_batch.gpu"), "dense_small_batch.cuda");
  EXPECT_EQ(CanonicalTaskName("dense_large_batch.gpu"), "dense_large_batch.cuda");
  EXPECT_EQ(CanonicalTaskName("conv2d_nchw.cuda"), "conv2d_nchw.cuda");
  EXPECT_EQ(CanonicalTaskName("batch_matmul.cuda"), "batch_matmul.cuda");
}

}  // namespace
}  // namespace tunejit::autotvm
