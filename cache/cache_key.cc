#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/entry_format.h"
#include "cache/kernel_cache.h"
#include "common/digest.h"

namespace tunejit {
namespace {

// Readable parts go into a file name: keep [A-Za-z0-9_.-], replace the rest, cap the length so the
// whole name stays far below NAME_MAX (255) whatever the caller passes.
std::string SanitizeForFileName(absl::string_view text, size_t max_length) {
  std::string out;
  for (char c : text.substr(0, max_length)) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.' || c == '-';
    out.push_back(keep ? c : '_');
  }
  // A leading dot would hide the file from `ls`; the name is for humans, so avoid it.
  if (!out.empty() && out[0] == '.') out[0] = '_';
  return out;
}

// "kernel_sources/dense.cu" -> "dense".
absl::string_view SourceStem(absl::string_view name) {
  if (size_t slash = name.find_last_of('/'); slash != absl::string_view::npos) {
    name.remove_prefix(slash + 1);
  }
  if (size_t dot = name.find_last_of('.'); dot != absl::string_view::npos && dot > 0) {
    name = name.substr(0, dot);
  }
  return name;
}

}  // namespace

std::string CacheKey::FileName() const { return absl::StrCat(readable, "-", digest, ".tjk"); }

CacheKey ComputeCacheKey(const CacheKeyInputs& inputs) {
  CacheKey key;
  key.canonical = cache_internal::EncodeCanonicalKey(inputs);
  key.digest = Sha256Hex(key.canonical);
  std::string stem = SanitizeForFileName(SourceStem(inputs.source_name), 64);
  if (stem.empty()) stem = "kernel";
  key.readable =
      absl::StrCat(stem, "-", SanitizeForFileName(inputs.arch, 16), "-nvrtc", inputs.nvrtc_version);
  // cubin is the common case; only the rarer kinds are spelled out in the name.
  if (inputs.output_kind != "cubin") {
    absl::StrAppend(&key.readable, "-", SanitizeForFileName(inputs.output_kind, 16));
  }
  return key;
}

std::string ResolveCacheDir(const std::string& explicit_dir) {
  if (!explicit_dir.empty()) return explicit_dir;
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value == nullptr ? std::string() : std::string(value);
  };
  if (std::string dir = env("TUNEJIT_CACHE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) return xdg + "/tunejit";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/tunejit";
  // No HOME at all (some daemons): an empty result makes Open disable the cache with a warning.
  return std::string();
}

}  // namespace tunejit
