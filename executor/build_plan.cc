#include "executor/build_plan.h"

#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "autotvm/python_json.h"
#include "common/digest.h"
#include "common/file_io.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

using autotvm::Json;

constexpr absl::string_view kHeader = "tunejit build plan ";
constexpr absl::string_view kChecksum = "sha256 ";

absl::Status Damaged(absl::string_view reason) { return absl::DataLossError(reason); }

Json IdentityJson(const BuildPlanIdentity& id) {
  return Json{{"tunejit", id.tunejit},
              {"graph", id.graph},
              {"weights", id.weights},
              {"mode", id.mode},
              {"options", id.options},
              {"arch", id.arch},
              {"driver_version", id.driver_version},
              {"nvrtc_version", id.nvrtc_version}};
}

Json StepJson(const PlannedStep& s) {
  Json j = {{"name", s.name}, {"kind", s.kind}};
  if (!s.task_name.empty()) {
    j["task_name"] = s.task_name;
    j["workload"] = s.workload;
    j["fallback"] = s.fallback;
    j["record"] = s.record;
    j["record_label"] = s.record_label;
    j["record_cost"] = s.record_cost;
    j["verified"] = s.verified;
  }
  j["kernels"] = s.kernels;
  return j;
}

// Typed reads of one JSON object's fields; the first problem is kept, named by its path
// ("steps[3].kernels"), and every later read is a no-op, so a parser reads straight through.
class FieldReader {
 public:
  FieldReader(const Json& object, std::string path, absl::Status* error)
      : object_(object), path_(std::move(path)), error_(error) {
    if (!object_.is_object()) Fail("", "not an object");
  }

  void String(const char* key, std::string* out) {
    if (const Json* v = Find(key, Json::value_t::string)) *out = v->get_ref<const std::string&>();
  }
  void Bool(const char* key, bool* out) {
    if (const Json* v = Find(key, Json::value_t::boolean)) *out = v->get<bool>();
  }
  void Int(const char* key, int64_t* out) {
    const Json* v = Find(key, Json::value_t::number_integer);
    if (v != nullptr) *out = v->get<int64_t>();
  }
  void Int(const char* key, int* out) {
    int64_t wide = 0;
    Int(key, &wide);
    if (wide < INT32_MIN || wide > INT32_MAX) return Fail(key, "out of range");
    *out = static_cast<int>(wide);
  }
  void Number(const char* key, double* out) {
    const Json* v = Find(key, Json::value_t::null);
    if (v == nullptr) return;
    // A finite number only: JSON has no text for infinity (1e999 reads as one).
    if (!v->is_number() || !std::isfinite(v->get<double>())) return Fail(key, "not a number");
    *out = v->get<double>();
  }
  void Strings(const char* key, std::vector<std::string>* out) {
    const Json* v = Find(key, Json::value_t::array);
    if (v == nullptr) return;
    for (const Json& item : *v) {
      if (!item.is_string()) return Fail(key, "not a list of strings");
      out->push_back(item.get<std::string>());
    }
  }
  // An array field, each element read by `read(element, "key[i]")`.
  template <typename F>
  void Array(const char* key, F read) {
    const Json* v = Find(key, Json::value_t::array);
    for (size_t i = 0; v != nullptr && i < v->size() && error_->ok(); ++i) {
      read((*v)[i], absl::StrCat(Path(key), "[", i, "]"));
    }
  }
  const Json* Find(const char* key, Json::value_t type) {
    if (!error_->ok()) return nullptr;
    auto it = object_.find(key);
    if (it == object_.end()) {
      Fail(key, "missing");
      return nullptr;
    }
    // number_integer also admits unsigned JSON integers; null asks for any type.
    const bool integer_ok = type == Json::value_t::number_integer && it->is_number_integer();
    if (type != Json::value_t::null && it->type() != type && !integer_ok) {
      Fail(key, "wrong type");
      return nullptr;
    }
    return &*it;
  }

 private:
  std::string Path(absl::string_view key) const {
    return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
  }
  void Fail(absl::string_view key, absl::string_view why) {
    if (error_->ok()) *error_ = Damaged(absl::StrCat("bad field ", Path(key), ": ", why));
  }

  const Json& object_;
  std::string path_;
  absl::Status* error_;
};

void ReadIdentity(const Json& j, const std::string& path, absl::Status* error,
                  BuildPlanIdentity* id) {
  FieldReader r(j, path, error);
  r.String("tunejit", &id->tunejit);
  r.String("graph", &id->graph);
  r.String("weights", &id->weights);
  r.String("mode", &id->mode);
  r.String("options", &id->options);
  r.String("arch", &id->arch);
  r.Int("driver_version", &id->driver_version);
  r.Int("nvrtc_version", &id->nvrtc_version);
}

void ReadStep(const Json& j, const std::string& path, absl::Status* error, PlannedStep* s) {
  FieldReader r(j, path, error);
  r.String("name", &s->name);
  r.String("kind", &s->kind);
  if (j.is_object() && j.contains("task_name")) {
    r.String("task_name", &s->task_name);
    // Present means tuned, and EncodeBuildPlan writes the tuned fields only for a named task.
    if (error->ok() && s->task_name.empty()) {
      *error = Damaged(absl::StrCat("bad field ", path, ".task_name: empty"));
    }
    r.String("workload", &s->workload);
    r.Bool("fallback", &s->fallback);
    r.String("record", &s->record);
    r.String("record_label", &s->record_label);
    r.Number("record_cost", &s->record_cost);
    r.Bool("verified", &s->verified);
  }
  r.Strings("kernels", &s->kernels);
}

absl::StatusOr<BuildPlan> ReadBody(absl::string_view text) {
  autotvm::JsonLimits limits;
  limits.max_depth = 8;
  limits.max_bytes = kMaxBuildPlanBytes;
  absl::StatusOr<Json> json =
      autotvm::ParseJsonGuarded(std::string_view(text.data(), text.size()), limits);
  if (!json.ok()) return Damaged(absl::StrCat("corrupt (", json.status().message(), ")"));
  BuildPlan plan;
  absl::Status error;
  FieldReader r(*json, "", &error);
  if (const Json* id = r.Find("identity", Json::value_t::object)) {
    ReadIdentity(*id, "identity", &error, &plan.identity);
  }
  r.Array("steps", [&](const Json& j, const std::string& path) {
    ReadStep(j, path, &error, &plan.steps.emplace_back());
  });
  r.Array("activation_scales", [&](const Json& j, const std::string& path) {
    // Checked as the float it becomes: 1e-50 is a positive double but a zero scale.
    const float v = j.is_number() ? static_cast<float>(j.get<double>()) : -1.0f;
    if (!(v > 0 && std::isfinite(v))) {
      error = Damaged(absl::StrCat("bad field ", path, ": not a positive finite number"));
    }
    plan.activation_scales.push_back(v);
  });
  r.Int("arena_bytes", &plan.arena_bytes);
  TUNEJIT_RETURN_IF_ERROR(error);
  return plan;
}

}  // namespace

std::string EncodeBuildPlan(const BuildPlan& plan) {
  Json steps = Json::array();
  for (const PlannedStep& s : plan.steps) steps.push_back(StepJson(s));
  Json scales = Json::array();
  for (float s : plan.activation_scales) scales.push_back(static_cast<double>(s));
  const Json body = {{"identity", IdentityJson(plan.identity)},
                     {"steps", std::move(steps)},
                     {"activation_scales", std::move(scales)},
                     {"arena_bytes", plan.arena_bytes}};
  // replace: a name that is not UTF-8 must not make dump() throw (it then differs from the
  // build's, and the plan is refused, never misapplied).
  std::string out = absl::StrCat(kHeader, kBuildPlanFormatVersion, "\n",
                                 body.dump(1, ' ', false, Json::error_handler_t::replace), "\n");
  absl::StrAppend(&out, kChecksum, Sha256Hex(out), "\n");
  return out;
}

absl::StatusOr<BuildPlan> ParseBuildPlan(absl::string_view bytes) {
  if (!absl::StartsWith(bytes, kHeader)) return Damaged("not a build plan (no header line)");
  const size_t header_end = bytes.find('\n');
  if (header_end == absl::string_view::npos) return Damaged("truncated (no checksum line)");
  int version = 0;
  if (!absl::SimpleAtoi(bytes.substr(kHeader.size(), header_end - kHeader.size()), &version)) {
    return Damaged("corrupt (bad header line)");
  }
  if (version != kBuildPlanFormatVersion) {
    return Damaged(
        absl::StrCat("format version ", version, "; this tunejit reads ", kBuildPlanFormatVersion));
  }
  // The checksum line: "sha256 " + 64 hex digits + "\n", the file's last bytes.
  constexpr size_t kChecksumLine = 7 + 64 + 1;
  const size_t body_end = bytes.size() >= kChecksumLine ? bytes.size() - kChecksumLine : 0;
  if (body_end <= header_end || bytes.back() != '\n' ||
      !absl::StartsWith(bytes.substr(body_end), kChecksum) || bytes[body_end - 1] != '\n') {
    return Damaged("truncated (no checksum line)");
  }
  if (Sha256Hex(bytes.substr(0, body_end)) != bytes.substr(body_end + kChecksum.size(), 64)) {
    return Damaged("corrupt (checksum mismatch)");
  }
  return ReadBody(bytes.substr(header_end + 1, body_end - header_end - 1));
}

absl::Status SaveBuildPlan(const std::string& path, const BuildPlan& plan) {
  absl::Status written = WriteFileAtomically(path, EncodeBuildPlan(plan));
  if (written.ok()) return written;
  return absl::UnavailableError(
      absl::StrCat("cannot write build plan ", path, ": ", written.message()));
}

absl::StatusOr<BuildPlan> LoadBuildPlan(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path, kMaxBuildPlanBytes);
  if (absl::IsNotFound(bytes.status())) {
    return absl::NotFoundError(absl::StrCat("no build plan at ", path));
  }
  absl::StatusOr<BuildPlan> plan =
      bytes.ok() ? ParseBuildPlan(*bytes) : absl::StatusOr<BuildPlan>(bytes.status());
  if (!plan.ok()) {
    return absl::DataLossError(absl::StrCat("build plan ", path, " is ", plan.status().message()));
  }
  return plan;
}

std::optional<std::string> IdentityMismatch(const BuildPlanIdentity& saved,
                                            const BuildPlanIdentity& now) {
  auto made_for = [](absl::string_view what, absl::string_view was, absl::string_view is) {
    return absl::StrCat("it was made for ", what, " ", was, "; this build is ", is);
  };
  if (saved.tunejit != now.tunejit) return made_for("tunejit", saved.tunejit, now.tunejit);
  if (saved.graph != now.graph) return "it was made for another model (the graph differs)";
  if (saved.weights != now.weights) return "it was made for other weights";
  if (saved.mode != now.mode) return made_for("precision", saved.mode, now.mode);
  if (saved.options != now.options) {
    return "it was made with another log, target, verification or int8 calibration setting";
  }
  if (saved.arch != now.arch) return made_for("GPU architecture", saved.arch, now.arch);
  if (saved.driver_version != now.driver_version) {
    return made_for("CUDA driver", absl::StrCat(saved.driver_version),
                    absl::StrCat(now.driver_version));
  }
  if (saved.nvrtc_version != now.nvrtc_version) {
    return made_for("NVRTC", absl::StrCat(saved.nvrtc_version), absl::StrCat(now.nvrtc_version));
  }
  return std::nullopt;
}

}  // namespace tunejit
