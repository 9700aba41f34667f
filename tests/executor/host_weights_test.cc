// executor/host_weights.h: the per-row, multi-threaded preparation gives exactly the bytes of a
// straightforward whole-tensor reference (reorder the tensor, then convert or quantize it) for conv
// OIHW -> OHWI, dense CHW -> HWC columns, float32, float16 and int8, at odd sizes, from unaligned
// file bytes, on 1, 2, 3 and 8 threads; the consumer sees every byte once, in order.
#include "executor/host_weights.h"

#include <bit>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/half.h"
#include "gmock/gmock.h"
#include "graph/quantize.h"
#include "gtest/gtest.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

// The references: whole tensors, one loop each (the executor's code before it went per row).
std::vector<float> ToOhwi(const std::vector<float>& w, int64_t co, int64_t ci, int64_t taps) {
  std::vector<float> out(w.size());
  for (int64_t o = 0; o < co; ++o) {
    for (int64_t c = 0; c < ci; ++c) {
      for (int64_t t = 0; t < taps; ++t) out[(o * taps + t) * ci + c] = w[(o * ci + c) * taps + t];
    }
  }
  return out;
}

std::vector<int8_t> ToOhwi(const std::vector<int8_t>& w, int64_t co, int64_t ci, int64_t taps) {
  std::vector<int8_t> out(w.size());
  for (int64_t o = 0; o < co; ++o) {
    for (int64_t c = 0; c < ci; ++c) {
      for (int64_t t = 0; t < taps; ++t) out[(o * taps + t) * ci + c] = w[(o * ci + c) * taps + t];
    }
  }
  return out;
}

std::vector<float> ColumnsToHwc(const std::vector<float>& w, int64_t c, int64_t hw) {
  std::vector<float> out(w.size());
  const int64_t k = c * hw;
  for (size_t row = 0; row < w.size() / k; ++row) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < hw; ++p) out[row * k + p * c + ch] = w[row * k + ch * hw + p];
    }
  }
  return out;
}

template <typename T>
std::vector<uint8_t> Bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<uint8_t> Fp16Bytes(const std::vector<float>& w) {
  std::vector<uint16_t> h(w.size());
  for (size_t i = 0; i < w.size(); ++i) h[i] = FloatToHalf(w[i]);
  return Bytes(h);
}

// One case: the float32 values as a weight file holds them (at an odd address), how to prepare
// them, and the reference result.
struct Case {
  std::string name;
  std::vector<uint8_t> file = {};  // one byte of padding, then the values
  WeightRows rows = {};
  std::vector<uint8_t> want = {};
  std::vector<float> want_scales = {};  // int8
};

Case MakeCase(std::string name, const std::vector<float>& w, int64_t rows, int64_t a, int64_t b,
              WeightElement element) {
  Case c{.name = std::move(name)};
  c.file.resize(1 + w.size() * sizeof(float));
  std::memcpy(c.file.data() + 1, w.data(), w.size() * sizeof(float));
  c.rows = {.source = absl::MakeConstSpan(c.file).subspan(1),
            .rows = rows,
            .a = a,
            .b = b,
            .element = element};
  return c;
}

// Odd sizes everywhere; values with ties, zeros, signed zeros, subnormals and non-finite ones.
std::vector<float> Values(size_t n, uint32_t seed) {
  std::vector<float> v = testing::NormalFloats(n, seed);
  const float special[] = {0.0f, -0.0f, 1e-40f, 65520.0f, -3.5f, 2.5f};
  for (size_t i = 0; i < n; i += 7) v[i] = special[(i / 7) % 6];
  return v;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  const int64_t co = 7, ci = 5, taps = 3 * 3;
  const std::vector<float> conv = Values(co * ci * taps, 1);
  {
    Case c = MakeCase("conv fp16 OHWI", conv, co, ci, taps, WeightElement::kFloat16);
    c.want = Fp16Bytes(ToOhwi(conv, co, ci, taps));
    cases.push_back(std::move(c));
  }
  {
    // The executor's old order: quantize the OIHW tensor, then reorder the int8 values.
    Case c = MakeCase("conv int8 OHWI", conv, co, ci, taps, WeightElement::kInt8);
    QuantizedWeights q = QuantizeWeights(conv, co);
    c.want = Bytes(ToOhwi(q.values, co, ci, taps));
    c.want_scales = q.scales;
    cases.push_back(std::move(c));
  }
  {
    Case c = MakeCase("conv int8 OIHW", conv, co, ci * taps, 1, WeightElement::kInt8);
    QuantizedWeights q = QuantizeWeights(conv, co);
    c.want = Bytes(q.values);
    c.want_scales = q.scales;
    cases.push_back(std::move(c));
  }
  const int64_t n = 13, c = 3, hw = 5 * 5;
  std::vector<float> dense = Values(n * c * hw, 2);
  for (int64_t i = 0; i < c * hw; ++i) dense[4 * c * hw + i] = 0.0f;  // an all-zero channel
  dense[9 * c * hw + 2] = std::numeric_limits<float>::infinity();
  {
    Case k = MakeCase("dense f32 HWC columns", dense, n, c, hw, WeightElement::kFloat32);
    k.want = Bytes(ColumnsToHwc(dense, c, hw));
    cases.push_back(std::move(k));
  }
  {
    Case k = MakeCase("dense fp16 HWC columns", dense, n, c, hw, WeightElement::kFloat16);
    k.want = Fp16Bytes(ColumnsToHwc(dense, c, hw));
    cases.push_back(std::move(k));
  }
  {
    Case k = MakeCase("dense int8 HWC columns", dense, n, c, hw, WeightElement::kInt8);
    QuantizedWeights q = QuantizeWeights(ColumnsToHwc(dense, c, hw), n);
    k.want = Bytes(q.values);
    k.want_scales = q.scales;
    cases.push_back(std::move(k));
  }
  {
    Case k = MakeCase("dense f32 as given", dense, n, c * hw, 1, WeightElement::kFloat32);
    k.want = Bytes(dense);
    cases.push_back(std::move(k));
  }
  return cases;
}

// Runs PrepareWeights over every case together, rebuilding each tensor from what the consumer
// receives and checking that it comes in order, each byte once.
std::vector<std::vector<uint8_t>> Prepare(const std::vector<Case>& cases,
                                          const PrepareOptions& options,
                                          std::vector<PreparedWeights>* prepared) {
  std::vector<WeightRows> rows;
  for (const Case& c : cases) rows.push_back(c.rows);
  std::vector<std::vector<uint8_t>> got(cases.size());
  int last_tensor = 0;
  auto consume = [&](int t, size_t offset, absl::Span<const uint8_t> bytes) {
    EXPECT_GE(t, last_tensor) << "tensors out of order";
    EXPECT_EQ(offset, got[t].size()) << cases[t].name << ": a gap or an overlap";
    last_tensor = t;
    got[t].insert(got[t].end(), bytes.begin(), bytes.end());
    return absl::OkStatus();
  };
  absl::StatusOr<PreparedWeightSet> set = PrepareWeights(rows, options, consume);
  EXPECT_TRUE(set.ok()) << set.status();
  if (set.ok()) *prepared = std::move(set->tensors);
  return got;
}

TEST(HostWeightsTest, RowsMatchTheWholeTensorReferenceOnAnyThreadCount) {
  const std::vector<Case> cases = Cases();
  for (int threads : {1, 2, 3, 8}) {
    // One row per unit, a few rows, and everything in one unit.
    for (size_t unit_bytes : {size_t{1}, size_t{100}, size_t{4} << 20}) {
      std::vector<PreparedWeights> prepared;
      const std::vector<std::vector<uint8_t>> got =
          Prepare(cases, {.threads = threads, .unit_bytes = unit_bytes}, &prepared);
      ASSERT_EQ(prepared.size(), cases.size());
      for (size_t i = 0; i < cases.size(); ++i) {
        const std::string where = cases[i].name + ", " + std::to_string(threads) + " threads, " +
                                  std::to_string(unit_bytes) + " bytes a unit";
        EXPECT_EQ(got[i], cases[i].want) << where;
        EXPECT_THAT(prepared[i].bytes, ::testing::ElementsAreArray(cases[i].want)) << where;
        // Bit for bit (NaN-free here, but a scale of 1 for the zero channel must be exact too).
        ASSERT_EQ(prepared[i].scales.size(), cases[i].want_scales.size()) << where;
        for (size_t r = 0; r < prepared[i].scales.size(); ++r) {
          EXPECT_EQ(std::bit_cast<uint32_t>(prepared[i].scales[r]),
                    std::bit_cast<uint32_t>(cases[i].want_scales[r]))
              << where << ", row " << r;
        }
      }
    }
  }
}

TEST(HostWeightsTest, Float32AsGivenIsTheFileBytesNotACopy) {
  const std::vector<Case> cases = Cases();
  const Case& as_given = cases.back();
  ASSERT_TRUE(as_given.rows.AsGiven());
  std::vector<PreparedWeights> prepared;
  Prepare({as_given}, {.threads = 2, .unit_bytes = 64}, &prepared);
  ASSERT_EQ(prepared.size(), 1u);
  EXPECT_EQ(prepared[0].bytes.data(), as_given.rows.source.data());
  EXPECT_EQ(prepared[0].storage, nullptr);
}

TEST(HostWeightsTest, AConsumerErrorStopsAndIsReturned) {
  const std::vector<Case> cases = Cases();
  std::vector<WeightRows> rows;
  for (const Case& c : cases) rows.push_back(c.rows);
  for (int threads : {1, 8}) {
    int calls = 0;
    absl::StatusOr<PreparedWeightSet> set = PrepareWeights(
        rows, {.threads = threads, .unit_bytes = 1}, [&](int, size_t, absl::Span<const uint8_t>) {
          return ++calls == 3 ? absl::ResourceExhaustedError("device full") : absl::OkStatus();
        });
    EXPECT_EQ(set.status(), absl::ResourceExhaustedError("device full"));
    EXPECT_EQ(calls, 3);
  }
}

TEST(HostWeightsTest, ASourceOfTheWrongSizeIsRefused) {
  const std::vector<uint8_t> file(4 * 10);
  const WeightRows rows{.source = file, .rows = 3, .a = 2, .b = 2};
  absl::StatusOr<PreparedWeightSet> set = PrepareWeights(
      {rows}, {}, [](int, size_t, absl::Span<const uint8_t>) { return absl::OkStatus(); });
  EXPECT_TRUE(absl::IsInvalidArgument(set.status())) << set.status();
}

TEST(HostWeightsTest, EmptyTensorsGiveNoUnits) {
  const WeightRows none{.rows = 0, .a = 4, .element = WeightElement::kFloat16};
  int calls = 0;
  absl::StatusOr<PreparedWeightSet> set =
      PrepareWeights({none}, {}, [&](int, size_t, absl::Span<const uint8_t>) {
        ++calls;
        return absl::OkStatus();
      });
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(set->tensors[0].bytes.empty());
}

}  // namespace
}  // namespace tunejit
