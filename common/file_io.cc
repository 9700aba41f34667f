#include "common/file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

// One owner for a POSIX file descriptor.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // For the write path, where close() can report a delayed I/O error.
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

std::string ErrnoText(int error) { return std::strerror(error); }

absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& path,
                      int64_t pause_after) {
  size_t done = 0;
  while (done < bytes.size()) {
    size_t chunk = bytes.size() - done;
    if (pause_after >= 0 && done < static_cast<size_t>(pause_after)) {
      chunk = std::min(chunk, static_cast<size_t>(pause_after) - done);
    }
    ssize_t n = ::write(fd, bytes.data() + done, chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("write ", path, ": ", ErrnoText(errno)));
    done += static_cast<size_t>(n);
    if (pause_after >= 0 && done == static_cast<size_t>(pause_after)) {
      std::this_thread::sleep_for(std::chrono::seconds(60));
    }
  }
  return absl::OkStatus();
}

// Writes `bytes` to `tmp` durably (fsync before the caller renames it into place: otherwise a crash
// could leave a renamed but empty file).
absl::Status WriteTmpFile(const std::string& tmp, absl::string_view bytes, int64_t pause_after) {
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    return absl::UnavailableError(absl::StrCat("create ", tmp, ": ", ErrnoText(errno)));
  }
  TUNEJIT_RETURN_IF_ERROR(WriteAll(fd.get(), bytes, tmp, pause_after));
  if (::fsync(fd.get()) != 0) {
    return absl::UnavailableError(absl::StrCat("fsync ", tmp, ": ", ErrnoText(errno)));
  }
  if (::close(fd.Release()) != 0) {
    return absl::UnavailableError(absl::StrCat("close ", tmp, ": ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string RandomHex() {
  std::random_device device;
  uint64_t value = (uint64_t{device()} << 32) ^ device();
  return absl::StrFormat("%016x", value);
}

absl::StatusOr<std::string> ReadFileBytes(const std::string& path, uint64_t max_bytes) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    int error = errno;
    if (error == ENOENT) return absl::NotFoundError(path);
    return absl::DataLossError(absl::StrCat("unreadable (", ErrnoText(error), ")"));
  }
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return absl::DataLossError("not a regular file");
  }
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    return absl::DataLossError(absl::StrCat("too large (", info.st_size, " bytes)"));
  }
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::DataLossError(absl::StrCat("unreadable (", ErrnoText(errno), ")"));
    if (n == 0) break;  // shorter than fstat said: the caller's parser reports it as truncated
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 const AtomicWriteOptions& options) {
  // Unique per process and call, in the same directory so that rename() is atomic.
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", RandomHex());
  absl::Status written = WriteTmpFile(tmp, bytes, options.pause_after_bytes);
  if (written.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    written = absl::UnavailableError(absl::StrCat("rename ", tmp, ": ", ErrnoText(errno)));
  }
  if (!written.ok()) ::unlink(tmp.c_str());
  // No fsync of the directory: after a power loss the rename may be lost, which readers see as
  // the old file or none.
  return written;
}

absl::StatusOr<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    std::string message = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(message);
    if (err == EACCES) return absl::PermissionDeniedError(message);
    return absl::InvalidArgumentError(message);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  MappedFile f;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": mmap of ", f.size_, " bytes failed: ", std::strerror(err)));
    }
    f.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file referenced
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { Unmap(); }

void MappedFile::Unmap() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace tunejit
