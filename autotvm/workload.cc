#include "autotvm/workload.h"

#include <limits>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "autotvm/python_json.h"
#include "common/status_macros.h"

namespace tunejit::autotvm {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 31;
constexpr int64_t kMaxSmallParam = 1 << 16;  // strides, padding, dilation

absl::Status ArgError(const Workload& w, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(w.task_name, ": ", what));
}

struct Tensor {
  std::vector<int64_t> shape;
  std::string dtype;
};

absl::StatusOr<Tensor> GetTensor(const Workload& w, size_t i, const char* role) {
  if (!w.args.is_array() || i >= w.args.size()) {
    return ArgError(w, absl::StrCat("missing ", role, " tensor (argument ", i, ")"));
  }
  const Json& t = w.args[i];
  if (!t.is_array() || t.size() != 3 || t[0] != "TENSOR" || !t[1].is_array() || !t[2].is_string()) {
    return ArgError(
        w, absl::StrCat("argument ", i, " (", role, ") is not [\"TENSOR\", shape, dtype]"));
  }
  Tensor out;
  out.dtype = t[2].get<std::string>();
  for (const Json& d : t[1]) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0 || d.get<int64_t>() > kMaxDim) {
      return ArgError(w, absl::StrCat(role, " shape ", t[1].dump(), " has a bad dimension"));
    }
    out.shape.push_back(d.get<int64_t>());
  }
  return out;
}

// An int or a list of ints, expanded to `want` values (2-element padding becomes
// (ph, pw, ph, pw) as TVM's get_pad_tuple does).
absl::StatusOr<std::vector<int>> GetIntTuple(const Workload& w, const Json& j, const char* role,
                                             bool allow_four, int64_t min_value) {
  std::vector<int64_t> v;
  if (j.is_number_integer()) {
    v.push_back(j.get<int64_t>());
  } else if (j.is_array()) {
    for (const Json& e : j) {
      if (!e.is_number_integer()) return ArgError(w, absl::StrCat(role, " must hold integers"));
      v.push_back(e.get<int64_t>());
    }
  } else {
    return ArgError(w, absl::StrCat(role, " must be an int or a list"));
  }
  if (!(v.size() == 1 || v.size() == 2 || (allow_four && v.size() == 4))) {
    return ArgError(w, absl::StrCat(role, " has ", v.size(), " elements"));
  }
  for (int64_t x : v) {
    if (x < min_value || x > kMaxSmallParam) {
      return ArgError(w, absl::StrCat(role, " value ", x, " is out of range"));
    }
  }
  if (v.size() == 1) v = {v[0], v[0]};
  if (allow_four && v.size() == 2) v = {v[0], v[1], v[0], v[1]};
  return std::vector<int>(v.begin(), v.end());
}

// Arguments after the tensors: strides, padding, then optional dilation and optional layout
// string(s), then out_dtype (last). Old logs (topi_nn_conv2d) lack dilation.
absl::Status ParseConvTail(const Workload& w, size_t first, Conv2dParams* p) {
  const Json& a = w.args;
  if (a.size() < first + 3) return ArgError(w, "too few arguments");
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int> s, GetIntTuple(w, a[first], "strides", false, 1));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int> pad, GetIntTuple(w, a[first + 1], "padding", true, 0));
  p->stride_h = s[0];
  p->stride_w = s[1];
  p->pad_top = pad[0];
  p->pad_left = pad[1];
  p->pad_bottom = pad[2];
  p->pad_right = pad[3];
  size_t i = first + 2;
  if (a[i].is_number_integer() || a[i].is_array()) {
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<int> d, GetIntTuple(w, a[i], "dilation", false, 1));
    p->dilation_h = d[0];
    p->dilation_w = d[1];
    ++i;
  }
  if (i + 2 == a.size() && a[i].is_string()) p->layout = a[i++].get<std::string>();
  if (i + 1 != a.size() || !a[i].is_string()) {
    return ArgError(w, "expected out_dtype string as the last argument");
  }
  p->out_dtype = a[i].get<std::string>();
  if (p->OutH() <= 0 || p->OutW() <= 0) return ArgError(w, "output size is not positive");
  return absl::OkStatus();
}

absl::Status FillPlain(const Tensor& data, const Tensor& kernel, bool depthwise, const Workload& w,
                       Conv2dParams* p) {
  if (data.shape.size() != 4 || kernel.shape.size() != 4) {
    return ArgError(w, "data and kernel must be 4-D");
  }
  p->n = data.shape[0];
  p->ci = data.shape[1];
  p->h = data.shape[2];
  p->w = data.shape[3];
  p->kh = kernel.shape[2];
  p->kw = kernel.shape[3];
  if (depthwise) {  // kernel [C, multiplier, KH, KW]
    if (kernel.shape[0] != p->ci) return ArgError(w, "depthwise kernel channels != data channels");
    p->co = kernel.shape[0] * kernel.shape[1];
    p->groups = p->ci;
  } else {
    if (kernel.shape[1] != p->ci) return ArgError(w, "kernel CI != data channels");
    p->co = kernel.shape[0];
  }
  return absl::OkStatus();
}

// The NHWC data [N, H, W, C] of tunejit's NHWC conv workloads, beside a 4-D kernel.
absl::Status FillNhwcData(const Tensor& data, const Tensor& kernel, const Workload& w,
                          Conv2dParams* p) {
  if (data.shape.size() != 4 || kernel.shape.size() != 4) {
    return ArgError(w, "data and kernel must be 4-D");
  }
  p->n = data.shape[0];
  p->h = data.shape[1];
  p->w = data.shape[2];
  p->ci = data.shape[3];
  p->layout = "NHWC";
  return absl::OkStatus();
}

// conv2d_nhwc_wgmma.cuda (tunejit's, Hopper tensor cores): data [N, H, W, C], kernel
// [CO, KH, KW, C] (OHWI: each output channel's taps K-major, as the kernel's B operand).
absl::Status FillNhwc(const Tensor& data, const Tensor& kernel, const Workload& w,
                      Conv2dParams* p) {
  TUNEJIT_RETURN_IF_ERROR(FillNhwcData(data, kernel, w, p));
  p->co = kernel.shape[0];
  p->kh = kernel.shape[1];
  p->kw = kernel.shape[2];
  if (kernel.shape[3] != p->ci) return ArgError(w, "kernel CI != data channels");
  return absl::OkStatus();
}

// depthwise_conv2d_nhwc.cuda: data [N, H, W, C], kernel [C, KH, KW, multiplier] (each channel's
// taps, then its multiplier filters: OHWI of the depthwise [C, multiplier, KH, KW]).
absl::Status FillNhwcDepthwise(const Tensor& data, const Tensor& kernel, const Workload& w,
                               Conv2dParams* p) {
  TUNEJIT_RETURN_IF_ERROR(FillNhwcData(data, kernel, w, p));
  if (kernel.shape[0] != p->ci) return ArgError(w, "depthwise kernel channels != data channels");
  p->kh = kernel.shape[1];
  p->kw = kernel.shape[2];
  p->co = kernel.shape[0] * kernel.shape[3];
  p->groups = p->ci;
  return absl::OkStatus();
}

// NCHW4c: data [N, C/4, H, W, 4], kernel [CO/4, CI/4, KH, KW, 4, 4].
absl::Status FillPacked(const Tensor& data, const Tensor& kernel, const Workload& w,
                        Conv2dParams* p) {
  if (data.shape.size() != 5 || kernel.shape.size() != 6) {
    return ArgError(w, "packed NCHW4c tensors must be 5-D data and 6-D kernel");
  }
  p->n = data.shape[0];
  p->ci = data.shape[1] * data.shape[4];
  p->h = data.shape[2];
  p->w = data.shape[3];
  p->co = kernel.shape[0] * kernel.shape[4];
  p->kh = kernel.shape[2];
  p->kw = kernel.shape[3];
  if (kernel.shape[1] * kernel.shape[5] != p->ci) return ArgError(w, "kernel CI != data channels");
  return absl::OkStatus();
}

// (alpha, alpha, CI, CO); the tile size m follows H (section 5.2), so KH = alpha - m + 1.
absl::Status FillPretransformed(const Tensor& data, const Tensor& kernel, const Workload& w,
                                Conv2dParams* p) {
  if (data.shape.size() != 4 || kernel.shape.size() != 4 || kernel.shape[0] != kernel.shape[1]) {
    return ArgError(w, "expected data [N,CI,H,W] and kernel [alpha,alpha,CI,CO]");
  }
  p->n = data.shape[0];
  p->ci = data.shape[1];
  p->h = data.shape[2];
  p->w = data.shape[3];
  int64_t m = p->h % 8 == 0 ? 4 : 2;
  p->kh = p->kw = kernel.shape[0] - m + 1;
  p->co = kernel.shape[3];
  if (p->kh <= 0 || kernel.shape[2] != p->ci) return ArgError(w, "kernel does not match data");
  return absl::OkStatus();
}

}  // namespace

std::string_view CanonicalTaskName(std::string_view task_name) {
  static constexpr std::pair<std::string_view, std::string_view> kRenamed[] = {
      {"dense_small_batch.gpu", "dense_small_batch.cuda"},
      {"dense_large_batch.gpu", "dense_large_batch.cuda"},
  };
  for (const auto& [later, original] : kRenamed) {
    if (task_name == later) return original;
  }
  return task_name;
}

std::string Workload::Key() const {
  std::string out;
  AppendPythonJson(Json(task_name), &out);
  out.append(", ");
  AppendPythonJson(args, &out);
  return out;
}

int64_t Conv2dParams::OutH() const {
  int64_t khd = (kh - 1) * dilation_h + 1;
  int64_t span = h + pad_top + pad_bottom - khd;
  return span < 0 ? 0 : span / stride_h + 1;
}

int64_t Conv2dParams::OutW() const {
  int64_t kwd = (kw - 1) * dilation_w + 1;
  int64_t span = w + pad_left + pad_right - kwd;
  return span < 0 ? 0 : span / stride_w + 1;
}

double Conv2dParams::Flops() const {
  return 2.0 * n * co * OutH() * OutW() * (ci / groups) * kh * kw;
}

double DenseParams::Flops() const { return 2.0 * m * n * k; }
double BatchMatmulParams::Flops() const { return 2.0 * batch() * m * n * k; }

absl::StatusOr<Conv2dParams> ParseConv2dWorkload(const Workload& workload) {
  const std::string& task = workload.task_name;
  if (!workload.args.is_array()) return ArgError(workload, "args is not a list");
  Conv2dParams p;
  TUNEJIT_ASSIGN_OR_RETURN(Tensor data, GetTensor(workload, 0, "data"));
  TUNEJIT_ASSIGN_OR_RETURN(Tensor kernel, GetTensor(workload, 1, "kernel"));
  p.data_dtype = data.dtype;
  p.kernel_dtype = kernel.dtype;
  if (task == "conv2d_NCHWc_int8.cuda" && data.shape.size() == 5) {
    TUNEJIT_RETURN_IF_ERROR(FillPacked(data, kernel, workload, &p));
  } else if (absl::StrContains(task, "without_weight_transform")) {
    TUNEJIT_RETURN_IF_ERROR(FillPretransformed(data, kernel, workload, &p));
  } else if (task == kConv2dNhwcWgmma || task == kConv2dNhwcWgmmaPool) {
    TUNEJIT_RETURN_IF_ERROR(FillNhwc(data, kernel, workload, &p));
  } else if (task == kDepthwiseConv2dNhwc) {
    TUNEJIT_RETURN_IF_ERROR(FillNhwcDepthwise(data, kernel, workload, &p));
  } else if (task == "conv2d_nchw.cuda" || task == "conv2d_nchw_winograd.cuda" ||
             task == "conv2d_NCHWc_int8.cuda" || task == "topi_nn_conv2d" ||
             task == "depthwise_conv2d_nchw.cuda" || task == "topi_nn_depthwise_conv2d_nchw" ||
             task == kConv2dNchwStemMma || task == kConv2dNchwPatchifyWgmma) {
    TUNEJIT_RETURN_IF_ERROR(
        FillPlain(data, kernel, absl::StrContains(task, "depthwise"), workload, &p));
    p.nhwc_out = task == kConv2dNchwStemMma || task == kConv2dNchwPatchifyWgmma;
  } else {
    return ArgError(workload, "not a supported conv2d task");
  }
  TUNEJIT_RETURN_IF_ERROR(ParseConvTail(workload, 2, &p));
  if (task == "conv2d_NCHWc_int8.cuda") {
    if (p.layout != "NCHW" && p.layout != "NCHW4c") return ArgError(workload, "bad layout");
    if ((p.layout == "NCHW4c") != (data.shape.size() == 5)) {
      return ArgError(workload, "layout does not match the tensor ranks");
    }
    if (p.ci % 4 != 0 || p.co % 4 != 0)
      return ArgError(workload, "channels must be multiples of 4");
  }
  return p;
}

absl::StatusOr<DenseParams> ParseDenseWorkload(const Workload& workload) {
  const std::string& task = workload.task_name;
  if (task != "dense_small_batch.cuda" && task != "dense_large_batch.cuda" &&
      task != "dense_wgmma.cuda") {
    return ArgError(workload, "not a supported dense task");
  }
  if (!workload.args.is_array() || workload.args.size() != 4) {
    return ArgError(workload, "expected [data, weight, bias, out_dtype]");
  }
  TUNEJIT_ASSIGN_OR_RETURN(Tensor data, GetTensor(workload, 0, "data"));
  TUNEJIT_ASSIGN_OR_RETURN(Tensor weight, GetTensor(workload, 1, "weight"));
  if (data.shape.size() != 2 || weight.shape.size() != 2 || data.shape[1] != weight.shape[1]) {
    return ArgError(workload, "expected data [M,K] and weight [N,K]");
  }
  DenseParams p;
  p.m = data.shape[0];
  p.k = data.shape[1];
  p.n = weight.shape[0];
  p.data_dtype = data.dtype;
  if (!workload.args[2].is_null()) {
    TUNEJIT_ASSIGN_OR_RETURN(Tensor bias, GetTensor(workload, 2, "bias"));
    if (bias.shape.size() != 1 || bias.shape[0] != p.n) return ArgError(workload, "bad bias");
    p.has_bias = true;
  }
  if (!workload.args[3].is_string()) return ArgError(workload, "out_dtype must be a string");
  p.out_dtype = workload.args[3].get<std::string>();
  return p;
}

absl::StatusOr<BatchMatmulParams> ParseBatchMatmulWorkload(const Workload& workload) {
  if (workload.task_name != kBatchMatmul) return ArgError(workload, "not batch_matmul.cuda");
  if (!workload.args.is_array() || workload.args.size() != 2) {
    return ArgError(workload, "expected [x, y]");
  }
  TUNEJIT_ASSIGN_OR_RETURN(Tensor x, GetTensor(workload, 0, "x"));
  TUNEJIT_ASSIGN_OR_RETURN(Tensor y, GetTensor(workload, 1, "y"));
  if (x.shape.size() != 3 || y.shape.size() != 3 || x.shape[2] != y.shape[2]) {
    return ArgError(workload, "expected x [B, M, K] and y [B, N, K]");
  }
  if (x.shape[0] != y.shape[0] && x.shape[0] != 1 && y.shape[0] != 1) {
    return ArgError(workload, absl::StrCat("batch dims ", x.shape[0], " and ", y.shape[0],
                                           " neither equal nor broadcast"));
  }
  if (x.dtype != y.dtype) {
    return ArgError(workload, absl::StrCat("x is ", x.dtype, " but y is ", y.dtype));
  }
  BatchMatmulParams p;
  p.x_batch = x.shape[0];
  p.y_batch = y.shape[0];
  p.m = x.shape[1];
  p.k = x.shape[2];
  p.n = y.shape[1];
  p.dtype = x.dtype;
  return p;
}

namespace {

Json TensorJson(std::vector<int64_t> shape, const std::string& dtype) {
  return Json::array({"TENSOR", Json(shape), dtype});
}

}  // namespace

Workload MakeConv2dWorkload(const std::string& task_name, const Conv2dParams& p) {
  Workload w;
  w.task_name = task_name;
  Json data = TensorJson({p.n, p.ci, p.h, p.w}, p.data_dtype);
  Json kernel = TensorJson({p.co, p.ci / p.groups, p.kh, p.kw}, p.kernel_dtype);
  if (task_name == kDepthwiseConv2dNhwc) {
    data = TensorJson({p.n, p.h, p.w, p.ci}, p.data_dtype);
    kernel = TensorJson({p.ci, p.kh, p.kw, p.co / p.ci}, p.kernel_dtype);
  } else if (absl::StrContains(task_name, "depthwise")) {
    kernel = TensorJson({p.ci, p.co / p.ci, p.kh, p.kw}, p.kernel_dtype);
  } else if (absl::StrContains(task_name, "without_weight_transform")) {
    int64_t alpha = (p.h % 8 == 0 ? 4 : 2) + p.kh - 1;
    kernel = TensorJson({alpha, alpha, p.ci, p.co}, p.kernel_dtype);
  } else if (task_name == kConv2dNhwcWgmma || task_name == kConv2dNhwcWgmmaPool) {
    data = TensorJson({p.n, p.h, p.w, p.ci}, p.data_dtype);
    kernel = TensorJson({p.co, p.kh, p.kw, p.ci}, p.kernel_dtype);
  } else if (task_name == "conv2d_NCHWc_int8.cuda" && p.layout == "NCHW4c") {
    data = TensorJson({p.n, p.ci / 4, p.h, p.w, 4}, p.data_dtype);
    kernel = TensorJson({p.co / 4, p.ci / 4, p.kh, p.kw, 4, 4}, p.kernel_dtype);
  }
  w.args = Json::array({data, kernel, Json::array({p.stride_h, p.stride_w}),
                        Json::array({p.pad_top, p.pad_left, p.pad_bottom, p.pad_right}),
                        Json::array({p.dilation_h, p.dilation_w})});
  if (task_name == "conv2d_NCHWc_int8.cuda") w.args.push_back(p.layout);
  w.args.push_back(p.out_dtype);
  return w;
}

Workload MakeDenseWorkload(const std::string& task_name, const DenseParams& p) {
  Workload w;
  w.task_name = task_name;
  w.args = Json::array({TensorJson({p.m, p.k}, p.data_dtype), TensorJson({p.n, p.k}, p.data_dtype),
                        p.has_bias ? TensorJson({p.n}, p.out_dtype) : Json(nullptr), p.out_dtype});
  return w;
}

Workload MakeBatchMatmulWorkload(const BatchMatmulParams& p) {
  Workload w;
  w.task_name = kBatchMatmul;
  w.args = Json::array(
      {TensorJson({p.x_batch, p.m, p.k}, p.dtype), TensorJson({p.y_batch, p.n, p.k}, p.dtype)});
  return w;
}

}  // namespace tunejit::autotvm
