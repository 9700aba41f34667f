#include "onnx/import.h"

#include <climits>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "google/protobuf/arena.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "onnx/wire_split.h"

namespace tunejit {
namespace {

// The opsets whose semantics the mappers follow (attribute defaults and input forms changed
// along the way, e.g. Clip's bounds became inputs in 11 and Softmax's axis default moved in 13).
constexpr int64_t kMinOpset = 11;
constexpr int64_t kMaxOpset = 21;

absl::StatusOr<int64_t> DefaultOpset(const onnx::ModelProto& model, absl::string_view source) {
  for (const onnx::OperatorSetIdProto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") {
      if (op.version() < kMinOpset || op.version() > kMaxOpset) {
        return absl::UnimplementedError(absl::StrCat(source, ": opset ", op.version(),
                                                     " is not supported: tunejit imports opset ",
                                                     kMinOpset, " to ", kMaxOpset,
                                                     " (re-export, e.g. torch.onnx.export(..., "
                                                     "opset_version=17))"));
      }
      return op.version();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": the model imports no ai.onnx opset (not an ONNX model?)"));
}

}  // namespace

bool IsOnnxPath(absl::string_view model) {
  return absl::EndsWith(absl::AsciiStrToLower(model), ".onnx");
}

namespace {

// Protobuf messages are limited to 2 GiB; bigger models keep their weights as external data.
absl::Status CheckProtobufSize(absl::Span<const uint8_t> bytes, absl::string_view source) {
  if (bytes.size() <= static_cast<size_t>(INT_MAX)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(source, ": ", bytes.size(),
                   " bytes is over protobuf's 2 GiB limit (save the weights as external data)"));
}

// `owner` keeps `bytes` alive for the weights, which point into them.
absl::StatusOr<OnnxModel> ImportOwnedBytes(absl::Span<const uint8_t> bytes,
                                           const OnnxImportOptions& options,
                                           absl::string_view source,
                                           const std::shared_ptr<const void>& owner) {
  TUNEJIT_RETURN_IF_ERROR(CheckProtobufSize(bytes, source));
  // On an arena: a model's initializers (ResNet-50's 100 MB in 320 strings) are freed with a few
  // large blocks when the import is done, not string by string.
  google::protobuf::Arena arena;
  onnx::ModelProto& model = *google::protobuf::Arena::CreateMessage<onnx::ModelProto>(&arena);
  // The weights are read where they lie: protobuf parses the rest.
  std::optional<onnx_import::SplitModel> split = onnx_import::SplitInitializerData(bytes);
  std::vector<SharedBytes> raw_data;
  if (split) {
    for (absl::Span<const uint8_t> raw : split->raw_data) raw_data.emplace_back(raw, owner);
  }
  const bool parsed = split ? model.ParseFromString(split->skeleton)
                            : model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
  if (!parsed) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": not an ONNX model, or truncated (",
                                                   bytes.size(),
                                                   " bytes do not parse as an ONNX ModelProto)"));
  }
  // Arbitrary bytes sometimes parse as a protobuf message; a model has both of these.
  if (!model.has_ir_version() || !model.has_graph()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": not an ONNX model (no ", model.has_ir_version() ? "graph" : "ir_version", ")"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int64_t opset, DefaultOpset(model, source));
  onnx_import::Importer importer(model, opset, options, std::string(source), std::move(raw_data));
  return importer.Run();
}

}  // namespace

absl::StatusOr<OnnxModel> ImportOnnxFromBytes(absl::Span<const uint8_t> bytes,
                                              const OnnxImportOptions& options,
                                              absl::string_view source) {
  TUNEJIT_RETURN_IF_ERROR(CheckProtobufSize(bytes, source));
  // The weights outlive the caller's bytes: one copy of them to point into (protobuf would copy
  // the raw_data anyway).
  auto copy = std::make_shared<const std::vector<uint8_t>>(bytes.begin(), bytes.end());
  return ImportOwnedBytes(*copy, options, source, copy);
}

absl::StatusOr<OnnxModel> ImportOnnx(const std::string& path, const OnnxImportOptions& options) {
  // Mapped, not read: the bytes come from the page cache without a copy into fresh pages, and
  // the weights stay views into the mapping, which they keep alive.
  absl::StatusOr<MappedFile> file = MappedFile::Open(path);
  if (!file.ok()) {
    return absl::Status(file.status().code(), absl::StrCat("ONNX model ", file.status().message()));
  }
  auto mapped = std::make_shared<const MappedFile>(*std::move(file));
  OnnxImportOptions with_dir = options;
  if (with_dir.external_data_dir.empty()) {
    with_dir.external_data_dir = std::filesystem::absolute(path).parent_path().string();
  }
  return ImportOwnedBytes(mapped->bytes(), with_dir, path, mapped);
}

}  // namespace tunejit
