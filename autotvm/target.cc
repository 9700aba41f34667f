#include "autotvm/target.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tunejit::autotvm {
namespace {

constexpr size_t kMaxTargetLength = 4096;

bool IsTargetName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void AppendNameKeys(const std::string& name, std::vector<std::string>* keys) {
  if (name == "cuda" || name == "nvptx") {
    keys->insert(keys->end(), {"cuda", "gpu"});
  } else if (name == "llvm" || name == "c") {
    keys->push_back("cpu");
  } else if (name == "rocm" || name == "opencl") {
    keys->insert(keys->end(), {name, "gpu"});
  } else if (name == "metal" || name == "vulkan" || name == "sdaccel" || name == "aocl" ||
             name == "webgpu") {
    keys->insert(keys->end(), {name, "gpu"});
  } else {
    keys->push_back(name);
  }
}

}  // namespace

absl::StatusOr<Target> ParseTarget(std::string_view text) {
  if (text.size() > kMaxTargetLength) {
    return absl::InvalidArgumentError("target string is too long");
  }
  std::vector<std::string> words = absl::StrSplit(absl::string_view(text.data(), text.size()),
                                                  absl::ByAnyChar(" \t\n\r"), absl::SkipEmpty());
  if (words.empty()) return absl::InvalidArgumentError("empty target string");
  Target t;
  t.text = std::string(text);
  t.name = words[0];
  if (!IsTargetName(t.name) || t.name[0] == '-') {
    return absl::InvalidArgumentError(absl::StrCat("bad target name '", t.name, "'"));
  }
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& opt = words[i];
    if (opt.size() < 2 || opt[0] != '-') {
      return absl::InvalidArgumentError(absl::StrCat("bad target option '", opt, "'"));
    }
    t.options.push_back(opt);
    size_t eq = opt.find('=');
    std::string key = opt.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    t.option_map[key] = value;
    if (key == "-libs") {
      for (absl::string_view lib : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        t.libs.emplace_back(lib);
      }
    } else if (key == "-device") {
      if (value.empty()) return absl::InvalidArgumentError("empty -device= in target");
      t.device = value;
      t.keys.push_back(value);
    } else if (key == "-keys") {
      for (absl::string_view k : absl::StrSplit(value, ',', absl::SkipEmpty())) {
        t.keys.emplace_back(k);
      }
    } else if (key == "-model") {
      if (value.empty()) return absl::InvalidArgumentError("empty -model= in target");
      t.model = value;
    }
  }
  if (!t.device.empty()) t.keys.push_back(t.device);
  AppendNameKeys(t.name, &t.keys);
  return t;
}

}  // namespace tunejit::autotvm
