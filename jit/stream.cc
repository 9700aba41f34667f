// Stream and Event (jit/device.h): launches, CUDA graph capture/replay, timing.
#include <cstdlib>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "jit/cuda_status.h"
#include "jit/device.h"
#include "jit/device_internal.h"

namespace tunejit {
namespace {

using jit_internal::ToStatus;
using jit_internal::WarnIfFailed;

std::string DescribeLaunch(const std::string& name, const LaunchShape& shape) {
  return absl::StrFormat(
      "launching %s with grid (%u, %u, %u), block (%u, %u, %u), %u bytes of "
      "dynamic shared memory",
      name, shape.grid[0], shape.grid[1], shape.grid[2], shape.block[0], shape.block[1],
      shape.block[2], shape.shared_bytes);
}

// Adds the device limit a launch broke, when one obviously was, to the driver's terse error.
std::string LimitHint(const LaunchShape& shape, const DeviceProperties& device) {
  if (shape.threads_per_block() > static_cast<uint64_t>(device.max_threads_per_block)) {
    return absl::StrCat(" [block has ", shape.threads_per_block(), " threads; ", device.name,
                        " allows ", device.max_threads_per_block, "]");
  }
  if (shape.shared_bytes > static_cast<uint32_t>(device.shared_bytes_per_block)) {
    return absl::StrCat(" [", shape.shared_bytes, " bytes of dynamic shared memory exceed the ",
                        device.shared_bytes_per_block,
                        "-byte default; call Kernel::SetMaxDynamicSharedBytes (opt-in limit ",
                        device.shared_bytes_per_block_optin, ")]");
  }
  return "";
}

// TUNEJIT_SERIAL_LAUNCHES=1 (read once) launches every kernel only after the one before it has
// finished, as if no LaunchShape asked for overlaps_previous: to measure what the overlap gains.
bool SerialLaunches() {
  static const bool serial = [] {
    const char* v = std::getenv("TUNEJIT_SERIAL_LAUNCHES");
    return v != nullptr && std::string_view(v) != "" && std::string_view(v) != "0";
  }();
  return serial;
}

CUresult LaunchOn(const jit_internal::PrimaryContext& context, CUstream stream, CUfunction function,
                  const LaunchShape& shape, KernelArgs& args) {
  if (!shape.overlaps_previous || SerialLaunches()) {
    return context.cu->cuLaunchKernel(function, shape.grid[0], shape.grid[1], shape.grid[2],
                                      shape.block[0], shape.block[1], shape.block[2],
                                      shape.shared_bytes, stream, args.pointers(), nullptr);
  }
  CUlaunchAttribute overlap{};
  overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  overlap.value.programmaticStreamSerializationAllowed = 1;
  CUlaunchConfig config{};
  config.gridDimX = shape.grid[0];
  config.gridDimY = shape.grid[1];
  config.gridDimZ = shape.grid[2];
  config.blockDimX = shape.block[0];
  config.blockDimY = shape.block[1];
  config.blockDimZ = shape.block[2];
  config.sharedMemBytes = shape.shared_bytes;
  config.hStream = stream;
  config.attrs = &overlap;
  config.numAttrs = 1;
  return context.cu->cuLaunchKernelEx(&config, function, args.pointers(), nullptr);
}

}  // namespace

// ---- Stream ----

void Stream::State::DestroyGraph() {
  if (exec != nullptr) WarnIfFailed(context->cu->cuGraphExecDestroy(exec), "cuGraphExecDestroy");
  if (graph != nullptr) WarnIfFailed(context->cu->cuGraphDestroy(graph), "cuGraphDestroy");
  exec = nullptr;
  graph = nullptr;
}

Stream::State::~State() {
  if (context == nullptr || !context->MakeCurrent().ok()) return;
  DestroyGraph();
  if (stream != nullptr) WarnIfFailed(context->cu->cuStreamDestroy(stream), "cuStreamDestroy");
}

Stream::Stream(std::unique_ptr<State> state) : state_(std::move(state)) {}
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&&) noexcept = default;
Stream::~Stream() = default;

absl::StatusOr<Stream> Stream::Create(const Device& device) {
  auto state = std::make_unique<State>();
  state->context = device.state_->context;
  TUNEJIT_RETURN_IF_ERROR(state->context->MakeCurrent());
  // A blocking stream (not CU_STREAM_NON_BLOCKING): DeviceBuffer's copies and fills run on the
  // legacy default stream, and a pageable host-to-device copy may still be in flight when it
  // returns; a blocking stream orders our launches after them.
  TUNEJIT_RETURN_IF_ERROR(ToStatus(
      state->context->cu->cuStreamCreate(&state->stream, CU_STREAM_DEFAULT), "cuStreamCreate"));
  return Stream(std::move(state));
}

absl::Status Stream::Launch(const Kernel& kernel, const LaunchShape& shape, KernelArgs& args) {
  if (kernel.handle_ == nullptr)
    return absl::FailedPreconditionError("Launch of a moved-from Kernel");
  const jit_internal::PrimaryContext& context = *state_->context;
  TUNEJIT_RETURN_IF_ERROR(context.MakeCurrent());
  CUfunction function = kernel.handle_->function;
  if (kernel.handle_->context->context != context.context) {
    // The kernel was resolved for another device's context; get this context's copy.
    TUNEJIT_RETURN_IF_ERROR(
        ToStatus(context.cu->cuKernelGetFunction(&function, kernel.handle_->kernel),
                 "cuKernelGetFunction(" + kernel.name() + ")"));
  }
  CUresult result = LaunchOn(context, state_->stream, function, shape, args);
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  absl::Status status = ToStatus(result, DescribeLaunch(kernel.name(), shape));
  return absl::Status(status.code(),
                      absl::StrCat(status.message(), LimitHint(shape, context.properties)));
}

absl::Status Stream::Synchronize() {
  TUNEJIT_RETURN_IF_ERROR(state_->context->MakeCurrent());
  return ToStatus(state_->context->cu->cuStreamSynchronize(state_->stream), "cuStreamSynchronize");
}

absl::Status Stream::Record(const Event& event) {
  TUNEJIT_RETURN_IF_ERROR(state_->context->MakeCurrent());
  return ToStatus(state_->context->cu->cuEventRecord(event.state_->event, state_->stream),
                  "cuEventRecord");
}

absl::Status Stream::BeginCapture() {
  TUNEJIT_RETURN_IF_ERROR(state_->context->MakeCurrent());
  // Thread-local mode: other threads may keep using CUDA while this one captures.
  return ToStatus(state_->context->cu->cuStreamBeginCapture(state_->stream,
                                                            CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                  "cuStreamBeginCapture");
}

absl::Status Stream::EndCaptureAndInstantiate() {
  const jit_internal::PrimaryContext& context = *state_->context;
  TUNEJIT_RETURN_IF_ERROR(context.MakeCurrent());
  CUgraph graph = nullptr;
  CUresult result = context.cu->cuStreamEndCapture(state_->stream, &graph);
  if (result != CUDA_SUCCESS) {
    if (graph != nullptr) WarnIfFailed(context.cu->cuGraphDestroy(graph), "cuGraphDestroy");
    return ToStatus(result, "cuStreamEndCapture (did a launch fail during capture?)");
  }
  CUgraphExec exec = nullptr;
  result = context.cu->cuGraphInstantiate(&exec, graph, 0);
  if (result != CUDA_SUCCESS) {
    WarnIfFailed(context.cu->cuGraphDestroy(graph), "cuGraphDestroy");
    return ToStatus(result, "cuGraphInstantiate");
  }
  state_->DestroyGraph();
  state_->graph = graph;
  state_->exec = exec;
  return absl::OkStatus();
}

absl::Status Stream::ReplayGraph() {
  if (state_->exec == nullptr) {
    return absl::FailedPreconditionError(
        "ReplayGraph: no graph (call BeginCapture/EndCaptureAndInstantiate first)");
  }
  TUNEJIT_RETURN_IF_ERROR(state_->context->MakeCurrent());
  return ToStatus(state_->context->cu->cuGraphLaunch(state_->exec, state_->stream),
                  "cuGraphLaunch");
}

void* Stream::native() const { return state_->stream; }

// ---- Event ----

Event::State::~State() {
  if (event == nullptr || context == nullptr || !context->MakeCurrent().ok()) return;
  WarnIfFailed(context->cu->cuEventDestroy(event), "cuEventDestroy");
}

Event::Event(std::unique_ptr<State> state) : state_(std::move(state)) {}
Event::Event(Event&&) noexcept = default;
Event& Event::operator=(Event&&) noexcept = default;
Event::~Event() = default;

absl::StatusOr<Event> Event::Create(const Device& device) {
  auto state = std::make_unique<State>();
  state->context = device.state_->context;
  TUNEJIT_RETURN_IF_ERROR(state->context->MakeCurrent());
  TUNEJIT_RETURN_IF_ERROR(ToStatus(
      state->context->cu->cuEventCreate(&state->event, CU_EVENT_DEFAULT), "cuEventCreate"));
  return Event(std::move(state));
}

absl::Status Event::Synchronize() {
  TUNEJIT_RETURN_IF_ERROR(state_->context->MakeCurrent());
  return ToStatus(state_->context->cu->cuEventSynchronize(state_->event), "cuEventSynchronize");
}

absl::StatusOr<float> Event::ElapsedMs(const Event& start, const Event& end) {
  TUNEJIT_RETURN_IF_ERROR(start.state_->context->MakeCurrent());
  float ms = 0;
  TUNEJIT_RETURN_IF_ERROR(ToStatus(
      start.state_->context->cu->cuEventElapsedTime(&ms, start.state_->event, end.state_->event),
      "cuEventElapsedTime"));
  return ms;
}

}  // namespace tunejit
