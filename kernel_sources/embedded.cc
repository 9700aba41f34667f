#include "kernel_sources/embedded.h"

namespace tunejit {

const EmbeddedFile* FindKernelSource(std::string_view name) {
  for (const EmbeddedFile& file : EmbeddedKernelSources()) {
    if (file.name == name) return &file;
  }
  return nullptr;
}

}  // namespace tunejit
