// File: tests/sanitizers/cache_fuzz_corpus_gen.cc
// Writes the seed corpus of tests/cache/cache_entry_fuzz.cc: real entries made by the cache's own
// encoder for the fuzz target's key, plus truncated, padded and foreign-key variants, in both of
// the fuzzer's input modes (first byte even: raw file bytes; odd: sections re-wrapped with a valid
// checksum). Real entries give the fuzzer the hit path from the first run instead of leaving it to
// guess a SHA-256.
//
//   cache_fuzz_corpus_gen tests/data/cache/fuzz_corpus
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cache/entry_format.h"
#include "cache/kernel_cache.h"

namespace {

using tunejit::CacheEntry;
using tunejit::cache_internal::EncodeEntry;
using tunejit::cache_internal::EncodeLoweredNames;

// Must match Fixture in cache_entry_fuzz.cc, so that the valid entries are hits.
std::string FuzzKeyCanonical() {
  tunejit::CacheKeyInputs inputs;
  inputs.source_name = "fuzz.cu";
  inputs.source = "__global__ void k() {}";
  inputs.name_expressions = {"k"};
  inputs.arch = "sm_90";
  inputs.nvrtc_version = 13000;
  return tunejit::ComputeCacheKey(inputs).canonical;
}

std::vector<CacheEntry> SampleEntries() {
  std::vector<CacheEntry> entries(3);
  entries[0].cubin = std::string(
                         "\x7f"
                         "ELF\x02\x01\x01",
                         7) +
                     std::string(57, '\0');
  entries[0].lowered_names = {{"k", "_Z1kv"}};
  entries[1].ptx = ".version 8.0\n.target sm_90\n.visible .entry _Z1kv() { ret; }\n";
  entries[1].lowered_names = {{"k", "_Z1kv"}, {"dense<64, 4>", "_Z5denseILi64ELi4EEvv"}};
  entries[2].cubin = "cubin";
  entries[2].ptx = "ptx";
  for (int i = 0; i < 8; ++i) {  // a table much larger than cubin + ptx: exact mode-1 cuts
    entries[2].lowered_names[absl::StrFormat("conv2d<%d, 8, 4>", i)] =
        absl::StrFormat("_Z6conv2dILi%dELi8ELi4EEvPKfS1_Pf", i);
  }
  return entries;
}

void Write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Mode-1 input: 4 size bytes, then key|cubin|ptx|table. The fuzzer cuts piece i at
// size_byte * body_size / 1024, so a piece can be at most a quarter of the body: pick the byte that
// cuts exactly where possible (the table, last, takes the rest).
std::string Wrapped(bool use_fuzz_key, const std::string& key, const std::string& cubin,
                    const std::string& ptx, const std::string& table) {
  std::string body = key + cubin + ptx + table;
  auto share = [&](size_t n) {
    for (int c = 0; c < 256; ++c) {
      if (c * body.size() / 1024 >= n) return static_cast<char>(c);
    }
    return static_cast<char>(255);
  };
  std::string input(1, use_fuzz_key ? '\x03' : '\x01');
  input += share(key.size());
  input += share(cubin.size());
  input += share(ptx.size());
  input += '\0';
  return input + body;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  const std::string key = FuzzKeyCanonical();
  std::vector<CacheEntry> entries = SampleEntries();
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string file = EncodeEntry(key, entries[i]);
    Write(dir, absl::StrFormat("raw_valid_%d", i), std::string(1, '\0') + file);
    Write(dir, absl::StrFormat("raw_truncated_header_%d", i),
          std::string(1, '\0') + file.substr(0, 20));
    Write(dir, absl::StrFormat("raw_truncated_body_%d", i),
          std::string(1, '\0') + file.substr(0, file.size() / 2));
    Write(dir, absl::StrFormat("raw_truncated_checksum_%d", i),
          std::string(1, '\0') + file.substr(0, file.size() - 1));
    Write(dir, absl::StrFormat("raw_padded_%d", i), std::string(1, '\0') + file + "x");
    Write(dir, absl::StrFormat("raw_other_key_%d", i),
          std::string(1, '\0') + EncodeEntry("other key", entries[i]));
    std::string table = EncodeLoweredNames(entries[i].lowered_names);
    Write(dir, absl::StrFormat("wrapped_fuzz_key_%d", i),
          Wrapped(true, "", entries[i].cubin, entries[i].ptx, table));
    Write(dir, absl::StrFormat("wrapped_own_key_%d", i),
          Wrapped(false, key, entries[i].cubin, entries[i].ptx, table));
    Write(dir, absl::StrFormat("wrapped_truncated_table_%d", i),
          Wrapped(true, "", entries[i].cubin, entries[i].ptx, table.substr(0, table.size() - 3)));
  }
  Write(dir, "raw_empty_file", std::string(1, '\0'));
  Write(dir, "raw_magic_only", std::string(1, '\0') + "TJKC");
  std::printf("wrote %zu entries' variants to %s\n", entries.size(), dir.c_str());
  return 0;
}
