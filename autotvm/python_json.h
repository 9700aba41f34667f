// File: autotvm/python_json.h
// Byte-exact re-creation of what Python's json.dumps(obj) writes with default options (", " and
// ": " separators, ensure_ascii, allow_nan, keys in insertion order, floats as float.__repr__),
// which is how TVM's record.encode writes every log line. Reading goes through nlohmann (catching
// its exceptions), guarded first by a cheap scan that rejects deep nesting and integers too large
// for int64 so no input can blow the stack or silently turn into a float.
//
//   Json j = ...;                         // nlohmann::ordered_json keeps key order
//   std::string line = DumpPythonJson(j);  // identical to json.dumps(j) in CPython
//   PythonFloatRepr(1e-05) == "1e-05"; PythonFloatRepr(1e9) == "1000000000.0"
#ifndef TUNEJIT_AUTOTVM_PYTHON_JSON_H_
#define TUNEJIT_AUTOTVM_PYTHON_JSON_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "autotvm/workload.h"

namespace tunejit::autotvm {

// repr(float) in CPython >= 3.1: the shortest string that round-trips, in exponent form when the
// decimal exponent is < -4 or >= 16 ("1e-05", "1e+16"), otherwise positional with ".0" for
// integral values. Non-finite values give "inf", "-inf", "nan" (as repr does).
std::string PythonFloatRepr(double value);

// The JSON number text json.dumps writes for a float: as PythonFloatRepr, except that non-finite
// values are "Infinity", "-Infinity" and "NaN" (Python's allow_nan=True default).
std::string PythonJsonFloat(double value);

// json.dumps(value) with default arguments.
std::string DumpPythonJson(const Json& value);
void AppendPythonJson(const Json& value, std::string* out);

struct JsonLimits {
  int max_depth = 64;           // nesting of [ and {; real records use at most 5
  int max_integer_digits = 18;  // integers must fit in int64 without rounding
  size_t max_bytes = 1 << 20;   // a record line is a few hundred bytes
};

// Parses one JSON text after checking it against `limits`. Never throws; returns InvalidArgument
// with a short reason ("JSON syntax error at byte 17: ...", "nesting deeper than 64", ...).
absl::StatusOr<Json> ParseJsonGuarded(std::string_view text, const JsonLimits& limits = {});

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_PYTHON_JSON_H_
