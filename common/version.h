// File: common/version.h
// This build's version: the project's, with the git commit the sources were built from (read at
// every build, cmake/git_commit.cmake), e.g. "0.1.0 (107ffd0)" or "0.1.0 (107ffd0-dirty)". Reports
// print it; a saved build plan is valid only for the build that wrote it.
#ifndef TUNEJIT_COMMON_VERSION_H_
#define TUNEJIT_COMMON_VERSION_H_

#include <string>

namespace tunejit {

std::string TunejitVersion();

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_VERSION_H_
