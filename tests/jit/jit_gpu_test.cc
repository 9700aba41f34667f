// jit/ on a real GPU (label gpu; skips without one): compile the selftest kernel through the cache,
// load it, launch it, and check every element against a CPU reference; graphs, timing, and launch
// and load failures that must come back as a Status.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "jit/staged_copy.h"
#include "tests/jit/jit_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

constexpr int kBlock = 256;
constexpr char kSaxpy[] = "tunejit::selftest_saxpy<256, float>";
constexpr int kN = 100003;    // not a multiple of the block: the tail must be handled
constexpr int kGuard = 1024;  // floats after kN that the kernel must not touch
constexpr float kA = 1.75f;

class JitGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TUNEJIT_REQUIRE_GPU();
    absl::StatusOr<Device> device = Device::Open(0);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::make_unique<Device>(*std::move(device));
    absl::StatusOr<KernelCache> cache = KernelCache::Open(CacheOptions{.dir = dir_.path()});
    ASSERT_TRUE(cache.ok()) << cache.status();
    cache_ = std::make_unique<KernelCache>(*std::move(cache));
    std::mt19937 rng(1234);
    std::uniform_real_distribution<float> dist(0.5f, 1.5f);
    x_.resize(kN);
    y_.resize(kN);
    for (float& v : x_) v = dist(rng);
    for (float& v : y_) v = -dist(rng);
  }

  // Compiles (through the cache) and loads the saxpy kernel for this device.
  absl::StatusOr<Kernel> LoadSaxpy(KernelCompiler& compiler, bool* cache_hit) {
    return LoadSelftest(compiler, kSaxpy, cache_hit);
  }

  absl::StatusOr<Kernel> LoadSelftest(KernelCompiler& compiler, const char* name_expression,
                                      bool* cache_hit = nullptr) {
    KernelSpec spec{.source_file = "selftest.cu", .name_expression = name_expression};
    absl::StatusOr<CompiledKernel> compiled = compiler.Compile(spec, device_->properties().arch);
    if (!compiled.ok()) return compiled.status();
    if (cache_hit != nullptr) *cache_hit = compiled->cache_hit;
    absl::StatusOr<Module> module = Module::Load(*device_, compiled->program.cubin);
    if (!module.ok()) return module.status();
    // The Kernel keeps the module loaded after `module` goes out of scope.
    return module->GetKernel(compiled->lowered_name);
  }

  // y (n + guard floats, guard poisoned) on the device.
  DeviceBuffer Upload(DeviceBuffer& x) {
    absl::StatusOr<DeviceBuffer> y =
        DeviceBuffer::Allocate(*device_, (kN + kGuard) * sizeof(float));
    EXPECT_TRUE(y.ok()) << y.status();
    EXPECT_TRUE(y->Fill(0xFF).ok());
    EXPECT_TRUE(y->CopyFromHost(y_.data(), kN * sizeof(float)).ok());
    EXPECT_TRUE(x.CopyFromHost(x_.data(), kN * sizeof(float)).ok());
    return *std::move(y);
  }

  static KernelArgs SaxpyArgs(const DeviceBuffer& x, const DeviceBuffer& y) {
    KernelArgs args;
    args.Add(kN);
    args.Add(kA);
    args.Add(x.ptr());
    args.Add(y.ptr());
    return args;
  }

  static LaunchShape Shape() {
    LaunchShape shape;
    shape.grid[0] = 64;  // fewer blocks than the data: exercises the grid-stride loop
    shape.block[0] = kBlock;
    return shape;
  }

  // Checks every element of y against `times` applications of y = a*x + y on the CPU, and that
  // the guard after the data still holds the poison.
  void ExpectSaxpyApplied(const DeviceBuffer& y, int times) {
    std::vector<float> got(kN + kGuard);
    ASSERT_TRUE(y.CopyToHost(got.data(), got.size() * sizeof(float)).ok());
    int bad = 0;
    for (int i = 0; i < kN; ++i) {
      float want = y_[i];
      for (int t = 0; t < times; ++t) want = std::fma(kA, x_[i], want);
      if (std::fabs(got[i] - want) > 1e-5f * (1 + std::fabs(want)) && ++bad <= 5) {
        ADD_FAILURE() << "y[" << i << "] = " << got[i] << ", want " << want;
      }
    }
    EXPECT_EQ(bad, 0);
    uint32_t poison = 0xFFFFFFFFu;
    for (int i = kN; i < kN + kGuard; ++i) {
      ASSERT_EQ(std::memcmp(&got[i], &poison, 4), 0) << "kernel wrote past n at " << i;
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<KernelCache> cache_;
  std::vector<float> x_, y_;
};

TEST_F(JitGpuTest, DeviceProperties) {
  const DeviceProperties& p = device_->properties();
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.arch.sm(), 75);
  EXPECT_GT(p.sm_count, 0);
  EXPECT_GE(p.max_threads_per_block, 1024);
  EXPECT_GE(p.shared_bytes_per_block_optin, p.shared_bytes_per_block);
  EXPECT_GT(p.total_memory, int64_t{1} << 30);
}

TEST_F(JitGpuTest, CompileLoadLaunchMatchesCpu) {
  KernelCompiler compiler(cache_.get());
  bool hit = true;
  absl::StatusOr<Kernel> kernel = LoadSaxpy(compiler, &hit);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_FALSE(hit);
  absl::StatusOr<int> regs = kernel->NumRegisters();
  ASSERT_TRUE(regs.ok()) << regs.status();
  EXPECT_GT(*regs, 0);
  EXPECT_EQ(*kernel->LocalBytes(), 0);  // no spills in a saxpy

  absl::StatusOr<DeviceBuffer> x = DeviceBuffer::Allocate(*device_, kN * sizeof(float));
  ASSERT_TRUE(x.ok());
  DeviceBuffer y = Upload(*x);
  absl::StatusOr<Stream> stream = Stream::Create(*device_);
  ASSERT_TRUE(stream.ok()) << stream.status();
  KernelArgs args = SaxpyArgs(*x, y);
  ASSERT_TRUE(stream->Launch(*kernel, Shape(), args).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  ExpectSaxpyApplied(y, 1);
  std::vector<float> first(kN);
  ASSERT_TRUE(y.CopyToHost(first.data(), kN * sizeof(float)).ok());

  // A second compiler on the same cache directory: a hit, and the same answer bit for bit.
  absl::StatusOr<KernelCache> reopened = KernelCache::Open(CacheOptions{.dir = dir_.path()});
  ASSERT_TRUE(reopened.ok());
  KernelCompiler second_compiler(&*reopened);
  absl::StatusOr<Kernel> cached = LoadSaxpy(second_compiler, &hit);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_TRUE(hit);
  DeviceBuffer y2 = Upload(*x);
  KernelArgs args2 = SaxpyArgs(*x, y2);
  ASSERT_TRUE(stream->Launch(*cached, Shape(), args2).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  std::vector<float> second(kN);
  ASSERT_TRUE(y2.CopyToHost(second.data(), kN * sizeof(float)).ok());
  EXPECT_EQ(std::memcmp(first.data(), second.data(), kN * sizeof(float)), 0);
}

TEST_F(JitGpuTest, EventsTimeALaunch) {
  KernelCompiler compiler(cache_.get());
  absl::StatusOr<Kernel> kernel = LoadSaxpy(compiler, nullptr);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<DeviceBuffer> x = DeviceBuffer::Allocate(*device_, kN * sizeof(float));
  ASSERT_TRUE(x.ok());
  DeviceBuffer y = Upload(*x);
  absl::StatusOr<Stream> stream = Stream::Create(*device_);
  absl::StatusOr<Event> start = Event::Create(*device_);
  absl::StatusOr<Event> end = Event::Create(*device_);
  ASSERT_TRUE(stream.ok() && start.ok() && end.ok());
  KernelArgs args = SaxpyArgs(*x, y);
  ASSERT_TRUE(stream->Record(*start).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(stream->Launch(*kernel, Shape(), args).ok());
  ASSERT_TRUE(stream->Record(*end).ok());
  ASSERT_TRUE(end->Synchronize().ok());
  absl::StatusOr<float> ms = Event::ElapsedMs(*start, *end);
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GT(*ms, 0.0f);
  EXPECT_LT(*ms, 1000.0f);
  ExpectSaxpyApplied(y, 10);
}

TEST_F(JitGpuTest, GraphCaptureAndReplay) {
  KernelCompiler compiler(cache_.get());
  absl::StatusOr<Kernel> kernel = LoadSaxpy(compiler, nullptr);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<DeviceBuffer> x = DeviceBuffer::Allocate(*device_, kN * sizeof(float));
  ASSERT_TRUE(x.ok());
  DeviceBuffer y = Upload(*x);
  absl::StatusOr<Stream> stream = Stream::Create(*device_);
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(stream->ReplayGraph().code(), absl::StatusCode::kFailedPrecondition);
  KernelArgs args = SaxpyArgs(*x, y);
  ASSERT_TRUE(stream->BeginCapture().ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stream->Launch(*kernel, Shape(), args).ok());
  absl::Status captured = stream->EndCaptureAndInstantiate();
  ASSERT_TRUE(captured.ok()) << captured;
  ASSERT_TRUE(stream->Synchronize().ok());
  ExpectSaxpyApplied(y, 0);  // capturing records, it does not run
  ASSERT_TRUE(stream->ReplayGraph().ok());
  ASSERT_TRUE(stream->ReplayGraph().ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  ExpectSaxpyApplied(y, 6);
}

TEST_F(JitGpuTest, BadLaunchIsAStatusNamingTheShape) {
  KernelCompiler compiler(cache_.get());
  absl::StatusOr<Kernel> kernel = LoadSaxpy(compiler, nullptr);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<DeviceBuffer> x = DeviceBuffer::Allocate(*device_, kN * sizeof(float));
  ASSERT_TRUE(x.ok());
  DeviceBuffer y = Upload(*x);
  absl::StatusOr<Stream> stream = Stream::Create(*device_);
  ASSERT_TRUE(stream.ok());
  KernelArgs args = SaxpyArgs(*x, y);
  LaunchShape too_big = Shape();
  too_big.block[0] = 2048;
  absl::Status status = stream->Launch(*kernel, too_big, args);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()), HasSubstr(kernel->name()));
  EXPECT_THAT(std::string(status.message()), HasSubstr("grid (64, 1, 1)"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("block (2048, 1, 1)"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("block has 2048 threads"));
  // The error is not sticky: the stream and context still work.
  ASSERT_TRUE(stream->Launch(*kernel, Shape(), args).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  ExpectSaxpyApplied(y, 1);
}

TEST_F(JitGpuTest, LoadFailuresAreStatuses) {
  EXPECT_FALSE(Module::Load(*device_, "").ok());
  absl::StatusOr<Module> garbage = Module::Load(*device_, "this is neither PTX nor a cubin");
  EXPECT_FALSE(garbage.ok());
  KernelCompiler compiler(cache_.get());
  KernelSpec spec{.source_file = "selftest.cu", .name_expression = kSaxpy};
  absl::StatusOr<CompiledKernel> compiled = compiler.Compile(spec, device_->properties().arch);
  ASSERT_TRUE(compiled.ok());
  absl::StatusOr<Module> module = Module::Load(*device_, compiled->program.cubin);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Kernel> missing = module->GetKernel("no_such_kernel");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("no_such_kernel"));
  // PTX loads too (JIT by the driver).
  absl::StatusOr<Module> from_ptx = Module::Load(*device_, compiled->program.ptx);
  ASSERT_TRUE(from_ptx.ok()) << from_ptx.status();
  EXPECT_TRUE(from_ptx->GetKernel(compiled->lowered_name).ok());
}

TEST_F(JitGpuTest, ArchSpecificTargetRunsOnItsGpu) {
  GpuArch arch = device_->properties().arch;
  if (arch.sm() < 90) GTEST_SKIP() << "no 'a' target below sm_90";
  arch.arch_specific = true;
  KernelCompiler compiler(cache_.get());
  KernelSpec spec{.source_file = "selftest.cu", .name_expression = kSaxpy};
  absl::StatusOr<CompiledKernel> compiled = compiler.Compile(spec, arch);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  absl::StatusOr<Module> module = Module::Load(*device_, compiled->program.cubin);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<Kernel> kernel = module->GetKernel(compiled->lowered_name);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<DeviceBuffer> x = DeviceBuffer::Allocate(*device_, kN * sizeof(float));
  ASSERT_TRUE(x.ok());
  DeviceBuffer y = Upload(*x);
  absl::StatusOr<Stream> stream = Stream::Create(*device_);
  KernelArgs args = SaxpyArgs(*x, y);
  ASSERT_TRUE(stream->Launch(*kernel, Shape(), args).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  ExpectSaxpyApplied(y, 1);
}

TEST_F(JitGpuTest, MemoryErrorsAndAccounting) {
  absl::StatusOr<DeviceBuffer> huge =
      DeviceBuffer::Allocate(*device_, static_cast<size_t>(device_->properties().total_memory) * 2);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  absl::StatusOr<int64_t> before = device_->MemoryInUse();
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<DeviceBuffer> big = DeviceBuffer::Allocate(*device_, size_t{256} << 20);
  ASSERT_TRUE(big.ok());
  absl::StatusOr<int64_t> after = device_->MemoryInUse();
  ASSERT_TRUE(after.ok());
  EXPECT_GE(*after - *before, int64_t{200} << 20);
  std::vector<char> host(16);
  EXPECT_EQ(big->CopyToHost(host.data(), 16, big->size() - 8).code(),
            absl::StatusCode::kOutOfRange);
}

// A kernel launched with overlaps_previous starts while the one before it still runs (its first
// instruction is timed before the writer's last), and griddepcontrol.wait still hands it the
// writer's data: launched directly and replayed from a captured graph.
TEST_F(JitGpuTest, OverlappedLaunchStartsEarlyAndWaitsForThePreviousGrid) {
  if (device_->properties().arch.sm() < 90) GTEST_SKIP() << "griddepcontrol needs sm_90";
  KernelCompiler compiler(cache_.get());
  absl::StatusOr<Kernel> fill = LoadSelftest(compiler, "tunejit::selftest_slow_fill");
  absl::StatusOr<Kernel> copy = LoadSelftest(compiler, "tunejit::selftest_copy_after_wait");
  ASSERT_TRUE(fill.ok()) << fill.status();
  ASSERT_TRUE(copy.ok()) << copy.status();
  constexpr int kCount = 1 << 20;
  absl::StatusOr<DeviceBuffer> src = DeviceBuffer::Allocate(*device_, kCount * 4);
  absl::StatusOr<DeviceBuffer> dst = DeviceBuffer::Allocate(*device_, kCount * 4);
  absl::StatusOr<DeviceBuffer> times = DeviceBuffer::Allocate(*device_, 16);
  absl::StatusOr<Stream> stream = Stream::Create(*device_);
  ASSERT_TRUE(src.ok() && dst.ok() && times.ok() && stream.ok());
  LaunchShape fill_shape;
  fill_shape.grid[0] = 64;
  fill_shape.block[0] = 256;
  LaunchShape copy_shape = fill_shape;
  copy_shape.overlaps_previous = true;
  auto launch_pair = [&](unsigned value) {
    KernelArgs fill_args;
    fill_args.Add(src->ptr());
    fill_args.Add(kCount);
    fill_args.Add(value);
    fill_args.Add(static_cast<long long>(200'000));  // 200 us before the writes
    fill_args.Add(times->ptr());
    KernelArgs copy_args;
    copy_args.Add(src->ptr());
    copy_args.Add(dst->ptr());
    copy_args.Add(kCount);
    copy_args.Add(times->ptr() + 8);
    EXPECT_TRUE(stream->Launch(*fill, fill_shape, fill_args).ok());
    EXPECT_TRUE(stream->Launch(*copy, copy_shape, copy_args).ok());
  };
  // times[0]: the writer's last block done (atomicMax from 0); times[1]: the reader's first
  // instruction (atomicMin from all ones).
  auto check = [&](unsigned value) {
    std::vector<unsigned> got(kCount);
    ASSERT_TRUE(dst->CopyToHost(got.data(), got.size() * 4).ok());
    int bad = 0;
    for (int i = 0; i < kCount; ++i) bad += got[i] != value;
    EXPECT_EQ(bad, 0) << "of " << kCount << " copied values, want " << value;
    uint64_t t[2];
    ASSERT_TRUE(times->CopyToHost(t, 16).ok());
    EXPECT_LT(t[1], t[0]) << "the reader started " << (t[1] - t[0]) << " ns after the writer";
  };
  auto reset = [&] {
    ASSERT_TRUE(src->Fill(0).ok());
    ASSERT_TRUE(dst->Fill(0).ok());
    const uint64_t initial[2] = {0, ~uint64_t{0}};
    ASSERT_TRUE(times->CopyFromHost(initial, sizeof(initial)).ok());
  };
  reset();
  launch_pair(0x1234567u);
  ASSERT_TRUE(stream->Synchronize().ok());
  check(0x1234567u);

  reset();
  ASSERT_TRUE(stream->BeginCapture().ok());
  launch_pair(0x7654321u);
  absl::Status captured = stream->EndCaptureAndInstantiate();
  ASSERT_TRUE(captured.ok()) << captured;
  ASSERT_TRUE(stream->ReplayGraph().ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  check(0x7654321u);
}

TEST_F(JitGpuTest, RepeatPrefixFillsEveryCopy) {
  // 7 units of 12 bytes: not a power of two, so the doubling's last copy is partial.
  constexpr size_t kUnit = 12, kCopies = 7;
  absl::StatusOr<DeviceBuffer> buf = DeviceBuffer::Allocate(*device_, kUnit * kCopies);
  ASSERT_TRUE(buf.ok()) << buf.status();
  ASSERT_TRUE(buf->Fill(0xFF).ok());
  std::vector<uint8_t> unit(kUnit);
  for (size_t i = 0; i < kUnit; ++i) unit[i] = static_cast<uint8_t>(3 * i + 1);
  ASSERT_TRUE(buf->CopyFromHost(unit.data(), kUnit).ok());
  ASSERT_TRUE(buf->RepeatPrefix(kUnit).ok());
  std::vector<uint8_t> got(kUnit * kCopies);
  ASSERT_TRUE(buf->CopyToHost(got.data(), got.size()).ok());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], unit[i % kUnit]) << i;
  EXPECT_EQ(buf->RepeatPrefix(5).code(), absl::StatusCode::kInvalidArgument);  // 5 !| 84
}

// Copies larger than a slot, smaller ones and ones at an offset, more of them than the ring has
// slots (so slots are reused while copies may be in flight), each source overwritten as soon as
// Copy returns: the device holds every byte as it was given.
TEST_F(JitGpuTest, StagedCopiesLandWhereTheyWereSent) {
  absl::StatusOr<StagedCopier> copier =
      StagedCopier::Create(*device_, {.slots = 2, .slot_bytes = 1000});
  ASSERT_TRUE(copier.ok()) << copier.status();
  constexpr size_t kBytes = 12345;
  absl::StatusOr<DeviceBuffer> buf = DeviceBuffer::Allocate(*device_, kBytes);
  ASSERT_TRUE(buf.ok()) << buf.status();
  std::vector<uint8_t> want(kBytes);
  for (size_t i = 0; i < kBytes; ++i) want[i] = static_cast<uint8_t>(i * 7 + i / 251);
  std::vector<uint8_t> source;
  for (size_t offset = 0, n = 1; offset < kBytes; offset += n, n = n * 3 + 1) {
    n = std::min(n, kBytes - offset);
    source.assign(want.begin() + offset, want.begin() + offset + n);
    ASSERT_TRUE(copier->Copy(source, *buf, offset).ok());
    std::fill(source.begin(), source.end(), 0);
  }
  ASSERT_TRUE(copier->Finish().ok());
  std::vector<uint8_t> got(kBytes);
  ASSERT_TRUE(buf->CopyToHost(got.data(), got.size()).ok());
  EXPECT_EQ(got, want);
  EXPECT_EQ(copier->Copy(want, *buf, 1).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(StagedCopier::Create(*device_, {.slots = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tunejit
