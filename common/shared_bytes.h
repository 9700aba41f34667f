// File: common/shared_bytes.h
// Immutable bytes, owned or borrowed from memory another object keeps alive (a mapped model
// file), shared by every copy: an imported model's weights point into the file's mapping instead
// of being copied out of it (a copy of ResNet-50's 100 MB into fresh pages costs about 50 ms of
// page faults), and stay valid as long as any copy of them lives.
//
//   SharedBytes owned(std::vector<uint8_t>{1, 2, 3});
//   SharedBytes view(file->bytes().subspan(off, n), file);  // keeps `file` (a shared_ptr) alive
//   absl::Span<const uint8_t> s = view.span();
//   SharedBytes rows = view.Slice(0, 64);                   // shares the owner
#ifndef TUNEJIT_COMMON_SHARED_BYTES_H_
#define TUNEJIT_COMMON_SHARED_BYTES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace tunejit {

class SharedBytes {
 public:
  SharedBytes() = default;
  // Takes `owned` over (implicit, so a std::vector<uint8_t> built in place is one).
  SharedBytes(std::vector<uint8_t>&& owned)  // NOLINT(google-explicit-constructor)
      : SharedBytes(std::make_shared<const std::vector<uint8_t>>(std::move(owned))) {}
  // `view` stays valid while `owner` lives; a null owner means the caller keeps it alive.
  SharedBytes(absl::Span<const uint8_t> view, std::shared_ptr<const void> owner)
      : owner_(std::move(owner)), view_(view) {}

  absl::Span<const uint8_t> span() const { return view_; }
  const uint8_t* data() const { return view_.data(); }
  size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  const uint8_t* begin() const { return view_.data(); }
  const uint8_t* end() const { return view_.data() + view_.size(); }
  // Bytes [offset, offset + size) (clamped to these), sharing their owner: no copy.
  SharedBytes Slice(size_t offset, size_t size) const {
    return SharedBytes(view_.subspan(offset, size), owner_);
  }

 private:
  explicit SharedBytes(std::shared_ptr<const std::vector<uint8_t>> v)
      : owner_(v), view_(v->data(), v->size()) {}

  std::shared_ptr<const void> owner_;
  absl::Span<const uint8_t> view_;
};

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_SHARED_BYTES_H_
