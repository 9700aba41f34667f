// File: common/file_io.h
// Whole-file reads and atomic whole-file writes, for the files tunejit makes and reads back (kernel
// cache entries, build plans): a reader never sees half of a file, and a crash mid-write leaves
// the old file or none, never a torn one. Large inputs (weights, models) are mapped instead of
// read: their pages come from the page cache without a copy or a fresh allocation.
//
//   TUNEJIT_RETURN_IF_ERROR(WriteFileAtomically("vgg16.plan", bytes));
//   absl::StatusOr<std::string> read = ReadFileBytes("vgg16.plan", kMaxPlanBytes);
#ifndef TUNEJIT_COMMON_FILE_IO_H_
#define TUNEJIT_COMMON_FILE_IO_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tunejit {

// The whole file. NotFound (message: the path) for a missing file; DataLoss with a short reason
// phrase otherwise ("unreadable (Permission denied)", "not a regular file", "too large (N
// bytes)"), for messages like "cache entry X is <reason>". A file larger than `max_bytes` is
// refused without reading it.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path, uint64_t max_bytes);

struct AtomicWriteOptions {
  // Test hook: stop for up to 60 s after writing this many bytes of the temporary file, so a test
  // can kill the writer mid-write. -1: never.
  int64_t pause_after_bytes = -1;
};

// Writes "<path>.tmp.<pid>.<random>" in the same directory, fsyncs it, renames it over `path`.
// Unavailable naming the failed call; the temporary file is removed on failure.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 const AtomicWriteOptions& options = {});

// A read-only private mapping of a whole file (mmap), unmapped when destroyed; move-only.
class MappedFile {
 public:
  // NotFound / PermissionDenied / InvalidArgument (not a regular file, another open error) /
  // ResourceExhausted (mmap failed), each message starting "<path>: ".
  static absl::StatusOr<MappedFile> Open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  absl::Span<const uint8_t> bytes() const { return {data_, size_}; }

 private:
  MappedFile() = default;
  void Unmap();

  const uint8_t* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};

// 16 random hex digits (std::random_device): unique names for temporary and probe files.
std::string RandomHex();

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_FILE_IO_H_
