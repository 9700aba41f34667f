// `tunejit run` without a GPU (this machine and CI): bad usage exits 2 with a message, bad input
// files exit 1 naming the file, and the missing GPU is reported with what to do instead.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/raw_floats.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/device.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/onnx/tensor_corpus.h"
#include "tests/testing/test_data.h"

namespace tunejit::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Runs `tunejit run ARGS`, returning the exit code; stdout and stderr go to *out / *err.
int RunCli(const std::vector<std::string>& args, std::string* out, std::string* err) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = RunRunCommand(args);
  *out = ::testing::internal::GetCapturedStdout();
  *err = ::testing::internal::GetCapturedStderr();
  return code;
}

TEST(RunCommand, HelpListsTheFlags) {
  std::string out, err;
  ASSERT_EQ(RunCli({"--help"}, &out, &err), kExitOk);
  for (const char* flag : {"--model", "--log", "--weights", "--batch", "--precision", "--repeats",
                           "--device", "--cache-dir", "--no-cudnn", "--baseline", "--no-verify",
                           "--prefer-own-gpu", "--seed", "--json", "--plot"}) {
    EXPECT_THAT(out, HasSubstr(flag));
  }
}

TEST(RunCommand, BadUsageExits2WithAMessage) {
  std::string out, err;
  EXPECT_EQ(RunCli({"--frobnicate"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("unknown flag --frobnicate"));
  EXPECT_EQ(RunCli({"--precision", "fp8"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("fp8"));
  EXPECT_THAT(err, HasSubstr("expected fp32, int8 or fp16"));
  EXPECT_EQ(RunCli({"--batch", "0"}, &out, &err), kExitUsage);  // 0 is not "the default"
  EXPECT_THAT(err, HasSubstr("--batch must be in 1..4096, got 0"));
  EXPECT_EQ(RunCli({"--batch", "-3"}, &out, &err), kExitUsage);
  EXPECT_EQ(RunCli({"--batch", "many"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("bad value for --batch: 'many'"));
  EXPECT_EQ(RunCli({"--repeats", "0"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--repeats"));
  EXPECT_EQ(RunCli({"--device", "-1"}, &out, &err), kExitUsage);
  EXPECT_EQ(RunCli({"--baseline", "int8"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--baseline must be fp32 or fp16, got 'int8'"));
  EXPECT_EQ(RunCli({"extra"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("unexpected argument 'extra'"));
}

TEST(RunCommand, UnknownModelsAndOnnxWeightsAreUsageErrors) {
  std::string out, err;
  EXPECT_EQ(RunCli({"--model", "VGG16"}, &out, &err), kExitUsage);  // names are exact
  EXPECT_THAT(err, HasSubstr("unknown model 'VGG16'"));
  EXPECT_EQ(RunCli({"--model", "m.onnx", "--weights", "w.safetensors"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--weights applies to vgg16 only"));
}

// A small ONNX conv net: imported, its input read from --input (checked for size), then the
// missing GPU is reported.
TEST(RunCommand, OnnxModelAndRawInputAreCheckedBeforeTheGpu) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tunejit-run-onnx-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "net.onnx").string();
  std::ofstream(model, std::ios::binary) << testing::SmallConvNet().Bytes();
  std::string out, err;
  EXPECT_EQ(RunCli({"--model", (dir / "missing.onnx").string()}, &out, &err), kExitFailure);
  EXPECT_THAT(err, HasSubstr("missing.onnx"));
  // The model has a dynamic batch.
  EXPECT_EQ(RunCli({"--model", model, "--precision", "fp32"}, &out, &err), kExitFailure);
  EXPECT_THAT(err, HasSubstr("is dynamic: pass --batch N"));
  const std::string input = (dir / "x.bin").string();
  ASSERT_TRUE(WriteFloats(input, std::vector<float>(2 * 3 * 8 * 8 - 1, 0.5f)).ok());
  EXPECT_EQ(RunCli({"--model", model, "--batch", "2", "--input", input}, &out, &err), kExitFailure);
  EXPECT_THAT(err, HasSubstr("holds 383 float32 values; input 'x' [2, 3, 8, 8] (F32) needs 384"));
  ASSERT_TRUE(WriteFloats(input, std::vector<float>(2 * 3 * 8 * 8, 0.5f)).ok());
  absl::StatusOr<std::vector<float>> back = ReadFloats(input);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->size(), 384u);
  EXPECT_EQ(back->at(7), 0.5f);
  if (!GpuAvailable().ok()) {
    EXPECT_EQ(RunCli({"--model", model, "--batch", "2", "--input", input}, &out, &err),
              kExitFailure);
    EXPECT_THAT(err, HasSubstr("no usable GPU"));
  }
  std::filesystem::remove_all(dir);
}

// An int64 input (BERT's token ids): --input is raw int64, its size checked before the GPU; a
// float file of the same element count is a byte count of half as many ids.
TEST(RunCommand, Int64InputIdsAreCheckedBeforeTheGpu) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tunejit-run-ids-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "bert.onnx").string();
  std::ofstream(model, std::ios::binary) << testing::BertLayerModel().Bytes();
  const std::string ids = (dir / "ids.bin").string();
  auto write_ids = [&ids](const std::vector<int64_t>& v) {
    std::ofstream(ids, std::ios::binary)
        .write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * 8));
  };
  std::string out, err;
  write_ids(std::vector<int64_t>(7, 1));  // too short: 2 x 4 ids needed
  EXPECT_EQ(
      RunCli({"--model", model, "--batch", "2", "--precision", "fp32", "--input", ids}, &out, &err),
      kExitFailure);
  EXPECT_THAT(err, HasSubstr("holds 7 int64 values; input 'input_ids' [2, 4] (I64) needs 8"));
  std::ofstream(ids, std::ios::binary) << "12345";  // not whole int64 values
  EXPECT_EQ(
      RunCli({"--model", model, "--batch", "2", "--precision", "fp32", "--input", ids}, &out, &err),
      kExitFailure);
  EXPECT_THAT(err, HasSubstr("5 bytes is not a whole number of int64 values"));
  ASSERT_TRUE(WriteFloats(ids, std::vector<float>(8, 1.0f)).ok());  // float32: 4 ids' bytes
  EXPECT_EQ(
      RunCli({"--model", model, "--batch", "2", "--precision", "fp32", "--input", ids}, &out, &err),
      kExitFailure);
  EXPECT_THAT(err, HasSubstr("holds 4 int64 values"));
  absl::StatusOr<std::vector<int64_t>> back = ReadInt64s(ids);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->size(), 4u);
  if (!GpuAvailable().ok()) {
    write_ids({1, 2, 3, 4, 5, 6, 7, 10});  // the vocabulary is 10: id 10 is out of range
    EXPECT_EQ(RunCli({"--model", model, "--batch", "2", "--precision", "fp32", "--input", ids},
                     &out, &err),
              kExitFailure);
    EXPECT_THAT(err, HasSubstr("warning: 1 of 8 ids in " + ids +
                               " are outside the embedding table's 10 rows"));
    EXPECT_THAT(err, HasSubstr("no usable GPU"));
    write_ids({1, 2, 3, 4, 5, 6, 7, 8});
    EXPECT_EQ(RunCli({"--model", model, "--batch", "2", "--precision", "fp32", "--input", ids},
                     &out, &err),
              kExitFailure);
    EXPECT_THAT(err, HasSubstr("no usable GPU"));
    EXPECT_THAT(err, Not(HasSubstr("warning")));
    EXPECT_EQ(RunCli({"--model", model, "--batch", "2", "--precision", "fp16"}, &out, &err),
              kExitFailure);  // random ids from --seed
    EXPECT_THAT(err, HasSubstr("no usable GPU"));
  }
  std::filesystem::remove_all(dir);
}

// A model with an op the importer does not map: exit 1 naming the node and its op, with or
// without a GPU (the import comes first).
TEST(RunCommand, UnsupportedOnnxOpExits1NamingTheNode) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("tunejit-run-unsupported-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model = (dir / "nms.onnx").string();
  testing::OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8}).Output("y");
  b.Node("Relu", {"x"}, {"r"}).set_name("act");
  b.Node("Resize", {"r"}, {"y"}).set_name("upsample");
  std::ofstream(model, std::ios::binary) << b.Bytes();
  std::string out, err;
  EXPECT_EQ(RunCli({"--model", model, "--precision", "fp32"}, &out, &err), kExitFailure);
  EXPECT_THAT(err, HasSubstr("unsupported op 'Resize'"));
  EXPECT_THAT(err, HasSubstr("'upsample'"));
  std::filesystem::remove_all(dir);
}

TEST(RunCommand, MissingFilesExit1NamingTheFile) {
  const std::string missing =
      (std::filesystem::temp_directory_path() / ("tunejit-run-" + std::to_string(::getpid())))
          .string();
  std::string out, err;
  EXPECT_EQ(RunCli({"--batch", "1", "--weights", missing + ".safetensors"}, &out, &err),
            kExitFailure);
  EXPECT_THAT(err, HasSubstr(missing + ".safetensors"));
  EXPECT_EQ(RunCli({"--batch", "1", "--log", missing + ".log"}, &out, &err), kExitFailure);
  EXPECT_THAT(err, HasSubstr(missing + ".log"));
}

TEST(RunCommand, WithoutAGpuSaysSoAndWhatStillWorks) {
  if (GpuAvailable().ok()) GTEST_SKIP() << "a GPU is present";
  std::string out, err;
  // The default log is found (shipped data), random weights are generated, then the GPU check.
  EXPECT_EQ(RunCli({"--batch", "1", "--precision", "fp32"}, &out, &err), kExitFailure);
  EXPECT_THAT(err, HasSubstr("no usable GPU"));
  EXPECT_THAT(err, HasSubstr("needs an NVIDIA GPU"));
  EXPECT_THAT(err, HasSubstr("tunejit warm"));
  EXPECT_THAT(err, Not(HasSubstr("seed-vgg16-v100.log is not in")));
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace tunejit::cli
