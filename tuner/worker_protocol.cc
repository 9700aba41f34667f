#include "tuner/worker_protocol.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "autotvm/python_json.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

using autotvm::Json;

// Keeps a reply far below ParseJsonGuarded's line limit even with a long NVRTC log.
constexpr size_t kMaxMessageBytes = 64 << 10;

absl::Status Bad(absl::string_view what, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("worker message: ", what, ": ", why));
}

// Parses `line` as an object whose "op" is `op`.
absl::StatusOr<Json> ParseMessage(std::string_view line, std::string_view op) {
  absl::StatusOr<Json> j = autotvm::ParseJsonGuarded(line);
  if (!j.ok()) return Bad("invalid JSON", j.status().message());
  if (!j->is_object()) return Bad("message", "not a JSON object");
  auto it = j->find("op");
  if (it == j->end() || !it->is_string()) return Bad("op", "missing or not a string");
  if (it->get<std::string>() != op) {
    return Bad(
        "op", absl::StrCat("expected '", std::string(op), "', got '", it->get<std::string>(), "'"));
  }
  return *std::move(j);
}

absl::StatusOr<int64_t> GetInt(const Json& j, const char* key, int64_t min, int64_t max) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return Bad(key, "missing or not an integer");
  const int64_t v = it->get<int64_t>();
  if (v < min || v > max) return Bad(key, absl::StrCat(v, " out of range"));
  return v;
}

absl::StatusOr<std::string> GetString(const Json& j, const char* key, bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) return Bad(key, "missing");
    return std::string();
  }
  if (!it->is_string()) return Bad(key, "not a string");
  return it->get<std::string>();
}

absl::StatusOr<double> GetNonNegative(const Json& j, absl::string_view what) {
  if (!j.is_number()) return Bad(what, "not a number");
  const double v = j.get<double>();
  if (!std::isfinite(v) || v < 0) return Bad(what, "out of range");
  return v;
}

Json LimitsJson(const DeviceLimits& l) {
  Json j = Json::object();
  j["max_threads_per_block"] = l.max_threads_per_block;
  j["max_block_dim"] = Json::array({l.max_block_dim[0], l.max_block_dim[1], l.max_block_dim[2]});
  j["max_grid_dim"] = Json::array({l.max_grid_dim[0], l.max_grid_dim[1], l.max_grid_dim[2]});
  j["shared_bytes_per_block"] = l.shared_bytes_per_block;
  j["shared_bytes_per_block_optin"] = l.shared_bytes_per_block_optin;
  j["regs_per_block"] = l.regs_per_block;
  j["sm_count"] = l.sm_count;
  return j;
}

absl::Status ParseDims(const Json& j, const char* key, int out[3]) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array() || it->size() != 3) return Bad(key, "must be 3 integers");
  for (int i = 0; i < 3; ++i) {
    const Json& v = (*it)[i];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > INT32_MAX) {
      return Bad(key, "must be 3 positive integers");
    }
    out[i] = static_cast<int>(v.get<int64_t>());
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceLimits> ParseLimits(const Json& j, const GpuArch& arch) {
  if (!j.is_object()) return Bad("limits", "not an object");
  DeviceLimits l = DeviceLimits::ForArch(arch);
  l.arch = arch;
  auto positive = [&](const char* key, int* out) -> absl::Status {
    TUNEJIT_ASSIGN_OR_RETURN(int64_t v, GetInt(j, key, 1, INT32_MAX));
    *out = static_cast<int>(v);
    return absl::OkStatus();
  };
  TUNEJIT_RETURN_IF_ERROR(positive("max_threads_per_block", &l.max_threads_per_block));
  TUNEJIT_RETURN_IF_ERROR(ParseDims(j, "max_block_dim", l.max_block_dim));
  TUNEJIT_RETURN_IF_ERROR(ParseDims(j, "max_grid_dim", l.max_grid_dim));
  TUNEJIT_RETURN_IF_ERROR(positive("shared_bytes_per_block", &l.shared_bytes_per_block));
  TUNEJIT_RETURN_IF_ERROR(
      positive("shared_bytes_per_block_optin", &l.shared_bytes_per_block_optin));
  TUNEJIT_RETURN_IF_ERROR(positive("regs_per_block", &l.regs_per_block));
  TUNEJIT_RETURN_IF_ERROR(positive("sm_count", &l.sm_count));
  return l;
}

absl::StatusOr<WorkerHello> DecodeHelloJson(const Json& j) {
  WorkerHello h;
  TUNEJIT_ASSIGN_OR_RETURN(int64_t pid, GetInt(j, "pid", 0, INT32_MAX));
  h.pid = static_cast<int>(pid);
  TUNEJIT_ASSIGN_OR_RETURN(h.error, GetString(j, "error", false));
  if (!h.error.empty()) return h;
  TUNEJIT_ASSIGN_OR_RETURN(int64_t gpu, GetInt(j, "gpu", 0, 1 << 20));
  h.gpu = static_cast<int>(gpu);
  TUNEJIT_ASSIGN_OR_RETURN(h.device, GetString(j, "device", true));
  TUNEJIT_ASSIGN_OR_RETURN(std::string arch, GetString(j, "arch", true));
  absl::StatusOr<GpuArch> parsed = ParseGpuArch(arch);
  if (!parsed.ok()) return Bad("arch", parsed.status().message());
  h.arch = *parsed;
  TUNEJIT_ASSIGN_OR_RETURN(int64_t count, GetInt(j, "device_count", 1, 1 << 20));
  h.device_count = static_cast<int>(count);
  auto limits = j.find("limits");
  if (limits == j.end()) return Bad("limits", "missing");
  TUNEJIT_ASSIGN_OR_RETURN(h.limits, ParseLimits(*limits, h.arch));
  return h;
}

absl::StatusOr<autotvm::MeasureResult> DecodeResult(const Json& j) {
  if (!j.is_array() || j.size() != 4) return Bad("result", "must be [costs, error_no, all, ts]");
  autotvm::MeasureResult r;
  if (!j[0].is_array() || j[0].empty()) return Bad("result[0]", "costs must be a non-empty list");
  for (const Json& c : j[0]) {
    TUNEJIT_ASSIGN_OR_RETURN(double cost, GetNonNegative(c, "result[0]"));
    r.costs.push_back(cost);
  }
  if (!j[1].is_number_integer() || j[1].get<int64_t>() < 0 || j[1].get<int64_t>() > 8) {
    return Bad("result[1]", "error_no must be 0..8");
  }
  r.error_no = static_cast<int>(j[1].get<int64_t>());
  TUNEJIT_ASSIGN_OR_RETURN(r.all_cost, GetNonNegative(j[2], "result[2]"));
  TUNEJIT_ASSIGN_OR_RETURN(r.timestamp, GetNonNegative(j[3], "result[3]"));
  return r;
}

}  // namespace

std::string EncodeHello(const WorkerHello& h) {
  Json j = Json::object();
  j["op"] = "hello";
  j["pid"] = h.pid;
  if (!h.error.empty()) {
    j["error"] = h.error;
    return j.dump();
  }
  j["gpu"] = h.gpu;
  j["device"] = h.device;
  j["arch"] = h.arch.ToString();
  j["device_count"] = h.device_count;
  j["limits"] = LimitsJson(h.limits);
  return j.dump();
}

std::string EncodeRequest(const WorkerRequest& r) {
  Json j = Json::object();
  if (r.kind == RequestKind::kQuit) {
    j["op"] = "quit";
    return j.dump();
  }
  j["op"] = "measure";
  j["seq"] = r.seq;
  autotvm::Record record = r.record;
  if (record.result.costs.empty()) record.result.costs = {0.0};  // a record needs a cost list
  j["record"] = autotvm::SerializeRecord(record);
  j["fault"] = r.fault;
  if (r.stop_above > 0) j["stop_above"] = r.stop_above;
  return j.dump();
}

std::string EncodeReply(const WorkerReply& r) {
  Json j = Json::object();
  if (r.ready) {
    j["op"] = "ready";
    j["seq"] = r.seq;
    return j.dump();
  }
  j["op"] = "result";
  j["seq"] = r.seq;
  const autotvm::MeasureResult& m = r.measurement.result;
  Json costs = Json::array();
  for (double c : m.costs) costs.push_back(c);
  j["result"] = Json::array({costs, m.error_no, m.all_cost, m.timestamp});
  // dump() with replace: a compiler log may hold bytes that are not UTF-8.
  j["message"] = r.measurement.message.substr(0, kMaxMessageBytes);
  j["fatal"] = r.fatal;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

absl::StatusOr<WorkerHello> DecodeHello(std::string_view line) {
  TUNEJIT_ASSIGN_OR_RETURN(Json j, ParseMessage(line, "hello"));
  return DecodeHelloJson(j);
}

absl::StatusOr<WorkerRequest> DecodeRequest(std::string_view line) {
  absl::StatusOr<Json> quit = ParseMessage(line, "quit");
  if (quit.ok()) {
    WorkerRequest r;
    r.kind = RequestKind::kQuit;
    return r;
  }
  TUNEJIT_ASSIGN_OR_RETURN(Json j, ParseMessage(line, "measure"));
  WorkerRequest r;
  TUNEJIT_ASSIGN_OR_RETURN(r.seq, GetInt(j, "seq", 0, INT64_MAX));
  TUNEJIT_ASSIGN_OR_RETURN(std::string record, GetString(j, "record", true));
  absl::StatusOr<autotvm::Record> parsed = autotvm::ParseRecordLine(record);
  if (!parsed.ok()) return Bad("record", parsed.status().message());
  r.record = *std::move(parsed);
  if (r.record.index < 0) return Bad("record", "needs a config index");
  TUNEJIT_ASSIGN_OR_RETURN(r.fault, GetString(j, "fault", false));
  if (r.fault != "" && r.fault != "oob" && r.fault != "hang") {
    return Bad("fault", absl::StrCat("unknown fault '", r.fault, "'"));
  }
  if (auto stop = j.find("stop_above"); stop != j.end()) {
    TUNEJIT_ASSIGN_OR_RETURN(r.stop_above, GetNonNegative(*stop, "stop_above"));
  }
  return r;
}

absl::StatusOr<WorkerReply> DecodeReply(std::string_view line) {
  WorkerReply r;
  if (absl::StatusOr<Json> ready = ParseMessage(line, "ready"); ready.ok()) {
    TUNEJIT_ASSIGN_OR_RETURN(r.seq, GetInt(*ready, "seq", 0, INT64_MAX));
    r.ready = true;
    return r;
  }
  TUNEJIT_ASSIGN_OR_RETURN(Json j, ParseMessage(line, "result"));
  TUNEJIT_ASSIGN_OR_RETURN(r.seq, GetInt(j, "seq", 0, INT64_MAX));
  auto result = j.find("result");
  if (result == j.end()) return Bad("result", "missing");
  TUNEJIT_ASSIGN_OR_RETURN(r.measurement.result, DecodeResult(*result));
  TUNEJIT_ASSIGN_OR_RETURN(r.measurement.message, GetString(j, "message", false));
  auto fatal = j.find("fatal");
  if (fatal != j.end()) {
    if (!fatal->is_boolean()) return Bad("fatal", "not a boolean");
    r.fatal = fatal->get<bool>();
  }
  return r;
}

}  // namespace tunejit
