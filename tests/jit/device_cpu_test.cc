// jit/device.h behaviour that needs no GPU: the no-driver path, KernelArgs packing and the
// CUresult/nvrtcResult -> Status mapping. Runs everywhere (label cpu); the no-driver tests skip on
// a machine that has a GPU, the subprocess ones run everywhere.
#include <cstdint>
#include <cstring>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/cuda_status.h"
#include "jit/device.h"
#include "tests/jit/jit_test_util.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(NoGpu, GpuAvailableFailsCleanly) {
  absl::Status status = GpuAvailable();
  if (status.ok()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(status.message()), StartsWith("no CUDA "));
  EXPECT_THAT(std::string(status.message()), HasSubstr("this command needs an NVIDIA GPU"));
  // Loaded once: asking again gives the same answer, not a crash or a different error.
  EXPECT_EQ(GpuAvailable(), status);
  absl::StatusOr<Device> device = Device::Open(0);
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(DeviceCount().ok());
  EXPECT_FALSE(CudaDriverVersion().ok());
}

// Child half of the subprocess tests below: reports what GpuAvailable() says under the driver
// named by TUNEJIT_CUDA_DRIVER, by writing it to TUNEJIT_TEST_OUT.
TEST(ChildProcess, ReportGpuAvailable) {
  std::string out = testing::Env("TUNEJIT_TEST_OUT");
  if (out.empty()) GTEST_SKIP() << "only run as a child of DriverLoading tests";
  absl::Status status = GpuAvailable();
  absl::StatusOr<Device> device = Device::Open(0);
  std::ofstream(out) << static_cast<int>(status.code()) << "\n"
                     << static_cast<int>(device.status().code()) << "\n"
                     << status.message();
}

struct ChildReport {
  int exit_code = -1;
  int gpu_code = -1;
  int open_code = -1;
  std::string message;
};

ChildReport RunWithDriver(const std::string& driver) {
  testing::TempDir dir;
  std::string out = dir.path() + "/report.txt";
  ChildReport report;
  report.exit_code =
      testing::RunSelfTest("ChildProcess.ReportGpuAvailable",
                           {{"TUNEJIT_CUDA_DRIVER", driver}, {"TUNEJIT_TEST_OUT", out}});
  std::istringstream in(testing::ReadFile(out));
  in >> report.gpu_code >> report.open_code;
  in.get();
  std::getline(in, report.message, '\0');
  return report;
}

TEST(DriverLoading, MissingLibraryNamesItAndTheReason) {
  ChildReport report = RunWithDriver("/nonexistent/libcuda.so.1");
  ASSERT_EQ(report.exit_code, 0);
  EXPECT_EQ(report.gpu_code, static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(report.open_code, static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(report.message,
              StartsWith("no CUDA driver found (/nonexistent/libcuda.so.1 could not be loaded: "));
  EXPECT_THAT(report.message, HasSubstr("No such file or directory"));
  EXPECT_THAT(report.message, HasSubstr("); this command needs an NVIDIA GPU"));
}

TEST(DriverLoading, StubDriverMeansNoDevice) {
  // The toolkit's stub libcuda exports the driver's symbols but every call fails: a driver library
  // without a device, as in GPU-less containers that put the stubs on the library path.
  std::string stub = std::string(TUNEJIT_CUDA_LIBRARY_DIR) + "/stubs/libcuda.so";
  if (!std::filesystem::exists(stub)) GTEST_SKIP() << "no stub driver at " << stub;
  ChildReport report = RunWithDriver(stub);
  ASSERT_EQ(report.exit_code, 0);
  EXPECT_EQ(report.gpu_code, static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(report.open_code, static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(report.message, StartsWith("no CUDA device ("));
  EXPECT_THAT(report.message, HasSubstr(stub));
  EXPECT_THAT(report.message, HasSubstr("this command needs an NVIDIA GPU"));
}

struct alignas(64) Wide {
  char tag;
  double values[3];
};

TEST(KernelArgs, PacksEachValueAlignedAndIntact) {
  KernelArgs args;
  const int32_t n = -123456;
  const double a = 3.25;
  const char c = 'q';
  Wide wide{'w', {1.5, -2.5, 1e300}};
  const DevicePtr ptr = 0xdeadbeefcafe;
  args.Add(n);
  args.Add(a);
  args.Add(c);
  args.Add(wide);
  args.Add(ptr);
  ASSERT_EQ(args.count(), 5u);
  void** p = args.pointers();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[0]) % alignof(int32_t), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[1]) % alignof(double), 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[3]) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p[4]) % alignof(DevicePtr), 0u);
  EXPECT_EQ(*static_cast<int32_t*>(p[0]), n);
  EXPECT_EQ(*static_cast<double*>(p[1]), a);
  EXPECT_EQ(*static_cast<char*>(p[2]), c);
  EXPECT_EQ(std::memcmp(p[3], &wide, sizeof(Wide)), 0);
  EXPECT_EQ(*static_cast<DevicePtr*>(p[4]), ptr);
  // Values are copies: changing the source after Add does not change the argument.
  wide.values[0] = 99;
  EXPECT_EQ(static_cast<Wide*>(args.pointers()[3])->values[0], 1.5);
}

TEST(KernelArgs, ManyArgumentsStayDistinct) {
  KernelArgs args;
  for (int i = 0; i < 100; ++i) args.Add(i * 7);
  ASSERT_EQ(args.count(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(*static_cast<int*>(args.pointers()[i]), i * 7);
}

TEST(CudaStatus, MapsCodes) {
  using jit_internal::ToStatus;
  EXPECT_TRUE(ToStatus(CUDA_SUCCESS, "x").ok());
  absl::Status oom = ToStatus(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc(64 bytes)");
  EXPECT_EQ(oom.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(oom.message()), StartsWith("cuMemAlloc(64 bytes): "));
  EXPECT_EQ(ToStatus(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "l").code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ToStatus(CUDA_ERROR_NOT_FOUND, "f").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ToStatus(CUDA_ERROR_INVALID_VALUE, "v").code(), absl::StatusCode::kInternal);
  // Without a driver the name is not available, but the number is.
  if (!GpuAvailable().ok()) {
    EXPECT_THAT(std::string(oom.message()), HasSubstr("CUresult 2"));
  }

  EXPECT_TRUE(ToStatus(NVRTC_SUCCESS, "x").ok());
  absl::Status nvrtc = ToStatus(NVRTC_ERROR_OUT_OF_MEMORY, "nvrtcCreateProgram");
  EXPECT_EQ(nvrtc.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(nvrtc.message()), HasSubstr("NVRTC_ERROR_OUT_OF_MEMORY"));
  EXPECT_EQ(ToStatus(NVRTC_ERROR_INTERNAL_ERROR, "i").code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace tunejit
