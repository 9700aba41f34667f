#include "autotvm/record.h"

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "autotvm/python_json.h"
#include "common/status_macros.h"

namespace tunejit::autotvm {
namespace {

absl::Status FieldError(const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

// Rejects non-finite floats and malformed TENSOR entries anywhere inside the args.
absl::Status CheckArgs(const Json& j, const std::string& path) {
  if (j.is_number_float() && !std::isfinite(j.get<double>())) {
    return FieldError(path, "number out of range");
  }
  if (!j.is_array()) return absl::OkStatus();
  if (!j.empty() && j[0] == "TENSOR") {
    // TopHub v0.09+ holds a conv2d_transpose kernel entry with a 4th element (its output
    // padding), which TVM loads: extra trailing elements are kept, the first three must be sane.
    if (j.size() < 3 || !j[1].is_array() || !j[2].is_string()) {
      return FieldError(path, "TENSOR entry must start [\"TENSOR\", shape list, dtype string]");
    }
    for (const Json& d : j[1]) {
      if (!d.is_number_integer() || d.get<int64_t>() <= 0) {
        return FieldError(
            path, absl::StrCat("TENSOR shape ", j[1].dump(), " must hold positive integers"));
      }
    }
    return absl::OkStatus();
  }
  for (size_t i = 0; i < j.size(); ++i) {
    TUNEJIT_RETURN_IF_ERROR(CheckArgs(j[i], absl::StrCat(path, "[", i, "]")));
  }
  return absl::OkStatus();
}

absl::Status CheckKnobValue(const Knob& k, const std::string& path) {
  if (k.type == "sp" || k.type == "re") {
    if (!k.value.is_array() || k.value.empty()) {
      return FieldError(path, absl::StrCat(k.type, " value must be a non-empty list"));
    }
    for (const Json& v : k.value) {
      if (!v.is_number_integer()) return FieldError(path, "value must be a list of integers");
    }
    ConfigEntity one{{k}};
    absl::Status s = k.type == "sp" ? one.Split(k.name).status() : one.Reorder(k.name).status();
    if (!s.ok()) return FieldError(path, std::string(s.message()));
  } else if (k.type == "ot") {
    if (k.value.is_structured() || k.value.is_null())
      return FieldError(path, "ot value must be a scalar");
    if (k.value.is_number_float() && !std::isfinite(k.value.get<double>())) {
      return FieldError(path, "number out of range");
    }
  } else if (k.type == "an") {
    if (!k.value.is_array()) return FieldError(path, "an value must be a list");
  } else {
    return FieldError(path, absl::StrCat("unknown knob type '", k.type, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ConfigEntity> ParseEntity(const Json& j, const std::string& path) {
  if (!j.is_array()) return FieldError(path, "must be a list");
  if (j.empty()) return FieldError(path, "empty entity list");
  ConfigEntity c;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string p = absl::StrCat(path, "[", i, "]");
    const Json& e = j[i];
    if (!e.is_array() || e.size() != 3 || !e[0].is_string() || !e[1].is_string()) {
      return FieldError(p, "knob must be [name, type, value]");
    }
    Knob k{e[0].get<std::string>(), e[1].get<std::string>(), e[2]};
    if (k.name.empty()) return FieldError(p, "empty knob name");
    TUNEJIT_RETURN_IF_ERROR(CheckKnobValue(k, p));
    c.knobs.push_back(std::move(k));
  }
  return c;
}

absl::StatusOr<double> GetNumber(const Json& j, const std::string& path) {
  if (!j.is_number()) return FieldError(path, "must be a number");
  double v = j.get<double>();
  if (!std::isfinite(v) || v < 0) return FieldError(path, "number out of range");
  return v;
}

absl::StatusOr<MeasureResult> ParseResult(const Json& j, const std::string& path) {
  if (!j.is_array() || j.size() != 4) {
    return FieldError(path, "must be [costs, error_no, all_cost, timestamp]");
  }
  MeasureResult r;
  if (!j[0].is_array() || j[0].empty())
    return FieldError(path + "[0]", "costs must be a non-empty list");
  for (size_t i = 0; i < j[0].size(); ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(double c, GetNumber(j[0][i], absl::StrCat(path, "[0][", i, "]")));
    r.costs.push_back(c);
  }
  if (!j[1].is_number_integer() || j[1].get<int64_t>() < 0 || j[1].get<int64_t>() > 1000) {
    return FieldError(path + "[1]", "error_no must be a small non-negative integer");
  }
  r.error_no = static_cast<int>(j[1].get<int64_t>());
  TUNEJIT_ASSIGN_OR_RETURN(r.all_cost, GetNumber(j[2], path + "[2]"));
  TUNEJIT_ASSIGN_OR_RETURN(r.timestamp, GetNumber(j[3], path + "[3]"));
  return r;
}

// input / i: [target, task_name, args, kwargs, ...].
absl::Status ParseInput(const Json& j, const std::string& path, size_t size, Record* r) {
  if (!j.is_array() || j.size() != size) {
    return FieldError(path, absl::StrCat("must be a list of ", size, " elements"));
  }
  if (!j[0].is_string()) return FieldError(path + "[0]", "target must be a string");
  if (!j[1].is_string() || j[1].get<std::string>().empty()) {
    return FieldError(path + "[1]", "task name must be a non-empty string");
  }
  if (!j[2].is_array()) return FieldError(path + "[2]", "args must be a list");
  if (!j[3].is_object()) return FieldError(path + "[3]", "kwargs must be an object");
  absl::StatusOr<Target> target = ParseTarget(j[0].get<std::string>());
  if (!target.ok()) return FieldError(path + "[0]", std::string(target.status().message()));
  r->target = *std::move(target);
  const std::string written = j[1].get<std::string>();
  r->workload.task_name = std::string(CanonicalTaskName(written));
  if (r->workload.task_name != written) r->written_task_name = written;
  r->workload.args = j[2];
  TUNEJIT_RETURN_IF_ERROR(CheckArgs(j[2], path + "[2]"));
  r->kwargs = j[3];
  return absl::OkStatus();
}

const Json* Get(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

absl::StatusOr<const Json*> Require(const Json& obj, const std::string& path, const char* key) {
  const Json* v = Get(obj, key);
  if (v == nullptr)
    return FieldError(path.empty() ? key : path, absl::StrCat("missing field '", key, "'"));
  return v;
}

// The optional "tunejit" key (see Record::gpu).
absl::Status ParseGpuTag(const Json& j, Record* r) {
  const Json* tag = Get(j, "tunejit");
  if (tag == nullptr) return absl::OkStatus();
  if (!tag->is_object()) return FieldError("tunejit", "must be an object");
  if (const Json* gpu = Get(*tag, "gpu"); gpu != nullptr) {
    if (!gpu->is_number_integer() || gpu->get<int64_t>() < 0 || gpu->get<int64_t>() > 1 << 20) {
      return FieldError("tunejit.gpu", "must be a non-negative integer");
    }
    r->gpu = static_cast<int>(gpu->get<int64_t>());
  }
  if (const Json* device = Get(*tag, "device"); device != nullptr) {
    if (!device->is_string()) return FieldError("tunejit.device", "must be a string");
    r->device = device->get<std::string>();
  }
  return absl::OkStatus();
}

absl::Status ParseV02(const Json& j, Record* r) {
  r->format = RecordFormat::kV02;
  TUNEJIT_ASSIGN_OR_RETURN(const Json* version, Require(j, "", "version"));
  if (!version->is_number() || version->get<double>() != 0.2) {
    return FieldError("version", absl::StrCat("unsupported version ", version->dump()));
  }
  TUNEJIT_ASSIGN_OR_RETURN(const Json* input, Require(j, "", "input"));
  TUNEJIT_RETURN_IF_ERROR(ParseInput(*input, "input", 4, r));
  TUNEJIT_ASSIGN_OR_RETURN(const Json* config, Require(j, "", "config"));
  if (!config->is_object()) return FieldError("config", "must be an object");
  TUNEJIT_ASSIGN_OR_RETURN(const Json* index, Require(*config, "config", "index"));
  if (!index->is_number_integer() || index->get<int64_t>() < 0) {
    return FieldError("config.index", "must be a non-negative integer");
  }
  r->index = index->get<int64_t>();
  TUNEJIT_ASSIGN_OR_RETURN(const Json* code_hash, Require(*config, "config", "code_hash"));
  r->code_hash = *code_hash;
  TUNEJIT_ASSIGN_OR_RETURN(const Json* entity, Require(*config, "config", "entity"));
  TUNEJIT_ASSIGN_OR_RETURN(r->config, ParseEntity(*entity, "config.entity"));
  TUNEJIT_ASSIGN_OR_RETURN(const Json* result, Require(j, "", "result"));
  TUNEJIT_ASSIGN_OR_RETURN(r->result, ParseResult(*result, "result"));
  TUNEJIT_ASSIGN_OR_RETURN(const Json* tvm_version, Require(j, "", "tvm_version"));
  if (!tvm_version->is_string()) return FieldError("tvm_version", "must be a string");
  r->tvm_version = tvm_version->get<std::string>();
  return ParseGpuTag(j, r);
}

absl::Status ParseV01(const Json& j, Record* r) {
  r->format = RecordFormat::kV01;
  TUNEJIT_ASSIGN_OR_RETURN(const Json* version, Require(j, "", "v"));
  if (!version->is_number() || version->get<double>() != 0.1) {
    return FieldError("v", absl::StrCat("unsupported version ", version->dump()));
  }
  TUNEJIT_ASSIGN_OR_RETURN(const Json* input, Require(j, "", "i"));
  TUNEJIT_RETURN_IF_ERROR(ParseInput(*input, "i", 6, r));
  const Json& config = (*input)[5];
  if (!config.is_object()) return FieldError("i[5]", "config must be an object");
  r->index = -1;
  if (const Json* index = Get(config, "i"); index != nullptr) {
    if (!index->is_number_integer() || index->get<int64_t>() < 0) {
      return FieldError("i[5].i", "must be a non-negative integer");
    }
    r->index = index->get<int64_t>();
  }
  if (const Json* c = Get(config, "c"); c != nullptr) r->code_hash = *c;
  if (const Json* t = Get(config, "t"); t != nullptr) {
    if (!t->is_string()) return FieldError("i[5].t", "template key must be a string");
    r->template_key = t->get<std::string>();
  }
  TUNEJIT_ASSIGN_OR_RETURN(const Json* entity, Require(config, "i[5]", "e"));
  TUNEJIT_ASSIGN_OR_RETURN(r->config, ParseEntity(*entity, "i[5].e"));
  TUNEJIT_ASSIGN_OR_RETURN(const Json* result, Require(j, "", "r"));
  TUNEJIT_ASSIGN_OR_RETURN(r->result, ParseResult(*result, "r"));
  r->tvm_version.clear();
  return absl::OkStatus();
}

Json ResultJson(const MeasureResult& r) {
  Json costs = Json::array();
  for (double c : r.costs) costs.push_back(c);
  return Json::array({costs, r.error_no, r.all_cost, r.timestamp});
}

}  // namespace

const char* MeasureErrorName(int error_no) {
  static constexpr const char* kNames[] = {
      "NO_ERROR",     "INSTANTIATION_ERROR", "COMPILE_HOST", "COMPILE_DEVICE", "RUNTIME_DEVICE",
      "WRONG_ANSWER", "BUILD_TIMEOUT",       "RUN_TIMEOUT",  "UNKNOWN_ERROR"};
  return error_no >= 0 && error_no <= 8 ? kNames[error_no] : "UNKNOWN_ERROR";
}

double MeasureResult::MeanCost() const {
  if (costs.empty()) return 0;
  return std::accumulate(costs.begin(), costs.end(), 0.0) / static_cast<double>(costs.size());
}

absl::StatusOr<Record> ParseRecordLine(std::string_view line) {
  TUNEJIT_ASSIGN_OR_RETURN(Json j, ParseJsonGuarded(line));
  if (!j.is_object()) return absl::InvalidArgumentError("record is not a JSON object");
  Record r;
  if (j.contains("input")) {
    TUNEJIT_RETURN_IF_ERROR(ParseV02(j, &r));
  } else if (j.contains("i")) {
    TUNEJIT_RETURN_IF_ERROR(ParseV01(j, &r));
  } else {
    return absl::InvalidArgumentError("record has neither 'input' (v0.2) nor 'i' (v0.1)");
  }
  r.raw = std::move(j);
  return r;
}

std::string SerializeRecord(const Record& r) {
  if (r.format == RecordFormat::kV01 && r.raw.is_object()) {
    Json j = r.raw;  // keeps this line's key order; assignments keep key positions
    Json& input = j["i"];
    input[0] = r.target.text;
    input[1] = r.TaskNameAsWritten();
    input[2] = r.workload.args;
    input[3] = r.kwargs;
    Json& config = input[5];
    if (r.index >= 0) config["i"] = r.index;
    config["e"] = r.config.ToJson();
    j["r"] = ResultJson(r.result);
    return DumpPythonJson(j);
  }
  Json j = Json::object();
  j["input"] = Json::array({r.target.text, r.TaskNameAsWritten(), r.workload.args, r.kwargs});
  Json config = Json::object();
  config["index"] = r.index;
  config["code_hash"] = r.code_hash;
  config["entity"] = r.config.ToJson();
  j["config"] = std::move(config);
  j["result"] = ResultJson(r.result);
  j["version"] = 0.2;
  j["tvm_version"] = r.tvm_version;
  if (r.gpu >= 0) {
    Json tag = Json::object();
    tag["gpu"] = r.gpu;
    tag["device"] = r.device;
    j["tunejit"] = std::move(tag);
  }
  return DumpPythonJson(j);
}

Record MakeRecord(const Target& target, const Workload& workload, int64_t index,
                  const ConfigEntity& config, const MeasureResult& result,
                  const std::string& tvm_version) {
  Record r;
  r.target = target;
  r.workload = workload;
  r.index = index;
  r.config = config;
  r.result = result;
  r.tvm_version = tvm_version;
  return r;
}

}  // namespace tunejit::autotvm
