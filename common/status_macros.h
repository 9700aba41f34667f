// File: common/status_macros.h
// Early-return helpers for absl::Status / absl::StatusOr. Debian's Abseil (20220623) ships no status
// macros, so the project defines its own two, prefixed to avoid clashes.
//
//   TUNEJIT_RETURN_IF_ERROR(WriteFile(path, bytes));
//   TUNEJIT_ASSIGN_OR_RETURN(Library lib, Library::Load(cubin));
#ifndef TUNEJIT_COMMON_STATUS_MACROS_H_
#define TUNEJIT_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TUNEJIT_RETURN_IF_ERROR(expr)                 \
  do {                                                \
    ::absl::Status tunejit_status_ = (expr);          \
    if (!tunejit_status_.ok()) return tunejit_status_; \
  } while (0)

#define TUNEJIT_STATUS_CONCAT_INNER_(a, b) a##b
#define TUNEJIT_STATUS_CONCAT_(a, b) TUNEJIT_STATUS_CONCAT_INNER_(a, b)

#define TUNEJIT_ASSIGN_OR_RETURN(lhs, expr) \
  TUNEJIT_ASSIGN_OR_RETURN_IMPL_(TUNEJIT_STATUS_CONCAT_(tunejit_statusor_, __LINE__), lhs, expr)

#define TUNEJIT_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = std::move(statusor).value()

#endif  // TUNEJIT_COMMON_STATUS_MACROS_H_
