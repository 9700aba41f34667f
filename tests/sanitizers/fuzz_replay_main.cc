// File: tests/sanitizers/fuzz_replay_main.cc
// A main() for libFuzzer targets in builds without libFuzzer (gcc, the ASan/UBSan build): runs
// every file of the given directories (or single files) through LLVMFuzzerTestOneInput once, so the
// seed corpus and the saved crash inputs are replayed as a normal CTest test. A crash, abort or
// sanitizer report fails the test; a clean pass prints how many inputs ran.
//
//   cache_entry_fuzz_replay tests/data/cache/fuzz_corpus tests/data/cache/fuzz_regressions
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// Sorted so a failure names the same first input on every machine.
std::vector<std::filesystem::path> InputFiles(const std::filesystem::path& arg) {
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_regular_file(arg)) return {arg};
  if (!std::filesystem::is_directory(arg)) return files;
  for (const auto& item : std::filesystem::directory_iterator(arg)) {
    // README.md documents a regression dir (and keeps an empty one in git); it is not an input.
    if (item.is_regular_file() && item.path().filename() != "README.md") {
      files.push_back(item.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::filesystem::exists(argv[i])) {
      std::fprintf(stderr, "missing input dir %s\n", argv[i]);
      return 1;
    }
    for (const std::filesystem::path& file : InputFiles(argv[i])) {
      std::ifstream in(file, std::ios::binary);
      std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      std::fprintf(stderr, "replay %s (%zu bytes)\n", file.c_str(), bytes.size());
      // An exactly sized heap copy, as libFuzzer passes it: the vector's spare capacity would hide
      // a read just past the end from ASan.
      std::unique_ptr<uint8_t[]> exact(new uint8_t[bytes.size()]);
      std::copy(bytes.begin(), bytes.end(), exact.get());
      LLVMFuzzerTestOneInput(exact.get(), bytes.size());
      ++count;
    }
  }
  std::printf("replayed %zu inputs, no crash\n", count);
  return count == 0 ? 1 : 0;
}
