#include "executor/host_weights.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/half.h"
#include "common/parallel_for.h"
#include "common/status_macros.h"
#include "graph/quantize.h"

namespace tunejit {
namespace {

// Rows [begin, end) of one tensor: the work of one thread at a time, and one consumer call.
struct Unit {
  int tensor = 0;
  int64_t begin = 0, end = 0;
};

// Units finish in any order; the consumer takes them in order.
class DoneFlags {
 public:
  explicit DoneFlags(size_t units) : done_(units, false) {}
  void Set(size_t unit) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_[unit] = true;
    }
    changed_.notify_all();
  }
  void WaitFor(size_t unit) {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return done_[unit]; });
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  std::vector<bool> done_;
};

// Per thread: the row as floats (the file's bytes may be unaligned) and reordered.
struct RowScratch {
  std::vector<float> row, reordered;
};

absl::Status CheckSizes(absl::Span<const WeightRows> tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const WeightRows& t = tensors[i];
    if (t.rows < 0 || t.a < 0 || t.b < 0 ||
        t.source.size() != static_cast<size_t>(t.rows * t.RowElements()) * sizeof(float)) {
      return absl::InvalidArgumentError(absl::StrCat("weight ", i, ": ", t.source.size(),
                                                     " bytes are not ", t.rows, " rows of ", t.a,
                                                     " x ", t.b, " float32 values"));
    }
  }
  return absl::OkStatus();
}

std::vector<PreparedWeights> Allocate(absl::Span<const WeightRows> tensors) {
  std::vector<PreparedWeights> out(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const WeightRows& t = tensors[i];
    if (t.AsGiven()) {
      out[i].bytes = t.source;
      continue;
    }
    // Not zeroed: every byte is written by the preparation, the page faults land on its threads.
    out[i].storage = std::make_unique_for_overwrite<uint8_t[]>(t.Bytes());
    out[i].bytes = {out[i].storage.get(), t.Bytes()};
    if (t.element == WeightElement::kInt8) out[i].scales.resize(static_cast<size_t>(t.rows));
  }
  return out;
}

std::vector<Unit> SplitIntoUnits(absl::Span<const WeightRows> tensors, size_t unit_bytes) {
  std::vector<Unit> units;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const WeightRows& t = tensors[i];
    const size_t row_bytes = t.RowBytes();
    const int64_t step = std::max<int64_t>(1, unit_bytes / std::max<size_t>(row_bytes, 1));
    for (int64_t r = 0; r < t.rows && row_bytes > 0; r += step) {
      units.push_back({static_cast<int>(i), r, std::min(t.rows, r + step)});
    }
  }
  return units;
}

// out[j * a + i] = in[i * b + j]: a row [a][b] as [b][a].
void TransposeRow(const float* in, int64_t a, int64_t b, float* out) {
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < b; ++j) out[j * a + i] = in[i * b + j];
  }
}

void PrepareRow(const WeightRows& t, int64_t r, PreparedWeights& out, RowScratch& s) {
  const size_t n = static_cast<size_t>(t.RowElements());
  s.row.resize(n);
  std::memcpy(s.row.data(), t.source.data() + r * n * sizeof(float), n * sizeof(float));
  const float* values = s.row.data();
  if (t.a > 1 && t.b > 1) {
    s.reordered.resize(n);
    TransposeRow(values, t.a, t.b, s.reordered.data());
    values = s.reordered.data();
  }
  uint8_t* to = out.storage.get() + r * t.RowBytes();
  switch (t.element) {
    case WeightElement::kFloat32:
      std::memcpy(to, values, n * sizeof(float));
      return;
    case WeightElement::kFloat16:
      FloatsToHalves(values, n, to);
      return;
    case WeightElement::kInt8:
      out.scales[r] = QuantizeRow({values, n}, {reinterpret_cast<int8_t*>(to), n});
      return;
  }
}

void PrepareUnit(const WeightRows& t, const Unit& u, PreparedWeights& out) {
  if (t.AsGiven()) return;
  RowScratch scratch;
  for (int64_t r = u.begin; r < u.end; ++r) PrepareRow(t, r, out, scratch);
}

// No more threads than there are unit_bytes of work to prepare: a small model starts none.
int ThreadsFor(absl::Span<const WeightRows> tensors, const PrepareOptions& options) {
  size_t bytes = 0;
  for (const WeightRows& t : tensors) bytes += t.AsGiven() ? 0 : t.Bytes();
  const size_t unit = std::max<size_t>(options.unit_bytes, 1);
  const size_t pieces = (bytes + unit - 1) / unit;
  return static_cast<int>(
      std::clamp<size_t>(pieces, 1, static_cast<size_t>(ResolveThreads(options.threads))));
}

// Prepares every unit on `threads` threads, each marked done when written; skips the rest once
// `stop` is set.
void PrepareUnits(absl::Span<const WeightRows> tensors, absl::Span<const Unit> units, int threads,
                  const std::atomic<bool>& stop, DoneFlags& done,
                  std::vector<PreparedWeights>& out) {
  ParallelFor(static_cast<int64_t>(units.size()), 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end && !stop; ++u) {
      const Unit& unit = units[u];
      PrepareUnit(tensors[unit.tensor], unit, out[unit.tensor]);
      done.Set(static_cast<size_t>(u));
    }
  });
}

// Hands each unit's bytes to `on_unit` in order, as soon as it is done; the first error.
absl::Status ConsumeInOrder(absl::Span<const WeightRows> tensors, absl::Span<const Unit> units,
                            const std::vector<PreparedWeights>& prepared, DoneFlags& done,
                            PreparedUnitFn on_unit) {
  for (size_t u = 0; u < units.size(); ++u) {
    done.WaitFor(u);
    const Unit& unit = units[u];
    const size_t row_bytes = tensors[unit.tensor].RowBytes();
    const size_t offset = static_cast<size_t>(unit.begin) * row_bytes;
    const size_t size = static_cast<size_t>(unit.end - unit.begin) * row_bytes;
    TUNEJIT_RETURN_IF_ERROR(
        on_unit(unit.tensor, offset, prepared[unit.tensor].bytes.subspan(offset, size)));
  }
  return absl::OkStatus();
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

size_t ElementBytes(WeightElement element) {
  switch (element) {
    case WeightElement::kFloat32:
      return 4;
    case WeightElement::kFloat16:
      return 2;
    case WeightElement::kInt8:
      return 1;
  }
  return 4;
}

absl::StatusOr<PreparedWeightSet> PrepareWeights(absl::Span<const WeightRows> tensors,
                                                 const PrepareOptions& options,
                                                 PreparedUnitFn on_unit) {
  TUNEJIT_RETURN_IF_ERROR(CheckSizes(tensors));
  const auto start = std::chrono::steady_clock::now();
  PreparedWeightSet set;
  set.tensors = Allocate(tensors);
  const std::vector<Unit> units = SplitIntoUnits(tensors, options.unit_bytes);
  const int threads = ThreadsFor(tensors, options);
  DoneFlags done(units.size());
  std::atomic<bool> stop{false};
  auto prepare = [&] {
    PrepareUnits(tensors, units, threads, stop, done, set.tensors);
    set.prepare_seconds = Seconds(start);
  };
  // One unit, or one thread, has nothing to overlap: no thread is started for it.
  std::thread preparer;
  if (units.size() > 1 && threads > 1) {
    preparer = std::thread(prepare);
  } else {
    prepare();
  }
  const absl::Status consumed = ConsumeInOrder(tensors, units, set.tensors, done, on_unit);
  stop = !consumed.ok();
  if (preparer.joinable()) preparer.join();
  TUNEJIT_RETURN_IF_ERROR(consumed);
  return set;
}

}  // namespace tunejit
