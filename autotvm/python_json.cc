#include "autotvm/python_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tunejit::autotvm {
namespace {

// Splits the shortest round-trip text of a finite |value| into its significant digits and the
// decimal exponent of the first digit (value = 0.d1d2... * 10^(exp+1)).
void ShortestDigits(double value, std::string* digits, int* exponent) {
  char buf[64];
  auto result =
      std::to_chars(buf, buf + sizeof(buf), std::fabs(value), std::chars_format::scientific);
  std::string_view text(buf, result.ptr - buf);  // e.g. "8.54268221590909e-04"
  size_t e_pos = text.find('e');
  digits->clear();
  for (char c : text.substr(0, e_pos)) {
    if (c != '.') digits->push_back(c);
  }
  *exponent = std::atoi(std::string(text.substr(e_pos + 1)).c_str());
  while (digits->size() > 1 && digits->back() == '0') digits->pop_back();
}

void AppendEscapedCodeUnit(uint32_t unit, std::string* out) {
  absl::StrAppendFormat(out, "\\u%04x", unit);
}

// Decodes one UTF-8 sequence at s[*i]; malformed bytes decode as themselves (nlohmann only lets
// valid UTF-8 through its parser, so this only matters for strings built in code).
uint32_t DecodeUtf8(std::string_view s, size_t* i) {
  unsigned char c = s[*i];
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
  if (extra == 0 || *i + extra >= s.size()) {
    ++*i;
    return c;
  }
  uint32_t cp = c & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k) {
    unsigned char cc = s[*i + k];
    if ((cc & 0xC0) != 0x80) {
      ++*i;
      return c;
    }
    cp = (cp << 6) | (cc & 0x3F);
  }
  *i += extra + 1;
  return cp;
}

// Python's py_encode_basestring_ascii: escapes '"', '\\', and everything outside ' '..'~'.
void AppendPythonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    if (c >= 0x20 && c <= 0x7E && c != '"' && c != '\\') {
      out->push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    switch (c) {
      case '"':
        out->append("\\\"");
        ++i;
        continue;
      case '\\':
        out->append("\\\\");
        ++i;
        continue;
      case '\n':
        out->append("\\n");
        ++i;
        continue;
      case '\r':
        out->append("\\r");
        ++i;
        continue;
      case '\t':
        out->append("\\t");
        ++i;
        continue;
      case '\b':
        out->append("\\b");
        ++i;
        continue;
      case '\f':
        out->append("\\f");
        ++i;
        continue;
      default:
        break;
    }
    uint32_t cp = DecodeUtf8(s, &i);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      AppendEscapedCodeUnit(0xD800 | (cp >> 10), out);
      AppendEscapedCodeUnit(0xDC00 | (cp & 0x3FF), out);
    } else {
      AppendEscapedCodeUnit(cp, out);
    }
  }
  out->push_back('"');
}

}  // namespace

std::string PythonFloatRepr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string digits;
  int exp = 0;
  ShortestDigits(value, &digits, &exp);
  std::string out = std::signbit(value) ? "-" : "";
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppendFormat(&out, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  } else if (exp < 0) {
    absl::StrAppend(&out, "0.", std::string(-exp - 1, '0'), digits);
  } else if (static_cast<int>(digits.size()) <= exp + 1) {
    absl::StrAppend(&out, digits, std::string(exp + 1 - digits.size(), '0'), ".0");
  } else {
    absl::StrAppend(&out, digits.substr(0, exp + 1), ".", digits.substr(exp + 1));
  }
  return out;
}

std::string PythonJsonFloat(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return PythonFloatRepr(value);
}

void AppendPythonJson(const Json& value, std::string* out) {
  switch (value.type()) {
    case Json::value_t::null:
      out->append("null");
      return;
    case Json::value_t::boolean:
      out->append(value.get<bool>() ? "true" : "false");
      return;
    case Json::value_t::number_integer:
      absl::StrAppend(out, value.get<int64_t>());
      return;
    case Json::value_t::number_unsigned:
      absl::StrAppend(out, value.get<uint64_t>());
      return;
    case Json::value_t::number_float:
      out->append(PythonJsonFloat(value.get<double>()));
      return;
    case Json::value_t::string:
      AppendPythonString(value.get_ref<const std::string&>(), out);
      return;
    case Json::value_t::array: {
      out->push_back('[');
      bool first = true;
      for (const Json& item : value) {
        if (!first) out->append(", ");
        first = false;
        AppendPythonJson(item, out);
      }
      out->push_back(']');
      return;
    }
    case Json::value_t::object: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out->append(", ");
        first = false;
        AppendPythonString(key, out);
        out->append(": ");
        AppendPythonJson(item, out);
      }
      out->push_back('}');
      return;
    }
    default:
      out->append("null");
      return;  // binary / discarded: never produced by the parser
  }
}

std::string DumpPythonJson(const Json& value) {
  std::string out;
  AppendPythonJson(value, &out);
  return out;
}

namespace {

// One pass over the text outside strings: bracket depth and integer literal lengths.
absl::Status CheckLimits(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("line longer than ", limits.max_bytes, " bytes"));
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        return absl::InvalidArgumentError(
            absl::StrCat("JSON nested deeper than ", limits.max_depth));
      }
    } else if (c == ']' || c == '}') {
      --depth;
    } else if ((c >= '0' && c <= '9') || c == '-') {
      size_t end = i, ndigits = 0;
      bool is_float = false;
      while (end < text.size() &&
             std::string_view("+-0123456789.eE").find(text[end]) != std::string_view::npos) {
        if (text[end] >= '0' && text[end] <= '9') ++ndigits;
        if (text[end] == '.' || text[end] == 'e' || text[end] == 'E') is_float = true;
        ++end;
      }
      if (!is_float && ndigits > static_cast<size_t>(limits.max_integer_digits)) {
        return absl::InvalidArgumentError(
            absl::StrCat("integer ", std::string(text.substr(i, std::min<size_t>(end - i, 24))),
                         (end - i > 24 ? "..." : ""), " is too large"));
      }
      i = end - 1;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Json> ParseJsonGuarded(std::string_view text, const JsonLimits& limits) {
  if (absl::Status s = CheckLimits(text, limits); !s.ok()) return s;
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 5: ..." -> keep the tail.
    size_t pos = what.find("] ");
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: ", pos == std::string::npos ? what : what.substr(pos + 2)));
  }
}

}  // namespace tunejit::autotvm
