#include "jit/staged_copy.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jit/cuda_status.h"
#include "jit/device_internal.h"

namespace tunejit {
namespace {

using jit_internal::ToStatus;

// One cuMemHostAlloc'ed buffer.
class PinnedBuffer {
 public:
  PinnedBuffer(jit_internal::ContextRef context, void* data)
      : context_(std::move(context)), data_(data) {}
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : context_(std::move(o.context_)), data_(std::exchange(o.data_, nullptr)) {}
  PinnedBuffer& operator=(PinnedBuffer&&) = delete;
  ~PinnedBuffer() {
    if (data_ == nullptr || context_ == nullptr || !context_->MakeCurrent().ok()) return;
    jit_internal::WarnIfFailed(context_->cu->cuMemFreeHost(data_), "cuMemFreeHost");
  }
  uint8_t* data() const { return static_cast<uint8_t*>(data_); }

 private:
  jit_internal::ContextRef context_;
  void* data_ = nullptr;
};

}  // namespace

struct StagedCopier::State {
  jit_internal::ContextRef context;
  StagedCopyOptions options;
  Stream stream;
  std::vector<PinnedBuffer> slots;
  std::vector<Event> landed;  // recorded after each slot's last copy
  size_t next = 0;
};

absl::StatusOr<StagedCopier> StagedCopier::Create(const Device& device,
                                                  const StagedCopyOptions& options) {
  if (options.slots < 1 || options.slot_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("StagedCopier: ", options.slots, " slots of ", options.slot_bytes, " bytes"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(Stream stream, Stream::Create(device));
  auto state = std::make_unique<State>(
      State{.context = device.state_->context, .options = options, .stream = std::move(stream)});
  const jit_internal::PrimaryContext& context = *state->context;
  for (int i = 0; i < options.slots; ++i) {
    void* data = nullptr;
    TUNEJIT_RETURN_IF_ERROR(
        ToStatus(context.cu->cuMemHostAlloc(&data, options.slot_bytes, 0),
                 absl::StrCat("cuMemHostAlloc(", options.slot_bytes, " bytes)")));
    state->slots.emplace_back(state->context, data);
    TUNEJIT_ASSIGN_OR_RETURN(Event e, Event::Create(device));
    state->landed.push_back(std::move(e));
  }
  return StagedCopier(std::move(state));
}

StagedCopier::StagedCopier(std::unique_ptr<State> state) : state_(std::move(state)) {}
StagedCopier::StagedCopier(StagedCopier&&) noexcept = default;
StagedCopier& StagedCopier::operator=(StagedCopier&&) noexcept = default;

StagedCopier::~StagedCopier() {
  if (state_ != nullptr) state_->stream.Synchronize().IgnoreError();
}

absl::Status StagedCopier::Copy(absl::Span<const uint8_t> bytes, DeviceBuffer& dst, size_t offset) {
  if (offset > dst.size() || bytes.size() > dst.size() - offset) {
    return absl::OutOfRangeError(absl::StrCat("StagedCopier::Copy: ", bytes.size(),
                                              " bytes at offset ", offset, " exceed the ",
                                              dst.size(), "-byte buffer"));
  }
  State& s = *state_;
  const jit_internal::PrimaryContext& context = *s.context;
  const CUstream stream = static_cast<CUstream>(s.stream.native());
  for (size_t done = 0; done < bytes.size();) {
    const size_t n = std::min(s.options.slot_bytes, bytes.size() - done);
    const size_t slot = s.next;
    s.next = (s.next + 1) % s.slots.size();
    // The slot's previous copy must have left it before it is overwritten.
    TUNEJIT_RETURN_IF_ERROR(s.landed[slot].Synchronize());
    std::memcpy(s.slots[slot].data(), bytes.data() + done, n);
    TUNEJIT_RETURN_IF_ERROR(context.MakeCurrent());
    TUNEJIT_RETURN_IF_ERROR(ToStatus(
        context.cu->cuMemcpyHtoDAsync(dst.ptr() + offset + done, s.slots[slot].data(), n, stream),
        "cuMemcpyHtoDAsync"));
    TUNEJIT_RETURN_IF_ERROR(s.stream.Record(s.landed[slot]));
    done += n;
  }
  return absl::OkStatus();
}

absl::Status StagedCopier::Finish() { return state_->stream.Synchronize(); }

}  // namespace tunejit
