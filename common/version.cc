#include "common/version.h"

#include "absl/strings/str_cat.h"
#include "common/git_commit.h"

namespace tunejit {

std::string TunejitVersion() {
  const std::string commit = TUNEJIT_GIT_COMMIT;
  return commit.empty() ? std::string(TUNEJIT_VERSION)
                        : absl::StrCat(TUNEJIT_VERSION, " (", commit, ")");
}

}  // namespace tunejit
