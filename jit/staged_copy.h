// File: jit/staged_copy.h
// Host-to-device copies of many megabytes from pageable memory (a model's weights as the host
// prepared them, or a mapped file) through a ring of page-locked buffers: each piece is copied
// into the next free buffer on the calling thread while the DMA engine moves the pieces before
// it, so the copy runs at the bus's speed instead of through the driver's own synchronous
// staging (about 4 GB/s on an H100 host).
//
//   TUNEJIT_ASSIGN_OR_RETURN(StagedCopier copier, StagedCopier::Create(device));
//   TUNEJIT_RETURN_IF_ERROR(copier.Copy(bytes, buffer, /*offset=*/0));
//   TUNEJIT_RETURN_IF_ERROR(copier.Finish());  // every copy has landed
#ifndef TUNEJIT_JIT_STAGED_COPY_H_
#define TUNEJIT_JIT_STAGED_COPY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jit/device.h"

namespace tunejit {

struct StagedCopyOptions {
  int slots = 4;                        // page-locked buffers in the ring
  size_t slot_bytes = size_t{4} << 20;  // each; larger copies go through in pieces
};

class StagedCopier {
 public:
  // ResourceExhausted (or the driver's error) when page-locked memory cannot be had: the caller
  // copies synchronously instead.
  static absl::StatusOr<StagedCopier> Create(const Device& device,
                                             const StagedCopyOptions& options = {});
  StagedCopier(StagedCopier&&) noexcept;
  StagedCopier& operator=(StagedCopier&&) noexcept;
  ~StagedCopier();  // waits for copies in flight: the ring must outlive them

  // Copies `bytes` to dst[offset, offset + bytes.size()). Returns once the bytes are staged: the
  // caller may reuse `bytes`, but dst holds them only after Finish().
  absl::Status Copy(absl::Span<const uint8_t> bytes, DeviceBuffer& dst, size_t offset);
  // Waits until every copy so far has landed.
  absl::Status Finish();

 private:
  struct State;
  explicit StagedCopier(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tunejit

#endif  // TUNEJIT_JIT_STAGED_COPY_H_
