#include <string_view>
#include <vector>

#include "ops/op_template.h"
#include "ops/templates.h"

namespace tunejit {

// An explicit list (not static registration, which static linking silently drops).
std::vector<const OpTemplate*> AllOpTemplates() {
  return {
      DenseSmallBatchTemplate(),
      DenseLargeBatchTemplate(),
      Conv2dNchwTemplate(),
      DepthwiseConv2dNchwTemplate(),
      Conv2dNchwWinogradTemplate(),
      Conv2dNchwcInt8Template(),
      // tunejit-only Hopper tensor-core templates (sm_90a; nothing picks them by default yet)
      DenseWgmmaTemplate(),
      Conv2dNhwcWgmmaTemplate(),
      Conv2dNhwcWgmmaPoolTemplate(),
      Conv2dNchwStemMmaTemplate(),
  };
}

const OpTemplate* FindOpTemplate(std::string_view task_name) {
  for (const OpTemplate* op : AllOpTemplates()) {
    if (op->task_name() == task_name) return op;
  }
  return nullptr;
}

}  // namespace tunejit
