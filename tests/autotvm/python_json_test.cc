// Python float repr and json.dumps layout. Expected strings were produced by CPython 3.11
// (repr(x) and json.dumps(obj)), not by the code under test.
#include "autotvm/python_json.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace tunejit::autotvm {
namespace {

struct ReprCase {
  double value;
  const char* repr;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

const ReprCase kReprCases[] = {
    {0.000854268221590909, "0.000854268221590909"},
    {1584199993.2121232, "1584199993.2121232"},
    {1e-05, "1e-05"},
    {1000000000.0, "1000000000.0"},
    {0.0, "0.0"},
    {-0.0, "-0.0"},
    {1.0, "1.0"},
    {0.1, "0.1"},
    {0.2, "0.2"},
    {1e+16, "1e+16"},
    {1000000000000000.0, "1000000000000000.0"},
    {1234567890123456.0, "1234567890123456.0"},
    {1.2345678901234568e+16, "1.2345678901234568e+16"},
    {0.0001, "0.0001"},
    {0.00012345, "0.00012345"},
    {1.5e-07, "1.5e-07"},
    {5e-324, "5e-324"},
    {1.7976931348623157e+308, "1.7976931348623157e+308"},
    {2.5e-05, "2.5e-05"},
    {123.456, "123.456"},
    {1e+22, "1e+22"},
    {1e-100, "1e-100"},
    {9.999999999999999e-05, "9.999999999999999e-05"},
    {100.0, "100.0"},
    {0.0003, "0.0003"},
    {-2.5, "-2.5"},
    {6.02214076e+23, "6.02214076e+23"},
    {kInf, "inf"},
    {-kInf, "-inf"},
};

TEST(PythonFloatReprTest, MatchesCPython) {
  for (const ReprCase& c : kReprCases) {
    EXPECT_EQ(PythonFloatRepr(c.value), c.repr) << c.repr;
  }
  EXPECT_EQ(PythonFloatRepr(std::nan("")), "nan");
}

TEST(PythonFloatReprTest, JsonSpellsNonFiniteLikePython) {
  EXPECT_EQ(PythonJsonFloat(kInf), "Infinity");
  EXPECT_EQ(PythonJsonFloat(-kInf), "-Infinity");
  EXPECT_EQ(PythonJsonFloat(std::nan("")), "NaN");
  EXPECT_EQ(PythonJsonFloat(1e9), "1000000000.0");
}

TEST(PythonFloatReprTest, ReprRoundTripsRandomDoubles) {
  uint64_t state = 88172645463325252ull;
  for (int i = 0; i < 20000; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    double v;
    std::memcpy(&v, &state, sizeof(v));
    if (!std::isfinite(v)) continue;
    std::string text = PythonFloatRepr(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
}

TEST(DumpPythonJsonTest, MatchesJsonDumpsLayout) {
  Json j = Json::object();
  j["a"] = "\xc3\xa9\x01\"\\\n\t\x7f\xf0\x9f\x98\x80";
  j["b"] = Json::array({1, 2.0, nullptr, true, false, kInf, std::nan("")});
  j["c"] = Json::object();
  j["d"] = Json::array();
  j["e"] = -7;
  EXPECT_EQ(DumpPythonJson(j),
            "{\"a\": \"\\u00e9\\u0001\\\"\\\\\\n\\t\\u007f\\ud83d\\ude00\", \"b\": [1, 2.0, null, "
            "true, false, Infinity, NaN], \"c\": {}, \"d\": [], \"e\": -7}");
}

TEST(ParseJsonGuardedTest, KeepsKeyOrderAndLastDuplicateLikePython) {
  absl::StatusOr<Json> j = ParseJsonGuarded(R"({"b": 1, "a": 2, "b": 3})");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(DumpPythonJson(*j), R"({"b": 3, "a": 2})");  // json.loads + json.dumps
}

TEST(ParseJsonGuardedTest, RejectsDeepNestingHugeIntegersAndSyntaxErrors) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  absl::StatusOr<Json> j = ParseJsonGuarded(deep);
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("nested deeper"), std::string::npos);

  j = ParseJsonGuarded("[123456789012345678901234567890]");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("too large"), std::string::npos);
  EXPECT_TRUE(ParseJsonGuarded("[123456789012345678]").ok());  // 18 digits fit int64
  EXPECT_TRUE(ParseJsonGuarded("[1.5e300]").ok());             // floats are checked by users

  j = ParseJsonGuarded(R"({"a": [1, 2)");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("invalid JSON"), std::string::npos);
  EXPECT_FALSE(ParseJsonGuarded("").ok());
  EXPECT_FALSE(ParseJsonGuarded("[\"\\ud800\"]").ok());  // lone surrogate
  EXPECT_FALSE(ParseJsonGuarded("[\"abc").ok());
  EXPECT_TRUE(ParseJsonGuarded("[\"[[[[\"]").ok());  // brackets inside strings do not count
}

}  // namespace
}  // namespace tunejit::autotvm
