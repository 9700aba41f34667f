#include "graph/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "nlohmann/json.hpp"

namespace tunejit {
namespace {

using Json = nlohmann::ordered_json;

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}
absl::Status BadTensor(const std::string& source, const std::string& name,
                       const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": tensor '", name, "': ", what));
}

// Element count, or nullopt on a negative dim or overflow past 2^62 (no real file is that big).
std::optional<uint64_t> CheckedCount(absl::Span<const int64_t> shape) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d != 0 && count > (uint64_t{1} << 62) / static_cast<uint64_t>(d)) return std::nullopt;
    count *= static_cast<uint64_t>(d);
  }
  return count;
}

absl::StatusOr<SafetensorsHeader::Entry> ParseEntry(const std::string& source,
                                                    const std::string& name, const Json& value) {
  SafetensorsHeader::Entry e;
  e.name = name;
  if (name.empty()) return Bad(source, "a tensor has an empty name");
  if (!value.is_object()) return BadTensor(source, name, "entry is not a JSON object");
  auto dtype = value.find("dtype");
  if (dtype == value.end() || !dtype->is_string()) {
    return BadTensor(source, name, "missing string field 'dtype'");
  }
  std::optional<DType> t = ParseDTypeName(dtype->get_ref<const std::string&>());
  if (!t) return BadTensor(source, name, absl::StrCat("unknown dtype ", dtype->dump()));
  e.dtype = *t;
  auto shape = value.find("shape");
  if (shape == value.end() || !shape->is_array()) {
    return BadTensor(source, name, "missing array field 'shape'");
  }
  for (const Json& d : *shape) {
    if (!d.is_number_integer()) return BadTensor(source, name, "shape has a non-integer dim");
    if (d.is_number_unsigned() ? d.get<uint64_t>() > (uint64_t{1} << 62) : d.get<int64_t>() < 0) {
      return BadTensor(source, name, absl::StrCat("shape has an invalid dim ", d.dump()));
    }
    e.shape.push_back(d.get<int64_t>());
  }
  auto offsets = value.find("data_offsets");
  if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    return BadTensor(source, name, "'data_offsets' must be [begin, end], non-negative integers");
  }
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  if (e.end < e.begin) {
    return BadTensor(source, name,
                     absl::StrCat("data_offsets [", e.begin, ", ", e.end, "] end before begin"));
  }
  std::optional<uint64_t> count = CheckedCount(e.shape);
  if (!count) return BadTensor(source, name, "shape element count overflows");
  const uint64_t bytes = *count * DTypeSize(e.dtype);
  if (bytes != e.end - e.begin) {
    return BadTensor(
        source, name,
        absl::StrCat("shape [", absl::StrJoin(e.shape, ", "), "] of ",
                     std::string(DTypeName(e.dtype)), " needs ", bytes, " bytes but data_offsets [",
                     e.begin, ", ", e.end, "] hold ", e.end - e.begin));
  }
  return e;
}

absl::Status ParseMetadata(const std::string& source, const Json& value,
                           std::map<std::string, std::string>* metadata) {
  if (!value.is_object()) return Bad(source, "__metadata__ is not a JSON object");
  for (const auto& [key, v] : value.items()) {
    if (!v.is_string())
      return Bad(source, absl::StrCat("__metadata__['", key, "'] is not a string"));
    (*metadata)[key] = v.get<std::string>();
  }
  return absl::OkStatus();
}

// Reference rule: sorted by offset the ranges tile [0, buffer_size) exactly.
absl::Status CheckCoverage(const std::string& source, const SafetensorsHeader& header,
                           uint64_t buffer_size) {
  uint64_t expected = 0;
  const std::string* previous = nullptr;
  for (const SafetensorsHeader::Entry& e : header.tensors) {
    if (e.end > buffer_size) {
      return BadTensor(source, e.name,
                       absl::StrCat("data_offsets end ", e.end, " is past the buffer (",
                                    buffer_size, " bytes)"));
    }
    if (e.begin < expected) {
      return BadTensor(
          source, e.name,
          absl::StrCat("bytes [", e.begin, ", ", e.end, ") overlap tensor '", *previous, "'"));
    }
    if (e.begin > expected) {
      return BadTensor(
          source, e.name,
          absl::StrCat("gap: bytes [", expected, ", ", e.begin, ") before it belong to no tensor"));
    }
    expected = e.end;
    previous = &e.name;
  }
  if (expected != buffer_size) {
    return Bad(source,
               absl::StrCat("buffer has ", buffer_size, " bytes but the tensors cover ", expected));
  }
  return absl::OkStatus();
}

absl::StatusOr<Json> ParseHeaderJson(const std::string& source, std::string_view text) {
  if (text.empty() || text[0] != '{') return Bad(source, "header does not start with '{'");
  // nlohmann keeps the last of repeated keys silently: catch repeats of top-level names here.
  std::set<std::string> seen;
  std::string duplicate;
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth == 1 && event == Json::parse_event_t::key && duplicate.empty() &&
        !seen.insert(parsed.get<std::string>()).second) {
      duplicate = parsed.get<std::string>();
    }
    return true;
  };
  Json json;
  try {
    json = Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/false);
  } catch (const std::exception& e) {
    return Bad(source, absl::StrCat("header is not valid JSON: ", e.what()));
  }
  if (json.is_discarded()) return Bad(source, "header is not valid JSON");
  if (!duplicate.empty()) return BadTensor(source, duplicate, "name appears more than once");
  if (!json.is_object()) return Bad(source, "header is not a JSON object");
  return json;
}

}  // namespace

int64_t TensorView::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

absl::StatusOr<SafetensorsHeader> ParseSafetensors(absl::Span<const uint8_t> file,
                                                   std::string_view source_view) {
  const std::string source(source_view);
  if (file.size() < 8) {
    return Bad(source, absl::StrCat("file is ", file.size(),
                                    " bytes, shorter than the 8-byte header length"));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[i];
  if (n > kMaxSafetensorsHeaderBytes) {
    return Bad(source, absl::StrCat("header length ", n, " exceeds the limit of ",
                                    kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (n > file.size() - 8) {
    return Bad(source, absl::StrCat("header length ", n, " exceeds the ", file.size() - 8,
                                    " bytes after the length field (truncated file?)"));
  }
  std::string_view text(reinterpret_cast<const char*>(file.data()) + 8, n);
  TUNEJIT_ASSIGN_OR_RETURN(Json json, ParseHeaderJson(source, text));
  SafetensorsHeader header;
  header.buffer_offset = 8 + n;
  try {
    for (const auto& [key, value] : json.items()) {
      if (key == "__metadata__") {
        TUNEJIT_RETURN_IF_ERROR(ParseMetadata(source, value, &header.metadata));
        continue;
      }
      TUNEJIT_ASSIGN_OR_RETURN(SafetensorsHeader::Entry e, ParseEntry(source, key, value));
      header.tensors.push_back(std::move(e));
    }
  } catch (const std::exception& e) {  // a type_error we failed to anticipate: still a bad file
    return Bad(source, absl::StrCat("malformed header: ", e.what()));
  }
  std::stable_sort(header.tensors.begin(), header.tensors.end(), [](const auto& a, const auto& b) {
    return std::pair(a.begin, a.end) < std::pair(b.begin, b.end);
  });
  TUNEJIT_RETURN_IF_ERROR(CheckCoverage(source, header, file.size() - header.buffer_offset));
  return header;
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::Open(const std::string& path) {
  TUNEJIT_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::Open(path));
  SafetensorsFile f(path, std::move(mapped));
  TUNEJIT_ASSIGN_OR_RETURN(f.header_, ParseSafetensors(f.file_.bytes(), path));
  return f;
}

absl::StatusOr<TensorView> SafetensorsFile::Get(std::string_view name) const {
  for (const SafetensorsHeader::Entry& e : header_.tensors) {
    if (e.name != name) continue;
    return TensorView{e.name, e.dtype, e.shape,
                      file_.bytes().subspan(header_.buffer_offset + e.begin, e.end - e.begin)};
  }
  return absl::NotFoundError(absl::StrCat(path_, ": no tensor named '", std::string(name), "'"));
}

bool SafetensorsFile::Contains(std::string_view name) const {
  return std::any_of(header_.tensors.begin(), header_.tensors.end(),
                     [&](const auto& e) { return e.name == name; });
}

std::vector<std::string> SafetensorsFile::Names() const {
  std::vector<std::string> names;
  for (const auto& e : header_.tensors) names.push_back(e.name);
  return names;
}

absl::StatusOr<std::string> SerializeSafetensors(
    absl::Span<const TensorView> tensors, const std::map<std::string, std::string>& metadata) {
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const TensorView& t : tensors) {
    if (t.name.empty() || t.name == "__metadata__" || header.contains(t.name)) {
      return absl::InvalidArgumentError(absl::StrCat("safetensors writer: tensor name '", t.name,
                                                     "' is empty, reserved or repeated"));
    }
    std::optional<uint64_t> count = CheckedCount(t.shape);
    if (!count || *count * DTypeSize(t.dtype) != t.bytes.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors writer: tensor '", t.name, "': shape [",
                       absl::StrJoin(t.shape, ", "), "] of ", std::string(DTypeName(t.dtype)),
                       " does not match its ", t.bytes.size(), " bytes"));
    }
    header[t.name] = {{"dtype", DTypeName(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  out += text;
  for (const TensorView& t : tensors) out.append(t.bytes.begin(), t.bytes.end());
  return out;
}

absl::Status WriteSafetensors(const std::string& path, absl::Span<const TensorView> tensors,
                              const std::map<std::string, std::string>& metadata) {
  TUNEJIT_ASSIGN_OR_RETURN(std::string image, SerializeSafetensors(tensors, metadata));
  absl::Status written = WriteFileAtomically(path, image);
  if (!written.ok()) return absl::UnavailableError(absl::StrCat(path, ": ", written.message()));
  return absl::OkStatus();
}

}  // namespace tunejit
