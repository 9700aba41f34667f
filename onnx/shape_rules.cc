#include "onnx/shape_rules.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "onnx/tensor.h"

namespace tunejit::onnx_import {
namespace {

std::string Text(const Dims& dims) { return absl::StrCat("[", absl::StrJoin(dims, ", "), "]"); }

absl::Status Invalid(const std::string& why) { return absl::InvalidArgumentError(why); }

}  // namespace

int64_t DimsProduct(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, const char* what) {
  if (axis < -rank || axis >= rank) {
    return Invalid(absl::StrCat(what, " ", axis, " is out of range for rank ", rank, " (expected ",
                                -rank, "..", rank - 1, ")"));
  }
  return axis < 0 ? axis + rank : axis;
}

absl::StatusOr<Dims> NormalizeAxes(const Dims& axes, int64_t rank) {
  Dims out;
  for (int64_t a : axes) {
    TUNEJIT_ASSIGN_OR_RETURN(int64_t v, NormalizeAxis(a, rank));
    out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    return Invalid(absl::StrCat("axes ", Text(axes), " name an axis twice"));
  }
  return out;
}

absl::StatusOr<Dims> ReshapeTarget(const Dims& in, const Dims& to, bool allowzero) {
  Dims out = to;
  int inferred = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && !allowzero) {
      if (i >= in.size()) {
        return Invalid(absl::StrCat("shape ", Text(to), ": a 0 at index ", i,
                                    " copies an input dim, but the input ", Text(in),
                                    " has none there"));
      }
      out[i] = in[i];
    } else if (out[i] == -1) {
      if (inferred >= 0) return Invalid(absl::StrCat("shape ", Text(to), " has two -1"));
      inferred = static_cast<int>(i);
    } else if (out[i] < 0) {
      return Invalid(absl::StrCat("shape ", Text(to), " has a negative dim other than -1"));
    }
  }
  const int64_t total = DimsProduct(in);
  int64_t known = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) == inferred) continue;
    if (out[i] > 0 && known > kMaxElements / out[i]) {
      return Invalid(absl::StrCat("shape ", Text(to), " is too large"));
    }
    known *= out[i];
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      return Invalid(absl::StrCat("cannot infer the -1 of ", Text(to), " for ", total,
                                  " elements (input ", Text(in), ")"));
    }
    out[inferred] = total / known;
  } else if (known != total) {
    return Invalid(absl::StrCat("shape ", Text(to), " (", known, " elements) does not match the ",
                                total, " elements of ", Text(in)));
  }
  return out;
}

absl::StatusOr<Dims> UnsqueezeDims(const Dims& in, const Dims& axes) {
  const int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  TUNEJIT_ASSIGN_OR_RETURN(Dims sorted, NormalizeAxes(axes, rank));
  Dims out;
  size_t next = 0, k = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (k < sorted.size() && sorted[k] == d) {
      out.push_back(1);
      ++k;
    } else {
      out.push_back(in[next++]);
    }
  }
  return out;
}

absl::StatusOr<Dims> SqueezeDims(const Dims& in, const std::optional<Dims>& axes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  Dims sorted;
  if (axes.has_value()) {
    TUNEJIT_ASSIGN_OR_RETURN(sorted, NormalizeAxes(*axes, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) {
      if (in[d] == 1) sorted.push_back(d);
    }
  }
  Dims out;
  size_t k = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (k < sorted.size() && sorted[k] == d) {
      if (in[d] != 1) {
        return Invalid(absl::StrCat("axis ", d, " of ", Text(in), " is ", in[d],
                                    ", not 1: it cannot be squeezed"));
      }
      ++k;
    } else {
      out.push_back(in[d]);
    }
  }
  return out;
}

absl::StatusOr<Dims> FlattenDims(const Dims& in, int64_t axis) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (axis < -rank || axis > rank) {
    return Invalid(absl::StrCat("axis ", axis, " is out of range for rank ", rank, " (expected ",
                                -rank, "..", rank, ")"));
  }
  if (axis < 0) axis += rank;
  return Dims{DimsProduct(Dims(in.begin(), in.begin() + axis)),
              DimsProduct(Dims(in.begin() + axis, in.end()))};
}

SliceRange ClampSlice(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (dim <= 0) return {0, 0, step, 0};  // nothing to take (and no valid clamp range)
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  SliceRange r;
  r.step = step;
  // The distance walked, and the step's magnitude as unsigned (INT64_MIN has no positive twin).
  int64_t span = 0;
  uint64_t magnitude = 0;
  if (step > 0) {
    r.start = std::clamp<int64_t>(start, 0, dim);
    r.end = std::clamp<int64_t>(end, 0, dim);
    span = r.end - r.start;
    magnitude = static_cast<uint64_t>(step);
  } else {
    r.start = std::clamp<int64_t>(start, 0, dim - 1);
    r.end = std::clamp<int64_t>(end, -1, dim - 1);
    span = r.start - r.end;
    magnitude = uint64_t{0} - static_cast<uint64_t>(step);
  }
  r.count = span > 0 ? 1 + static_cast<int64_t>(static_cast<uint64_t>(span - 1) / magnitude) : 0;
  return r;
}

absl::StatusOr<std::vector<AxisSlice>> SliceAxes(const Dims& in, const Dims& starts,
                                                 const Dims& ends, const Dims& axes,
                                                 const Dims& steps) {
  const size_t n = starts.size();
  if (ends.size() != n || (!axes.empty() && axes.size() != n) ||
      (!steps.empty() && steps.size() != n)) {
    return Invalid(absl::StrCat("starts ", Text(starts), ", ends ", Text(ends), ", axes ",
                                Text(axes), " and steps ", Text(steps),
                                " must have the same length"));
  }
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<AxisSlice> out;
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < n; ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(int64_t axis,
                             NormalizeAxis(axes.empty() ? static_cast<int64_t>(i) : axes[i], rank));
    if (seen[axis])
      return Invalid(absl::StrCat("axes ", Text(axes), " name axis ", axis, " twice"));
    seen[axis] = true;
    const int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) return Invalid(absl::StrCat("step 0 on axis ", axis));
    out.push_back({axis, ClampSlice(starts[i], ends[i], step, in[axis])});
  }
  return out;
}

absl::StatusOr<Dims> SplitSizes(int64_t dim, const Dims& split, int64_t outputs, bool ceil_parts) {
  if (outputs < 1) return Invalid("Split needs at least one output");
  if (!split.empty()) {
    if (static_cast<int64_t>(split.size()) != outputs) {
      return Invalid(absl::StrCat("split ", Text(split), " has ", split.size(), " sizes for ",
                                  outputs, " outputs"));
    }
    int64_t sum = 0;
    for (int64_t s : split) {
      if (s < 0 || s > dim) return Invalid(absl::StrCat("split ", Text(split), ": bad size ", s));
      sum += s;
    }
    if (sum != dim) {
      return Invalid(absl::StrCat("split ", Text(split), " sums to ", sum, ", not the dim ", dim));
    }
    return split;
  }
  if (ceil_parts) {
    const int64_t part = (dim + outputs - 1) / outputs;
    if (part * (outputs - 1) >= dim && outputs > 1) {
      return Invalid(absl::StrCat("a dim of ", dim, " does not split into ", outputs, " parts of ",
                                  part, " (the last would be empty)"));
    }
    Dims sizes(static_cast<size_t>(outputs), part);
    sizes.back() = dim - part * (outputs - 1);
    return sizes;
  }
  if (dim % outputs != 0) {
    return Invalid(absl::StrCat("a dim of ", dim, " does not split into ", outputs,
                                " equal parts (give the split sizes)"));
  }
  return Dims(static_cast<size_t>(outputs), dim / outputs);
}

}  // namespace tunejit::onnx_import
