// The SASS of the Hopper templates, as NVRTC builds them for the fallback configs: tensor-core
// HGMMA (fp16) and IGMMA (int8) instructions, TMA loads (UTMALDG, 2-D for the GEMM, 3-D and 4-D for
// the convolution, 4-D im2col for its im2col tiles) and the setmaxnreg register split (USETMAXREG).
// A pooled conv adds its window exchange (warpgroup BAR.SYNC, STS / LDS, SHFL.BFLY); an
// activation in the epilogue spills nothing (silu's exp: MUFU.EX2). PTX only
// says what we asked for; the SASS is what runs. Disassembles with nvdisasm (CUDA's, not
// in Debian's toolkit: PyPI's nvidia-cuda-nvdisasm); skips when none is found ($TUNEJIT_NVDISASM,
// else `nvdisasm` on PATH).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"

namespace tunejit {
namespace {

std::string Nvdisasm() {
  const char* env = std::getenv("TUNEJIT_NVDISASM");
  if (env != nullptr && *env != '\0') return env;
  return std::system("command -v nvdisasm > /dev/null 2>&1") == 0 ? "nvdisasm" : "";
}

// The opcodes nvdisasm prints for `cubin`, in order, e.g. "HGMMA.64x128x16.F32", "STG.E.128".
std::vector<std::string> SassSequence(const std::string& cubin, const std::string& tool) {
  const std::filesystem::path file =
      std::filesystem::path(::testing::TempDir()) / "tunejit_wgmma_sass.cubin";
  std::ofstream(file, std::ios::binary) << cubin;
  const std::string command = tool + " -c " + file.string() + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::vector<std::string> sequence;
  if (!pipe) return sequence;
  const std::regex opcode(
      R"(\b(HGMMA|IGMMA|UTMALDG|USETMAXREG|STG|STS|LDS|BAR|SHFL|STL|LDL|LDG|MUFU)[.A-Z0-9x]*)");
  char line[4096];
  while (std::fgets(line, sizeof line, pipe.get()) != nullptr) {
    std::string text(line);
    for (std::sregex_iterator it(text.begin(), text.end(), opcode), end; it != end; ++it) {
      sequence.push_back(it->str());
    }
  }
  return sequence;
}

// Opcode (without its operands) -> count, e.g. "HGMMA.64x128x16.F32" -> 4.
std::map<std::string, int> SassOpcodes(const std::string& cubin, const std::string& tool) {
  std::map<std::string, int> counts;
  for (const std::string& op : SassSequence(cubin, tool)) ++counts[op];
  return counts;
}

// The sm_90a cubin of `op`'s first kernel at `config`, "" when it does not compile.
std::string ConfigCubin(const OpTemplate& op, const autotvm::Workload& w,
                        const autotvm::ConfigEntity& config, const Epilogue& epilogue) {
  absl::StatusOr<OpPlan> plan =
      op.Specialize(w, config, DeviceLimits::ForArch({9, 0, false}), epilogue);
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return "";
  KernelCompiler compiler(nullptr);
  absl::StatusOr<CompiledKernel> kernel = compiler.Compile(plan->kernels[0].spec, {9, 0, false});
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  return kernel.ok() ? kernel->program.cubin : "";
}

std::map<std::string, int> ConfigSass(const OpTemplate& op, const autotvm::Workload& w,
                                      const autotvm::ConfigEntity& config, const std::string& tool,
                                      const Epilogue& epilogue) {
  const std::string cubin = ConfigCubin(op, w, config, epilogue);
  return cubin.empty() ? std::map<std::string, int>{} : SassOpcodes(cubin, tool);
}

// The SASS of a VGG conv with its network's epilogue (bias, ReLU; int8 requantized), printed.
std::map<std::string, int> NetworkConvSass(const autotvm::Workload& w,
                                           const autotvm::ConfigEntity& config,
                                           const std::string& tool, bool int8) {
  const Epilogue epilogue =
      int8 ? Epilogue{.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize}
           : Epilogue{.bias = true, .relu = true};
  std::map<std::string, int> sass =
      ConfigSass(*FindOpTemplate(w.task_name), w, config, tool, epilogue);
  for (const auto& [op, count] : sass) std::printf("  %s x %d\n", op.c_str(), count);
  return sass;
}

std::map<std::string, int> FallbackSass(const OpTemplate& op, const autotvm::Workload& w,
                                        const std::string& tool,
                                        const Epilogue& epilogue = {.bias = true, .relu = true}) {
  absl::StatusOr<autotvm::ConfigEntity> config = op.FallbackConfig(w);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return {};
  return ConfigSass(op, w, *config, tool, epilogue);
}

int CountPrefix(const std::map<std::string, int>& counts, const std::string& prefix) {
  int n = 0;
  for (const auto& [op, count] : counts) {
    if (op.rfind(prefix, 0) == 0) n += count;
  }
  return n;
}

// A VGG-style conv at batch 128: H = W = hw, C = CO = c, 3x3, padding 1.
autotvm::Workload Conv3x3(int64_t hw, int64_t c, const std::string& dtype, const std::string& out) {
  return {autotvm::kConv2dNhwcWgmma, autotvm::Json::array({testing::Tensor({128, hw, hw, c}, dtype),
                                                           testing::Tensor({c, 3, 3, c}, dtype),
                                                           {1, 1},
                                                           {1, 1, 1, 1},
                                                           {1, 1},
                                                           out})};
}

TEST(WgmmaSass, GemmRunsHgmmaAnd2dTma) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::Workload w{
      "dense_wgmma.cuda",
      autotvm::Json::array({testing::Tensor({4096, 4096}, "float16"),
                            testing::Tensor({4096, 4096}, "float16"), nullptr, "float16"})};
  const std::map<std::string, int> sass = FallbackSass(*FindOpTemplate(w.task_name), w, tool);
  for (const auto& [op, count] : sass) std::printf("  %s x %d\n", op.c_str(), count);
  EXPECT_GT(CountPrefix(sass, "HGMMA.64x128x16.F32"), 0);  // the fallback's tile_n = 128
  EXPECT_GT(CountPrefix(sass, "UTMALDG.2D"), 0);
  EXPECT_GT(CountPrefix(sass, "USETMAXREG"), 0);  // two consumer warpgroups
}

TEST(WgmmaSass, ConvRunsHgmmaAnd3dAnd4dTma) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::Workload w = Conv3x3(56, 256, "float16", "float16");
  const std::map<std::string, int> sass = FallbackSass(*FindOpTemplate(w.task_name), w, tool);
  for (const auto& [op, count] : sass) std::printf("  %s x %d\n", op.c_str(), count);
  EXPECT_GT(CountPrefix(sass, "HGMMA.64x128x16.F32"), 0);
  EXPECT_GT(CountPrefix(sass, "UTMALDG.4D"), 0);
  EXPECT_GT(CountPrefix(sass, "UTMALDG.3D"), 0);
  EXPECT_EQ(CountPrefix(sass, "IGMMA"), 0);
}

// im2col = 1: the input loads are TMA's im2col mode.
TEST(WgmmaSass, Im2colConvRunsIm2colTma) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::Workload w = Conv3x3(28, 512, "float16", "float16");
  const autotvm::ConfigEntity config =
      testing::Config({OtherKnob("tile_h", 4), OtherKnob("tile_w", 64), OtherKnob("tile_n", 128),
                       OtherKnob("stages", 4), OtherKnob("consumer_wg", 2),
                       OtherKnob("pingpong", 0), OtherKnob("im2col", 1)});
  const std::map<std::string, int> sass =
      ConfigSass(*FindOpTemplate(w.task_name), w, config, tool, {.bias = true, .relu = true});
  for (const auto& [op, count] : sass) std::printf("  %s x %d\n", op.c_str(), count);
  EXPECT_GT(CountPrefix(sass, "HGMMA.64x128x16.F32"), 0);
  EXPECT_GT(CountPrefix(sass, "UTMALDG.4D.IM2COL"), 0);
  EXPECT_GT(CountPrefix(sass, "UTMALDG.3D"), 0);  // the weights stay tiled
}

// cluster = 2: the input's im2col loads are multicast to both blocks of the cluster; and the
// fp16 output goes out in 16-byte stores (WgmmaStoreWide), the requantized int8 one too.
TEST(WgmmaSass, ClusterConvMulticastsAndStoresWide) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::ConfigEntity config =
      testing::Config({OtherKnob("tile_h", 4), OtherKnob("tile_w", 64), OtherKnob("tile_n", 128),
                       OtherKnob("stages", 4), OtherKnob("consumer_wg", 2),
                       OtherKnob("pingpong", 0), OtherKnob("im2col", 1), OtherKnob("cluster", 2)});
  const autotvm::Workload w = Conv3x3(28, 512, "float16", "float16");
  const std::map<std::string, int> sass =
      ConfigSass(*FindOpTemplate(w.task_name), w, config, tool, {.bias = true, .relu = true});
  for (const auto& [op, count] : sass) std::printf("  %s x %d\n", op.c_str(), count);
  EXPECT_GT(CountPrefix(sass, "UTMALDG.4D.IM2COL.MULTICAST"), 0);
  EXPECT_GT(CountPrefix(sass, "UTMALDG.3D"), 0);
  EXPECT_GT(CountPrefix(sass, "STG.E.128"), 0);
  const autotvm::Workload w8 = Conv3x3(28, 512, "int8", "int32");
  const std::map<std::string, int> sass8 =
      ConfigSass(*FindOpTemplate(w8.task_name), w8, config, tool,
                 {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize});
  for (const auto& [op, count] : sass8) std::printf("  %s x %d\n", op.c_str(), count);
  EXPECT_GT(CountPrefix(sass8, "IGMMA.64x128x32"), 0);
  EXPECT_GT(CountPrefix(sass8, "STG.E.128"), 0);
}

// conv2d_nhwc_wgmma_pool.cuda pooling in the kernel (16 x 16 tiles, 128 channels, the tuned
// features.7 config): HGMMA, the window exchange's warpgroup barriers and shared stores / loads,
// and 16-byte stores of the pooled rows.
TEST(WgmmaSass, PooledConvExchangesWindowsInSharedMemory) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  autotvm::Workload w = Conv3x3(112, 128, "float16", "float16");
  w.task_name = autotvm::kConv2dNhwcWgmmaPool;
  const autotvm::ConfigEntity config =
      testing::Config({OtherKnob("tile_h", 16), OtherKnob("tile_w", 16), OtherKnob("tile_n", 128),
                       OtherKnob("stages", 4), OtherKnob("consumer_wg", 2),
                       OtherKnob("pingpong", 0), OtherKnob("im2col", 0), OtherKnob("cluster", 1)});
  const OpTemplate& op = *FindOpTemplate(w.task_name);
  absl::StatusOr<OpPlan> plan = op.Specialize(w, config, DeviceLimits::ForArch(GpuArch{9, 0, true}),
                                              {.bias = true, .relu = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);  // pooled in the kernel
  const std::map<std::string, int> sass =
      ConfigSass(op, w, config, tool, {.bias = true, .relu = true});
  for (const auto& [op_name, count] : sass) std::printf("  %s x %d\n", op_name.c_str(), count);
  EXPECT_GT(CountPrefix(sass, "HGMMA.64x128x16.F32"), 0);
  EXPECT_GT(CountPrefix(sass, "BAR.SYNC"), 1);  // beyond the block's one __syncthreads
  EXPECT_GT(CountPrefix(sass, "STS"), 0);
  EXPECT_GT(CountPrefix(sass, "LDS"), 0);
  EXPECT_GT(CountPrefix(sass, "SHFL.BFLY"), 0);
  EXPECT_GT(CountPrefix(sass, "STG.E.128"), 0);
}

// The network's int8 pooled configs (VGG-16 conv1_2 and conv2_2 in the shipped log) requantize
// in the epilogue and check their scales' signs: all of it in registers, nothing spilled to local
// memory (a spill in the consumers' epilogue once cost these layers 13-30%).
TEST(WgmmaSass, Int8PooledConvDoesNotSpill) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  struct Case {
    int64_t hw, c, tile_h, tile_w;
  };
  for (const Case& k : {Case{224, 64, 8, 32}, Case{112, 128, 16, 8}}) {
    autotvm::Workload w = Conv3x3(k.hw, k.c, "int8", "int32");
    w.task_name = autotvm::kConv2dNhwcWgmmaPool;
    const autotvm::ConfigEntity config = testing::Config(
        {OtherKnob("tile_h", k.tile_h), OtherKnob("tile_w", k.tile_w), OtherKnob("tile_n", k.c),
         OtherKnob("stages", 4), OtherKnob("consumer_wg", 2), OtherKnob("pingpong", 1),
         OtherKnob("im2col", 0), OtherKnob("cluster", 1)});
    const std::map<std::string, int> sass = ConfigSass(
        *FindOpTemplate(w.task_name), w, config, tool,
        Epilogue{.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize});
    for (const auto& [op, count] : sass) std::printf("  %s x %d\n", op.c_str(), count);
    EXPECT_GT(CountPrefix(sass, "IGMMA"), 0) << k.hw;
    EXPECT_EQ(CountPrefix(sass, "STL"), 0) << k.hw;
    EXPECT_EQ(CountPrefix(sass, "LDL"), 0) << k.hw;
  }
}

// halo = 1, the shipped logs' conv1_2 + pool configs (fp16 8 x 32, int8 4 x 64, 64 channels,
// ping-pong): the tensor-core instruction, one 4-D input box and 3-D weight boxes per stage, and
// nothing spilled.
TEST(WgmmaSass, HaloConvLoadsOneBoxPerFilterColumn) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  struct Case {
    bool int8;
    int64_t tile_h, tile_w, stages;
  };
  for (const Case& k : {Case{false, 8, 32, 3}, Case{true, 4, 64, 4}}) {
    autotvm::Workload w =
        Conv3x3(224, 64, k.int8 ? "int8" : "float16", k.int8 ? "int32" : "float16");
    w.task_name = autotvm::kConv2dNhwcWgmmaPool;
    const autotvm::ConfigEntity config = testing::Config(
        {OtherKnob("tile_h", k.tile_h), OtherKnob("tile_w", k.tile_w), OtherKnob("tile_n", 64),
         OtherKnob("stages", k.stages), OtherKnob("consumer_wg", 2), OtherKnob("pingpong", 1),
         OtherKnob("im2col", 0), OtherKnob("cluster", 1), OtherKnob("halo", 1)});
    const std::map<std::string, int> sass = NetworkConvSass(w, config, tool, k.int8);
    EXPECT_GT(CountPrefix(sass, k.int8 ? "IGMMA.64x64x32" : "HGMMA.64x64x16"), 0) << k.int8;
    EXPECT_GT(CountPrefix(sass, "UTMALDG.4D"), 0) << k.int8;
    EXPECT_GT(CountPrefix(sass, "UTMALDG.3D"), 0) << k.int8;
    EXPECT_EQ(CountPrefix(sass, "STL"), 0) << k.int8;
    EXPECT_EQ(CountPrefix(sass, "LDL"), 0) << k.int8;
  }
}

// swap_ab = 1 on conv1_2 + pool (fp16 and int8, 8 x 32 ping-pong, halo): one m64 x 256-pixel
// instruction per 16 (32 int8) channels of K instead of four m64n64, and no spills.
TEST(WgmmaSass, SwappedConvRunsOneWideWgmmaPerKStep) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  for (const bool int8 : {false, true}) {
    autotvm::Workload w = Conv3x3(224, 64, int8 ? "int8" : "float16", int8 ? "int32" : "float16");
    w.task_name = autotvm::kConv2dNhwcWgmmaPool;
    const autotvm::ConfigEntity config =
        testing::Config({OtherKnob("tile_h", 8), OtherKnob("tile_w", 32), OtherKnob("tile_n", 64),
                         OtherKnob("stages", 3), OtherKnob("consumer_wg", 2),
                         OtherKnob("pingpong", 1), OtherKnob("im2col", 0), OtherKnob("cluster", 1),
                         OtherKnob("halo", 1), OtherKnob("swap_ab", 1)});
    const std::map<std::string, int> sass = NetworkConvSass(w, config, tool, int8);
    EXPECT_GT(CountPrefix(sass, int8 ? "IGMMA.64x256x32" : "HGMMA.64x256x16"), 0) << int8;
    EXPECT_EQ(CountPrefix(sass, int8 ? "IGMMA.64x64x32" : "HGMMA.64x64x16"), 0) << int8;
    EXPECT_EQ(CountPrefix(sass, "STL"), 0) << int8;
    EXPECT_EQ(CountPrefix(sass, "LDL"), 0) << int8;
  }
}

// tile_b = 2 on conv3_3 + pool (56 x 56: 8 x 8 pixels of two images, 256 channels fp16, 128
// int8): the wide tensor-core instruction, one 4-D box per tap, nothing spilled.
TEST(WgmmaSass, TwoImageTilesPoolConv33WithoutSpills) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  for (const bool int8 : {false, true}) {
    autotvm::Workload w = Conv3x3(56, 256, int8 ? "int8" : "float16", int8 ? "int32" : "float16");
    w.task_name = autotvm::kConv2dNhwcWgmmaPool;
    const int64_t bn = int8 ? 128 : 256;
    const autotvm::ConfigEntity config =
        testing::Config({OtherKnob("tile_h", 8), OtherKnob("tile_w", 8), OtherKnob("tile_n", bn),
                         OtherKnob("stages", 4), OtherKnob("consumer_wg", 2),
                         OtherKnob("pingpong", 0), OtherKnob("im2col", 0), OtherKnob("cluster", 1),
                         OtherKnob("halo", 0), OtherKnob("swap_ab", 0), OtherKnob("tile_b", 2)});
    const std::map<std::string, int> sass = NetworkConvSass(w, config, tool, int8);
    EXPECT_GT(CountPrefix(sass, int8 ? "IGMMA.64x128x32" : "HGMMA.64x256x16"), 0) << int8;
    EXPECT_GT(CountPrefix(sass, "UTMALDG.4D"), 0) << int8;
    EXPECT_EQ(CountPrefix(sass, "STL"), 0) << int8;
    EXPECT_EQ(CountPrefix(sass, "LDL"), 0) << int8;
  }
}

// An activation in the epilogue (clip, silu's expf, hard_swish) of the conv with the most
// accumulators a consumer holds (64 rows x 256 channels): still HGMMA and 16-byte stores, nothing
// spilled; silu's exp is the MUFU.EX2 the separate unary step runs too.
TEST(WgmmaSass, ActivationEpiloguesDoNotSpill) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::Workload w = Conv3x3(56, 256, "float16", "float16");
  const autotvm::ConfigEntity config =
      testing::Config({OtherKnob("tile_h", 8), OtherKnob("tile_w", 16), OtherKnob("tile_n", 256),
                       OtherKnob("stages", 3), OtherKnob("consumer_wg", 2),
                       OtherKnob("pingpong", 0), OtherKnob("im2col", 0), OtherKnob("cluster", 1),
                       OtherKnob("halo", 0), OtherKnob("swap_ab", 0), OtherKnob("tile_b", 1)});
  using Act = Epilogue::Activation;
  for (const Epilogue& e :
       {Epilogue{.bias = true, .activation = Act::kClip, .clip_lo = 0, .clip_hi = 6},
        Epilogue{.bias = true, .activation = Act::kSilu},
        Epilogue{.bias = true, .activation = Act::kHardSwish}}) {
    const std::map<std::string, int> sass =
        ConfigSass(*FindOpTemplate(w.task_name), w, config, tool, e);
    const std::string name(ActivationName(e.activation));
    EXPECT_GT(CountPrefix(sass, "HGMMA.64x256x16"), 0) << name;
    EXPECT_GT(CountPrefix(sass, "STG.E.128"), 0) << name;
    EXPECT_EQ(CountPrefix(sass, "STL"), 0) << name;
    EXPECT_EQ(CountPrefix(sass, "LDL"), 0) << name;
    EXPECT_EQ(CountPrefix(sass, "MUFU.EX2") > 0, e.activation == Act::kSilu) << name;
  }
}

// A residual epilogue's 16-byte loads (LDG.E.128) in a kernel's SASS: how many, the longest run
// of them between two stores (1: each load waits behind the store before it), and the local
// memory loads and stores (spills).
struct ResidualLoads {
  int loads = 0, longest = 0, spills = 0;
};
ResidualLoads CountResidualLoads(const std::string& cubin, const std::string& tool) {
  ResidualLoads r;
  int run = 0;
  for (const std::string& op : SassSequence(cubin, tool)) {
    if (op.rfind("LDG.E.128", 0) == 0) {
      r.longest = std::max(r.longest, ++run);
      ++r.loads;
    } else if (op.rfind("STG", 0) == 0) {
      run = 0;
    }
    if (op.rfind("STL", 0) == 0 || op.rfind("LDL", 0) == 0) ++r.spills;
  }
  return r;
}

// ResNet-50's layer1 conv3 (1x1, 64 -> 256 channels on 56 x 56, batch 128) with the residual
// epilogue, at its tuned config and with swapped operands (the staged epilogue): the residual's
// 16-byte loads go out several at a time, not each behind the store before it (one in flight
// made the epilogue latency-bound), and nothing spills.
TEST(WgmmaSass, ResidualEpilogueLoadsRunAhead) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::Workload w{autotvm::kConv2dNhwcWgmma,
                            autotvm::Json::array({testing::Tensor({128, 56, 56, 64}, "float16"),
                                                  testing::Tensor({256, 1, 1, 64}, "float16"),
                                                  {1, 1},
                                                  {0, 0, 0, 0},
                                                  {1, 1},
                                                  "float16"})};
  for (const int swap : {0, 1}) {
    const autotvm::ConfigEntity config = testing::Config(
        {OtherKnob("tile_h", 1), OtherKnob("tile_w", 64), OtherKnob("tile_n", swap ? 64 : 128),
         OtherKnob("stages", 5), OtherKnob("consumer_wg", 1), OtherKnob("pingpong", 0),
         OtherKnob("im2col", 1), OtherKnob("cluster", swap ? 1 : 2), OtherKnob("halo", 0),
         OtherKnob("swap_ab", swap), OtherKnob("tile_b", 1)});
    const std::string cubin = ConfigCubin(*FindOpTemplate(w.task_name), w, config,
                                          {.bias = true, .relu = true, .residual = true});
    ASSERT_FALSE(cubin.empty()) << swap;
    const ResidualLoads r = CountResidualLoads(cubin, tool);
    std::printf("swap_ab %d: %d residual loads, at most %d between stores\n", swap, r.loads,
                r.longest);
    EXPECT_GE(r.longest, 4) << swap;
    EXPECT_EQ(r.spills, 0) << swap;
  }
}

// The int8 residual epilogue (--precision int8 --tensor-cores): the same conv in int8 at its
// tuned config (data/resnet50-int8-wgmma.log) and with swapped operands: the residual's 16-byte
// loads of a block go out before its stores, and the requantizing arithmetic spills nothing.
TEST(WgmmaSass, Int8ResidualEpilogueLoadsRunAhead) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::Workload w{autotvm::kConv2dNhwcWgmma,
                            autotvm::Json::array({testing::Tensor({128, 56, 56, 64}, "int8"),
                                                  testing::Tensor({256, 1, 1, 64}, "int8"),
                                                  {1, 1},
                                                  {0, 0, 0, 0},
                                                  {1, 1},
                                                  "int32"})};
  const Epilogue e{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize, .residual = true};
  for (const int swap : {0, 1}) {
    const autotvm::ConfigEntity config = testing::Config(
        {OtherKnob("tile_h", 4), OtherKnob("tile_w", 64), OtherKnob("tile_n", 64),
         OtherKnob("stages", 4), OtherKnob("consumer_wg", 2), OtherKnob("pingpong", swap ? 0 : 1),
         OtherKnob("im2col", 1), OtherKnob("cluster", 1), OtherKnob("halo", 0),
         OtherKnob("swap_ab", swap), OtherKnob("tile_b", 1)});
    const std::string cubin = ConfigCubin(*FindOpTemplate(w.task_name), w, config, e);
    ASSERT_FALSE(cubin.empty()) << swap;
    const ResidualLoads r = CountResidualLoads(cubin, tool);
    std::printf("int8 swap_ab %d: %d residual loads, at most %d between stores\n", swap, r.loads,
                r.longest);
    EXPECT_GE(r.longest, 4) << swap;
    EXPECT_EQ(r.spills, 0) << swap;
  }
}

// The GEMM's residual epilogue (a transformer's residual stream: ViT-B/16's second MLP layer at
// batch 32) loads the residual ahead of its stores as the conv's does, and spills nothing.
TEST(WgmmaSass, GemmResidualEpilogueLoadsRunAhead) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::Workload w{
      autotvm::kDenseWgmma,
      autotvm::Json::array({testing::Tensor({6304, 3072}, "float16"),
                            testing::Tensor({768, 3072}, "float16"), nullptr, "float16"})};
  const OpTemplate& op = *FindOpTemplate(w.task_name);
  const std::string cubin =
      ConfigCubin(op, w, *op.FallbackConfig(w), {.bias = true, .residual = true});
  ASSERT_FALSE(cubin.empty());
  const ResidualLoads r = CountResidualLoads(cubin, tool);
  std::printf("at most %d residual loads between stores\n", r.longest);
  EXPECT_GE(r.longest, 4);
  EXPECT_EQ(r.spills, 0);
}

TEST(WgmmaSass, Int8ConvRunsIgmma) {
  const std::string tool = Nvdisasm();
  if (tool.empty()) GTEST_SKIP() << "no nvdisasm (set TUNEJIT_NVDISASM)";
  const autotvm::Workload w = Conv3x3(56, 256, "int8", "int32");
  const std::map<std::string, int> sass = FallbackSass(
      *FindOpTemplate(w.task_name), w, tool,
      Epilogue{.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize});
  for (const auto& [op, count] : sass) std::printf("  %s x %d\n", op.c_str(), count);
  EXPECT_GT(CountPrefix(sass, "IGMMA.64x128x32"), 0);
  EXPECT_EQ(CountPrefix(sass, "HGMMA"), 0);
  EXPECT_GT(CountPrefix(sass, "UTMALDG.4D"), 0);
}

}  // namespace
}  // namespace tunejit
