// File: autotvm/target.h
// A TVM target string ("cuda -model=v100", "nvptx", "cuda -libs=cudnn,cublas -device=x") parsed
// the way TVM 0.7.dev1 (src/target/target.cc) does: whitespace-separated, the first word is the
// target name, every later word is an option. Keys are computed in TVM's order: each -device=
// value and each -keys= item in option order, the -device value once more (TVM pushes it twice),
// then the name's own keys ("cuda", "gpu" for cuda/nvptx; "cpu" for llvm/c; "rocm","gpu";
// "opencl","gpu"). ApplyHistoryBest matches records through these keys and `model`.
//
//   TUNEJIT_ASSIGN_OR_RETURN(Target t, ParseTarget("cuda -model=v100"));
//   t.name == "cuda"; t.model == "v100"; t.keys == {"cuda", "gpu"}
#ifndef TUNEJIT_AUTOTVM_TARGET_H_
#define TUNEJIT_AUTOTVM_TARGET_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tunejit::autotvm {

struct Target {
  std::string text;                               // the string as given (records keep it verbatim)
  std::string name;                               // "cuda", "nvptx", "llvm", ...
  std::string model = "unknown";                  // -model=, "unknown" when absent
  std::string device;                             // -device=, "" when absent
  std::vector<std::string> keys;                  // see the file comment
  std::vector<std::string> libs;                  // -libs= items
  std::vector<std::string> options;               // every option word, in order
  std::map<std::string, std::string> option_map;  // "-model" -> "v100"; flags map to ""

  bool IsCudaLike() const { return name == "cuda" || name == "nvptx"; }
};

// InvalidArgument for an empty string, a name that is not an identifier, an option that does not
// start with '-', or an empty -model=/-device= value.
absl::StatusOr<Target> ParseTarget(std::string_view text);

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_TARGET_H_
