// libFuzzer target: arbitrary bytes as a cache entry file must never crash Lookup or Verify, and a
// hit must only ever return what a valid entry for the requested key holds.
//
// Input: first byte selects the mode.
//   even: the rest is written to the entry file as is (exercises magic/size/checksum checks);
//   odd:  the rest is cut into (key, cubin, ptx, lowered-name table) and wrapped in a header with a
//         correct checksum by AssembleEntry, so the fuzzer reaches the lowered-name table parser
//         and the key comparison. Bit 1 of the first byte uses the requested key verbatim.
// Set TUNEJIT_FUZZ_VERBOSE=1 to keep the cache's warnings on stderr (silenced for speed otherwise).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cache/entry_format.h"
#include "cache/kernel_cache.h"

namespace {

using tunejit::CacheEntry;
using tunejit::CacheKey;
using tunejit::KernelCache;

struct Fixture {
  Fixture() {
    char pattern[] = "/tmp/tjfuzz.XXXXXX";
    dir = ::mkdtemp(pattern);
    tunejit::CacheOptions options;
    options.dir = dir;
    cache = new KernelCache(*KernelCache::Open(options));
    tunejit::CacheKeyInputs inputs;
    inputs.source_name = "fuzz.cu";
    inputs.source = "__global__ void k() {}";
    inputs.name_expressions = {"k"};
    inputs.arch = "sm_90";
    inputs.nvrtc_version = 13000;
    key = tunejit::ComputeCacheKey(inputs);
    path = dir + "/" + key.FileName();
    verbose = std::getenv("TUNEJIT_FUZZ_VERBOSE") != nullptr;
    null_fd = ::open("/dev/null", O_WRONLY);
  }
  std::string dir, path;
  KernelCache* cache = nullptr;
  CacheKey key;
  bool verbose = false;
  int null_fd = -1;
};

// Cuts `rest` into four pieces using its first four bytes as relative sizes.
std::string WrapWithValidChecksum(const std::string& rest, const CacheKey& key, bool use_key) {
  if (rest.size() < 4) return rest;
  std::string body = rest.substr(4);
  size_t cuts[4];
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    size_t take = body.empty() ? 0 : (static_cast<unsigned char>(rest[i]) * body.size()) / 1024;
    cuts[i] = std::min(take, body.size() - pos);
    pos += cuts[i];
  }
  pos = 0;
  auto next = [&](int i) {
    std::string piece = body.substr(pos, cuts[i]);
    pos += cuts[i];
    return piece;
  };
  std::string stored_key = next(0), cubin = next(1), ptx = next(2);
  std::string table = body.substr(pos);  // the rest: the table parser sees most of the input
  return tunejit::cache_internal::AssembleEntry(use_key ? key.canonical : stored_key, cubin, ptx,
                                                table);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture* fixture = new Fixture();
  if (size == 0) return 0;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string bytes =
      (data[0] & 1) ? WrapWithValidChecksum(rest, fixture->key, (data[0] & 2) != 0) : rest;
  {
    std::ofstream out(fixture->path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  int saved_stderr = -1;
  if (!fixture->verbose && fixture->null_fd >= 0) {
    saved_stderr = ::dup(STDERR_FILENO);
    ::dup2(fixture->null_fd, STDERR_FILENO);
  }
  std::optional<CacheEntry> hit = fixture->cache->Lookup(fixture->key);
  absl::StatusOr<tunejit::VerifyReport> report = fixture->cache->Verify(false);
  if (saved_stderr >= 0) {
    ::dup2(saved_stderr, STDERR_FILENO);
    ::close(saved_stderr);
  }
  if (hit.has_value()) {
    // A hit is only allowed for a file that is exactly a valid entry for this key.
    if (tunejit::cache_internal::EncodeEntry(fixture->key.canonical, *hit) != bytes)
      __builtin_trap();
    if (!report.ok() || report->valid != 1 || !report->invalid.empty()) __builtin_trap();
  } else if (report.ok() && report->valid != 0) {
    __builtin_trap();  // Verify accepted what Lookup rejected
  }
  return 0;
}
