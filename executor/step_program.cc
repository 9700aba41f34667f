#include "executor/step_program.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "executor/attention_fusion.h"
#include "executor/memory_plan.h"
#include "executor/weight_values.h"
#include "graph/quantize.h"

namespace tunejit {
namespace {

// How a step reads or writes a value: element type and, for 4-D activations, layout.
struct Form {
  DType dtype = DType::kF32;
  bool nhwc = false;
  friend bool operator==(const Form&, const Form&) = default;
};
constexpr Form kFloatNchw{DType::kF32, false};

Form FormOf(const StepTensor& t) { return {t.dtype, t.nhwc}; }

class Lowerer {
 public:
  Lowerer(const Graph& graph, NumericMode mode, const WeightSet* weights)
      : g_(graph), weights_(weights) {
    p_.mode = mode;
  }

  absl::StatusOr<StepProgram> Run() {
    TUNEJIT_RETURN_IF_ERROR(g_.Validate());
    TUNEJIT_ASSIGN_OR_RETURN(p_.tasks, ExtractTasks(g_, p_.mode));
    const size_t n = g_.tensors().size();
    consumers_.assign(n, {});
    p_.value_of.assign(n, -1);
    slot_of_.assign(n, -1);
    task_of_node_.assign(g_.nodes().size(), -1);
    consumed_.assign(g_.nodes().size(), false);
    for (size_t t = 0; t < p_.tasks.size(); ++t) task_of_node_[p_.tasks[t].node] = t;
    for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
      for (int in : g_.nodes()[i].inputs) consumers_[in].push_back(i);
    }
    ComputeInt8Tensors();
    if (p_.mode == NumericMode::kFp16TensorCores) FindAttention();
    for (int id : g_.TensorsOfKind(TensorKind::kInput)) {
      const TensorDesc& d = g_.tensor(id);
      p_.value_of[id] = AddTensor({d.name, d.shape, d.dtype, id, -1, true, -1});
    }
    for (int i = 0; i < static_cast<int>(g_.nodes().size()); ++i) {
      if (!consumed_[i]) TUNEJIT_RETURN_IF_ERROR(LowerNode(i));
    }
    TUNEJIT_RETURN_IF_ERROR(OutputsAsFloatNchw());
    return std::move(p_);
  }

 private:
  int AddTensor(StepTensor t) {
    p_.tensors.push_back(std::move(t));
    return static_cast<int>(p_.tensors.size()) - 1;
  }

  int Slot(int graph_tensor) {
    if (slot_of_[graph_tensor] < 0) {
      slot_of_[graph_tensor] = static_cast<int>(p_.scale_sources.size());
      p_.scale_sources.push_back(graph_tensor);
    }
    return slot_of_[graph_tensor];
  }

  bool IsInt8Conv(int node) const {
    const int task = task_of_node_[node];
    return task >= 0 && p_.tasks[task].int8();
  }

  // An add that reads int8 operands in an int8 mode (LowerInt8Add): two 4-D activations of one
  // shape (no broadcast), so the sum is element-wise in either layout.
  bool IsInt8Add(int node) const {
    const Node& n = g_.nodes()[node];
    if (!IsInt8(p_.mode) || n.op != OpKind::kAdd || n.inputs.size() != 2) return false;
    const TensorDesc& a = g_.tensor(n.inputs[0]);
    const TensorDesc& b = g_.tensor(n.inputs[1]);
    return a.kind != TensorKind::kWeight && b.kind != TensorKind::kWeight && a.shape.size() == 4 &&
           a.shape == b.shape && a.shape == g_.tensor(n.output).shape;
  }

  // want_int8_[t]: every consumer of activation t takes int8 (an int8 conv's data, an int8
  // residual add, or a max pool whose own output is wanted in int8), so t's producer may write
  // int8 directly.
  void ComputeInt8Tensors() {
    want_int8_.assign(g_.tensors().size(), false);
    if (!IsInt8(p_.mode)) return;
    for (int i = static_cast<int>(g_.nodes().size()) - 1; i >= 0; --i) {
      const int t = g_.nodes()[i].output;
      if (g_.tensor(t).kind != TensorKind::kActivation || consumers_[t].empty()) continue;
      want_int8_[t] = std::all_of(consumers_[t].begin(), consumers_[t].end(), [&](int c) {
        const Node& user = g_.nodes()[c];
        if (user.op == OpKind::kConv2d) return IsInt8Conv(c) && user.inputs[0] == t;
        if (IsInt8Add(c)) return true;
        return user.op == OpKind::kMaxPool2d && want_int8_[user.output];
      });
    }
  }

  // The node consuming activation `t` when it is its only consumer and of kind `op` (data input):
  // lowering's rule, so a task's absorbed pool is the node fused here.
  int FuseNext(int t, OpKind op) const { return SoleReader(g_, t, op); }

  absl::Status LowerNode(int i) {
    const Node& node = g_.nodes()[i];
    if (auto it = attention_at_.find(i); it != attention_at_.end()) {
      return LowerAttention(i, chains_[it->second]);
    }
    switch (node.op) {
      case OpKind::kConv2d:
      case OpKind::kDense:
        return LowerMatmul(i);
      case OpKind::kBiasAdd:
        return LowerBiasAdd(i);
      case OpKind::kMaxPool2d:
        return LowerSimple(i, StepKind::kMaxPool2d);
      case OpKind::kSoftmax:
        return LowerTensorOp(i, StepKind::kSoftmax);
      case OpKind::kUnary:
        return LowerTensorOp(i, StepKind::kUnary);
      case OpKind::kBinary:
        return LowerBinary(i);
      case OpKind::kConcat:
        return LowerTensorOp(i, StepKind::kConcat);
      case OpKind::kTranspose:
        if (TransposeIsLayoutView(i)) return LowerTransposeView(i);
        return LowerTensorOp(i, StepKind::kTranspose);
      case OpKind::kSlice:
        return LowerTensorOp(i, StepKind::kSlice);
      case OpKind::kReduceMean:
        return LowerTensorOp(i, StepKind::kReduceMean);
      case OpKind::kLayerNorm:
        return LowerTensorOp(i, StepKind::kLayerNorm);
      case OpKind::kMatMul:
        return LowerTensorOp(i, StepKind::kMatMul);
      case OpKind::kGather:
        return LowerTensorOp(i, StepKind::kGather);
      case OpKind::kAvgPool2d:
        return LowerSimple(i, StepKind::kAvgPool2d);
      case OpKind::kGlobalAvgPool2d:
        return LowerSimple(i, StepKind::kGlobalAvgPool2d);
      case OpKind::kClip:
      case OpKind::kRelu:  // not fusable into a producer: clip to [0, inf)
        return LowerSimple(i, StepKind::kClip);
      case OpKind::kAdd:
        return LowerAdd(i);
      case OpKind::kFlatten:
      case OpKind::kReshape:
        return LowerFlatten(i);
      case OpKind::kQuantize:
      case OpKind::kDequantize:
      case OpKind::kRequantize:
        break;
    }
    return absl::UnimplementedError(
        absl::StrCat(NodeLabel(i, node), ": the executor runs ", std::string(OpKindName(node.op)),
                     " only as its own quantization (--precision int8)"));
  }

  // The step tensor holding graph tensor `t` for node `user` in `form`. An int8 use of a float32
  // value gets a quantize step (in the value's layout, then a convert step to the other one), any
  // other form a convert step; each is made once per tensor and form, shared by every consumer
  // wanting it. An int8 tensor in another layout keeps its scale slot.
  absl::StatusOr<int> InputValue(int t, Form form, int user) {
    const int v = p_.value_of[t];
    if (v < 0) {
      return absl::InternalError(absl::StrCat(NodeLabel(user, g_.nodes()[user]), ": input '",
                                              g_.tensor(t).name, "' has no value"));
    }
    if (FormOf(p_.tensors[v]) == form) return v;
    const bool to_int8 = form.dtype == DType::kI8;
    if (p_.tensors[v].dtype == DType::kI8 && !to_int8) {
      return absl::InternalError(absl::StrCat(NodeLabel(user, g_.nodes()[user]),
                                              ": float op reads int8 tensor '", g_.tensor(t).name,
                                              "'"));
    }
    const auto key = std::make_tuple(t, form.dtype, form.nhwc);
    if (auto it = converted_.find(key); it != converted_.end()) return it->second;
    int source = v;
    if (to_int8 && p_.tensors[v].dtype != DType::kI8 && p_.tensors[v].nhwc != form.nhwc) {
      TUNEJIT_ASSIGN_OR_RETURN(source, InputValue(t, Form{DType::kI8, p_.tensors[v].nhwc}, user));
    }
    const bool quantize = to_int8 && p_.tensors[source].dtype != DType::kI8;
    const int slot = !to_int8 ? -1 : quantize ? Slot(t) : p_.tensors[source].scale_slot;
    std::string suffix = to_int8 ? ".int8" : form.dtype == DType::kF16 ? ".f16" : ".f32";
    if (form.nhwc) suffix += ".nhwc";
    StepTensor out{g_.tensor(t).name + suffix, p_.tensors[v].shape, form.dtype, t, -1, false, slot};
    out.nhwc = form.nhwc;
    out.flattened_hwc = p_.tensors[v].flattened_hwc;  // a convert keeps the element order
    Step s;
    s.kind = quantize ? StepKind::kQuantize : StepKind::kConvert;
    s.name = g_.nodes()[user].name + (quantize ? ".quantize" : ".convert");
    s.node = user;
    s.int8 = to_int8;
    s.input = source;
    s.output = AddTensor(std::move(out));
    converted_[key] = s.output;
    p_.steps.push_back(std::move(s));
    return converted_[key];
  }
  absl::StatusOr<int> InputValue(int t, bool int8, int user) {
    return InputValue(t, int8 ? Form{DType::kI8, false} : kFloatNchw, user);
  }

  // Graph outputs are read back as float32 NCHW (Executor::Output): one in another form (an fp16
  // layer's) gets a convert step, whose output becomes the graph tensor's value.
  absl::Status OutputsAsFloatNchw() {
    for (int id : g_.TensorsOfKind(TensorKind::kOutput)) {
      const int v = p_.value_of[id];
      if (v < 0 || FormOf(p_.tensors[v]) == kFloatNchw) continue;
      const int producer = ProducerNode(id);
      TUNEJIT_ASSIGN_OR_RETURN(const int out, InputValue(id, kFloatNchw, producer));
      p_.tensors[out].external = true;
      p_.value_of[id] = out;
    }
    return absl::OkStatus();
  }

  int ProducerNode(int t) const {
    const int p = ProducerOf(t);
    return p < 0 ? 0 : p;
  }

  // The node producing tensor `t`, or -1 (a weight or a graph input).
  int ProducerOf(int t) const {
    for (int i = static_cast<int>(g_.nodes().size()) - 1; i >= 0; --i) {
      if (g_.nodes()[i].output == t) return i;
    }
    return -1;
  }

  int AddOutput(int graph_tensor, DType dtype, int scale_slot) {
    const TensorDesc& d = g_.tensor(graph_tensor);
    const int id = AddTensor(
        {d.name, d.shape, dtype, graph_tensor, -1, d.kind == TensorKind::kOutput, scale_slot});
    p_.value_of[graph_tensor] = id;
    return id;
  }

  // A conv whose output (graph tensor `end`) only int8 convs read requantizes it in its epilogue:
  // an int8 output with its scale slot. False (nothing changed) otherwise.
  bool RequantizeIfWanted(Step& s, int end, std::vector<std::string>& fused, DType& out_dtype,
                          int& slot) {
    if (s.kind != StepKind::kConv2d || !want_int8_[end]) return false;
    s.epilogue.output = Epilogue::Output::kInt8Requantize;
    out_dtype = DType::kI8;
    slot = Slot(end);
    fused.push_back("requantize");
    return true;
  }

  absl::Status LowerMatmul(int i) {
    const Node& node = g_.nodes()[i];
    Step s;
    s.kind = node.op == OpKind::kConv2d ? StepKind::kConv2d : StepKind::kDense;
    s.name = node.name;
    s.node = i;
    s.task = task_of_node_[i];
    s.int8 = p_.tasks[s.task].int8();
    s.weight = node.inputs[1];
    std::vector<std::string> fused;
    int end = node.output;
    if (int b = FuseNext(end, OpKind::kBiasAdd); b >= 0) {
      s.bias = g_.nodes()[b].inputs[1];
      s.epilogue.bias = true;
      end = g_.nodes()[b].output;
      fused.push_back("bias");
      s.fused_nodes.push_back(b);
    }
    if (int r = FuseNext(end, OpKind::kRelu); r >= 0) {
      s.epilogue.relu = true;
      end = g_.nodes()[r].output;
      fused.push_back("relu");
      s.fused_nodes.push_back(r);
    }
    const NodeTask& task = p_.tasks[s.task];
    if (task.pool >= 0) {  // conv2d_nhwc_wgmma_pool.cuda: the max pool is this step's too
      if (FuseNext(end, OpKind::kMaxPool2d) != task.pool) {
        return absl::InternalError(absl::StrCat(NodeLabel(i, node), ": the pool its task absorbs, ",
                                                g_.nodes()[task.pool].name,
                                                ", does not read the fused value"));
      }
      end = g_.nodes()[task.pool].output;
      fused.push_back("max_pool");
      s.fused_nodes.push_back(task.pool);
    }
    if (task.half() && !s.epilogue.relu && task.pool < 0) FuseResidualAdd(s, end, fused);
    if (s.int8 && !s.epilogue.relu && task.pool < 0) FuseInt8ResidualAdd(s, end, fused);
    FuseActivation(s, end, fused);
    for (int f : s.fused_nodes) consumed_[f] = true;
    if (task.half()) {
      // Tensor cores: float16 in (NHWC for a conv); the workload's out_dtype picks the output.
      const bool nhwc = task.forms.nhwc;
      // The stem template reads the float32 NCHW input itself.
      const Form in_form = task.forms.float_nchw_data ? kFloatNchw : Form{DType::kF16, nhwc};
      TUNEJIT_ASSIGN_OR_RETURN(s.input, InputValue(node.inputs[0], in_form, i));
      DType out_dtype = task.half_output ? DType::kF16 : DType::kF32;
      int slot = -1;
      RequantizeIfWanted(s, end, fused, out_dtype, slot);  // int8 on the tensor cores' stem
      s.fused = absl::StrJoin(fused, "+");
      s.output = AddOutput(end, out_dtype, slot);
      p_.tensors[s.output].nhwc = nhwc;
      p_.steps.push_back(std::move(s));
      return absl::OkStatus();
    }
    // int8 on the tensor-core template reads and writes NHWC.
    const Form in_form = s.int8 ? Form{DType::kI8, task.forms.nhwc} : kFloatNchw;
    TUNEJIT_ASSIGN_OR_RETURN(s.input, InputValue(node.inputs[0], in_form, i));
    DType out_dtype = DType::kF32;
    int slot = -1;
    if (!RequantizeIfWanted(s, end, fused, out_dtype, slot) && s.int8) {
      s.epilogue.output = Epilogue::Output::kFloat32;
      fused.push_back("dequantize");
    }
    s.fused = absl::StrJoin(fused, "+");
    s.output = AddOutput(end, out_dtype, slot);
    p_.tensors[s.output].nhwc = task.forms.nhwc;
    p_.steps.push_back(std::move(s));
    return absl::OkStatus();
  }

  // ResNet's skip connection: the add that is the conv's (bias's) only reader, with its relu,
  // becomes the conv's epilogue (conv2d_nhwc_wgmma.cuda reads the other operand in it) when that
  // operand is already a float16 NHWC value of the output's shape (an earlier step wrote it: the
  // block's downsample conv runs after its last conv, so there the downsample takes the add) and
  // the conv writes float16. A transformer's residual stream likewise after a dense layer
  // (dense_wgmma.cuda), reached through the reshapes back from rows when the dense layer ran on
  // the rows of a larger activation, the other operand float16 in row-major order. Moves `end`
  // past what it fuses.
  void FuseResidualAdd(Step& s, int& end, std::vector<std::string>& fused) const {
    const NodeTask& task = p_.tasks[s.task];
    const bool dense = s.kind == StepKind::kDense;
    if (!task.half_output || (!dense && !task.forms.nhwc) ||
        !EveryImplementationIs(task, dense ? autotvm::kDenseWgmma : autotvm::kConv2dNhwcWgmma)) {
      return;
    }
    // The add is the value's only reader, as either operand (for a dense layer, maybe after
    // reshapes, which change no byte's place).
    int value = end;
    int a = OnlyReader(g_, value);
    std::vector<int> reshapes;
    while (dense && a >= 0 && g_.nodes()[a].op == OpKind::kReshape) {
      reshapes.push_back(a);
      value = g_.nodes()[a].output;
      a = OnlyReader(g_, value);
    }
    if (a < 0 || g_.nodes()[a].op != OpKind::kAdd) return;
    const Node& add = g_.nodes()[a];
    const int other = add.inputs[0] == value ? add.inputs[1] : add.inputs[0];
    const int v = other == value ? -1 : p_.value_of[other];
    if (v < 0 || p_.tensors[v].dtype != DType::kF16 || p_.tensors[v].nhwc != !dense ||
        !p_.tensors[v].flattened_hwc.empty() || g_.tensor(other).shape != g_.tensor(value).shape) {
      return;
    }
    s.fused_nodes.insert(s.fused_nodes.end(), reshapes.begin(), reshapes.end());
    TakeResidualAdd(s, a, v, end, fused);
  }

  // Whether every template that may implement `task` is `task_name` (and there is one).
  static bool EveryImplementationIs(const NodeTask& task, absl::string_view task_name) {
    return !task.implementations.empty() &&
           std::all_of(task.implementations.begin(), task.implementations.end(),
                       [&](const autotvm::Implementation& impl) {
                         return impl.workload.task_name == task_name;
                       });
  }

  // The relu reading add node `a`'s sum alone, or -1.
  int ReluAfter(int a) const { return FuseNext(g_.nodes()[a].output, OpKind::kRelu); }

  // Add node `a` (and the relu after it) into conv / dense step `s`'s epilogue, its other operand
  // step tensor `residual`; `end` moves to the last fused value.
  void TakeResidualAdd(Step& s, int a, int residual, int& end,
                       std::vector<std::string>& fused) const {
    s.residual = residual;
    s.epilogue.residual = true;
    s.fused_nodes.push_back(a);
    fused.push_back("residual_add");
    end = g_.nodes()[a].output;
    if (const int r = ReluAfter(a); r >= 0) {
      s.epilogue.relu = true;
      s.fused_nodes.push_back(r);
      fused.push_back("relu");
      end = g_.nodes()[r].output;
    }
  }

  // The int8 modes' skip connection on the tensor cores: an int8 add (LowerInt8Add) that is the
  // conv's only reader, whose other operand an earlier step wrote as int8 NHWC of the output's
  // shape, and whose sum (after its relu) only int8 readers take, becomes the conv's epilogue
  // (conv2d_nhwc_wgmma.cuda requantizes its value to its own scale slot as before, adds the
  // residual as the int8 add does, then requantizes to the sum's slot). Moves `end` past what it
  // fuses; the caller's RequantizeIfWanted gives the step the sum's int8 output.
  void FuseInt8ResidualAdd(Step& s, int& end, std::vector<std::string>& fused) {
    const NodeTask& task = p_.tasks[s.task];
    if (s.kind != StepKind::kConv2d || !task.forms.nhwc ||
        !EveryImplementationIs(task, autotvm::kConv2dNhwcWgmma)) {
      return;
    }
    const int a = OnlyReader(g_, end);
    if (a < 0 || !IsInt8Add(a) || !want_int8_[end]) return;
    const Node& add = g_.nodes()[a];
    const int other = add.inputs[0] == end ? add.inputs[1] : add.inputs[0];
    const int v = other == end ? -1 : p_.value_of[other];
    if (v < 0 || p_.tensors[v].dtype != DType::kI8 || !p_.tensors[v].nhwc) return;
    const int r = ReluAfter(a);
    // A float32 sum (the last block's, before the pool) stays a step of its own.
    if (!want_int8_[r >= 0 ? g_.nodes()[r].output : add.output]) return;
    s.pre_residual_slot = Slot(end);
    TakeResidualAdd(s, a, v, end, fused);
  }

  // The activation after the value so far (conv / dense, bias, relu, residual add): a clip, a
  // hard_swish, silu or gelu unary, x * sigmoid(x), or PyTorch's five-op exact GELU, read by
  // nothing else, becomes the epilogue's Epilogue::activation when every template implementing
  // the node takes one (OpTemplate::takes_activation: the fp16 tensor-core templates, unpooled)
  // and the output is not requantized to int8. The templates compute it as the separate step
  // would, so fusing changes no bit. Moves `end` past what it fuses.
  void FuseActivation(Step& s, int& end, std::vector<std::string>& fused) const {
    const NodeTask& task = p_.tasks[s.task];
    const auto takes_activation = [](const autotvm::Implementation& impl) {
      const OpTemplate* op = FindOpTemplate(impl.workload.task_name);
      return op != nullptr && op->takes_activation();
    };
    if (!task.half() || task.pool >= 0 || task.implementations.empty() ||
        !std::all_of(task.implementations.begin(), task.implementations.end(), takes_activation)) {
      return;
    }
    std::vector<int> nodes;
    const Epilogue act = ActivationAfter(end, &nodes);
    if (nodes.empty() || want_int8_[g_.nodes()[nodes.back()].output]) return;
    s.epilogue.activation = act.activation;
    s.epilogue.clip_lo = act.clip_lo;
    s.epilogue.clip_hi = act.clip_hi;
    s.fused_nodes.insert(s.fused_nodes.end(), nodes.begin(), nodes.end());
    fused.push_back(std::string(ActivationName(act.activation)));
    end = g_.nodes()[nodes.back()].output;
  }

  // The activation an epilogue can take that reads value `t` and nothing else does (its
  // activation and clip bounds set), with the nodes computing it in `nodes`, its result the last
  // one's output: a clip with ordered bounds, a hard_swish, silu or gelu unary as `t`'s only
  // reader; silu spelled x * sigmoid(x) (ONNX's, EfficientNet's): `t` read by exactly a sigmoid
  // and a mul of `t` and the sigmoid (either order), the sigmoid's value by the mul alone; or
  // the exact GELU as PyTorch exports it (GeluChain: ConvNeXt's and the transformers' MLPs), `t`
  // read by its division and its multiplication alone. A reshape between (a Linear layer on
  // [..., K] rows, imported as a dense on [rows, K] and a reshape back) is looked through: the
  // activation is element-wise, so the step's output, shaped as the activation's, holds the same
  // bytes. `nodes` stays empty when there is none.
  Epilogue ActivationAfter(int t, std::vector<int>* nodes) const {
    Epilogue e;
    if (const int r = OnlyReader(g_, t); r >= 0) {
      const Node& n = g_.nodes()[r];
      if (n.inputs[0] != t) return e;
      if (n.op == OpKind::kReshape && g_.tensor(n.output).kind == TensorKind::kActivation) {
        std::vector<int> after;
        e = ActivationAfter(n.output, &after);
        if (!after.empty()) {
          nodes->push_back(r);
          nodes->insert(nodes->end(), after.begin(), after.end());
        }
        return e;
      }
      if (n.op == OpKind::kClip && n.attrs.clip_min <= n.attrs.clip_max) {
        e.activation = Epilogue::Activation::kClip;
        e.clip_lo = n.attrs.clip_min;
        e.clip_hi = n.attrs.clip_max;
      } else if (n.op == OpKind::kUnary && n.attrs.unary == UnaryFn::kHardSwish) {
        e.activation = Epilogue::Activation::kHardSwish;
      } else if (n.op == OpKind::kUnary && n.attrs.unary == UnaryFn::kSilu) {
        e.activation = Epilogue::Activation::kSilu;
      } else if (n.op == OpKind::kUnary && n.attrs.unary == UnaryFn::kGelu) {
        e.activation = Epilogue::Activation::kGelu;
      } else {
        return e;
      }
      nodes->push_back(r);
      return e;
    }
    if (const std::vector<int> silu = SigmoidMulReaders(t); !silu.empty()) {
      e.activation = Epilogue::Activation::kSilu;
      *nodes = silu;
    } else if (const std::vector<int> gelu = GeluReaders(t); !gelu.empty()) {
      e.activation = Epilogue::Activation::kGelu;
      *nodes = gelu;
    } else if (const std::vector<int> gelu_tanh = GeluTanhReaders(t); !gelu_tanh.empty()) {
      e.activation = Epilogue::Activation::kGeluTanh;
      *nodes = gelu_tanh;
    }
    return e;
  }

  // The tanh GELU as transformers' gelu_new exports it (GPT-2's MLP), on activation `t`:
  //   half = t * 0.5, cube = t ^ 3, c = cube * 0.044715, inner = t + c, u = inner * sqrt(2 / pi),
  //   th = tanh(u), one = th + 1, out = half * one,
  // `t` read by half, cube and inner alone, every other value by the next node alone. The nodes,
  // out last, or empty.
  std::vector<int> GeluTanhReaders(int t) const {
    if (g_.tensor(t).kind != TensorKind::kActivation || consumers_[t].size() != 3) return {};
    int half = -1, cube = -1, inner = -1;
    for (int c : consumers_[t]) {
      const Node& n = g_.nodes()[c];
      if (IsBinaryWithWeight(c, BinaryFn::kMul, t, 0.5)) {
        half = c;
      } else if (n.op == OpKind::kBinary && n.attrs.binary == BinaryFn::kPow && n.inputs[0] == t &&
                 WeightIs(n.inputs[1], 3.0)) {
        cube = c;
      } else if (IsAdd(n)) {
        inner = c;
      }
    }
    if (half < 0 || cube < 0 || inner < 0) return {};
    const int scaled = SoleConsumer(g_.nodes()[cube].output);
    if (!IsBinaryWithWeight(scaled, BinaryFn::kMul, g_.nodes()[cube].output, 0.044715)) return {};
    const Node& in = g_.nodes()[inner];
    const int c = g_.nodes()[scaled].output;
    if (!ReadsBoth(in, t, c) || SoleConsumer(c) != inner) return {};
    const int u = SoleConsumer(in.output);
    if (!IsBinaryWithWeight(u, BinaryFn::kMul, in.output, std::sqrt(2.0 / M_PI))) return {};
    const int th = SoleConsumer(g_.nodes()[u].output);
    if (th < 0 || g_.nodes()[th].op != OpKind::kUnary ||
        g_.nodes()[th].attrs.unary != UnaryFn::kTanh) {
      return {};
    }
    const int th_out = g_.nodes()[th].output;
    const int one = SoleConsumer(th_out);
    if (!IsPlusOne(one, th_out)) return {};
    const int out = SoleConsumer(g_.nodes()[one].output);
    const int h = g_.nodes()[half].output;
    if (out < 0 || SoleConsumer(h) != out ||
        !IsProductOf(g_.nodes()[out], h, g_.nodes()[one].output)) {
      return {};
    }
    return {half, cube, scaled, inner, u, th, one, out};
  }

  // The tanh GELU chain (GeluTanhReaders) on an input of node `i` when `i` is the chain's first
  // node in graph order (where it is lowered, as one step): that input in *x and the chain's other
  // nodes, else empty.
  std::vector<int> GeluTanhChainAt(int i, int* x) const {
    for (int t : g_.nodes()[i].inputs) {
      std::vector<int> chain = GeluTanhReaders(t);
      if (chain.empty() || *std::min_element(chain.begin(), chain.end()) != i) continue;
      chain.erase(std::find(chain.begin(), chain.end(), i));
      *x = t;
      return chain;
    }
    return {};
  }

  static bool IsAdd(const Node& n) {
    return n.op == OpKind::kAdd || (n.op == OpKind::kBinary && n.attrs.binary == BinaryFn::kAdd);
  }

  // Node `n` reads exactly `a` and `b` (either order).
  static bool ReadsBoth(const Node& n, int a, int b) {
    return n.inputs.size() == 2 &&
           ((n.inputs[0] == a && n.inputs[1] == b) || (n.inputs[0] == b && n.inputs[1] == a));
  }

  // A binary multiplication of `a` and `b` (either order).
  static bool IsProductOf(const Node& n, int a, int b) {
    return n.op == OpKind::kBinary && n.attrs.binary == BinaryFn::kMul && ReadsBoth(n, a, b);
  }

  // Node `n` adds 1 to `t`: a binary add of a weight of ones or a bias_add of ones.
  bool IsPlusOne(int n, int t) const {
    if (IsBinaryWithWeight(n, BinaryFn::kAdd, t, 1.0)) return true;
    return n >= 0 && g_.nodes()[n].op == OpKind::kBiasAdd && g_.nodes()[n].inputs[0] == t &&
           WeightIs(g_.nodes()[n].inputs[1], 1.0);
  }

  // {div, erf, add, mul, half} when activation `t` is read by exactly the division and the
  // multiplication of a GELU chain (GeluChain) computing gelu(t); else empty.
  std::vector<int> GeluReaders(int t) const {
    if (g_.tensor(t).kind != TensorKind::kActivation || consumers_[t].size() != 2) return {};
    for (int div : consumers_[t]) {
      if (g_.nodes()[div].inputs[0] != t) continue;
      std::vector<int> chain = GeluChain(div);
      if (chain.empty()) continue;
      const int mul = chain[2];
      if (std::find(consumers_[t].begin(), consumers_[t].end(), mul) == consumers_[t].end()) {
        continue;
      }
      chain.insert(chain.begin(), div);
      return chain;
    }
    return {};
  }

  // {sigmoid, mul} when activation `t` is read by exactly those two nodes computing t * sigmoid(t)
  // (the mul's operands in either order; the sigmoid's value read by the mul only); else empty.
  std::vector<int> SigmoidMulReaders(int t) const {
    if (g_.tensor(t).kind != TensorKind::kActivation || consumers_[t].size() != 2) return {};
    for (int k = 0; k < 2; ++k) {
      const int sig = consumers_[t][k], mul = consumers_[t][1 - k];
      const Node& s = g_.nodes()[sig];
      const Node& m = g_.nodes()[mul];
      if (s.op != OpKind::kUnary || s.attrs.unary != UnaryFn::kSigmoid || s.inputs[0] != t ||
          OnlyReader(g_, s.output) != mul || m.op != OpKind::kBinary ||
          m.attrs.binary != BinaryFn::kMul || m.inputs.size() != 2) {
        continue;
      }
      if ((m.inputs[0] == t && m.inputs[1] == s.output) ||
          (m.inputs[0] == s.output && m.inputs[1] == t)) {
        return {sig, mul};
      }
    }
    return {};
  }

  absl::Status LowerBiasAdd(int i) {
    const Node& node = g_.nodes()[i];
    if (g_.tensor(node.inputs[1]).kind != TensorKind::kWeight) {
      return absl::UnimplementedError(
          absl::StrCat(NodeLabel(i, node), ": bias_add needs its bias as a weight tensor"));
    }
    Step s;
    s.kind = StepKind::kBiasAdd;
    s.name = node.name;
    s.node = i;
    s.bias = node.inputs[1];
    s.epilogue.bias = true;
    s.fused = "bias";
    int end = node.output;
    if (int r = FuseNext(end, OpKind::kRelu); r >= 0) {
      s.epilogue.relu = true;
      consumed_[r] = true;
      s.fused_nodes.push_back(r);
      s.fused = "bias+relu";
      end = g_.nodes()[r].output;
    }
    const Form form = Fp16FormOr(node.inputs[0], kFloatNchw);
    TUNEJIT_ASSIGN_OR_RETURN(s.input, InputValue(node.inputs[0], form, i));
    s.output = AddOutput(end, form.dtype, -1);
    p_.tensors[s.output].nhwc = form.nhwc;
    p_.steps.push_back(std::move(s));
    return absl::OkStatus();
  }

  // The form of graph tensor `t`'s value when it is float16 (either layout: the element-wise
  // kernels take it as it is), else `otherwise`.
  Form Fp16FormOr(int t, Form otherwise) const {
    const int v = p_.value_of[t];
    return v >= 0 && p_.tensors[v].dtype == DType::kF16 ? FormOf(p_.tensors[v]) : otherwise;
  }

  // The residual add, with a following relu fused when it is the add's only consumer. Float16 in
  // the layout of its first float16 operand when either is (the tensor-core path's activations:
  // a float32 operand, such as a transformer's residual stream before its first block, is
  // converted once, and the stream stays float16 from there); float32 NCHW otherwise; in the int8
  // modes, int8 (LowerInt8Add).
  absl::Status LowerAdd(int i) {
    const Node& node = g_.nodes()[i];
    TUNEJIT_RETURN_IF_ERROR(RequireFloatValue(i, node.inputs[0]));
    TUNEJIT_RETURN_IF_ERROR(RequireFloatValue(i, node.inputs[1]));
    Step s;
    s.kind = StepKind::kAdd;
    s.name = node.name;
    s.node = i;
    int end = node.output;
    if (int r = FuseNext(end, OpKind::kRelu); r >= 0) {
      s.epilogue.relu = true;
      consumed_[r] = true;
      s.fused_nodes.push_back(r);
      s.fused = "relu";
      end = g_.nodes()[r].output;
    }
    if (std::optional<Form> int8 = Int8AddForm(i)) return LowerInt8Add(std::move(s), end, *int8);
    const Form form = Fp16FormOr(node.inputs[0], Fp16FormOr(node.inputs[1], kFloatNchw));
    TUNEJIT_ASSIGN_OR_RETURN(s.input, InputValue(node.inputs[0], form, i));
    TUNEJIT_ASSIGN_OR_RETURN(s.residual, InputValue(node.inputs[1], form, i));
    s.output = AddOutput(end, form.dtype, -1);
    p_.tensors[s.output].nhwc = form.nhwc;
    p_.steps.push_back(std::move(s));
    return absl::OkStatus();
  }

  // The form an int8 add (IsInt8Add) reads its operands in: int8 in the layout of its first int8
  // operand (the producers ComputeInt8Tensors asked for int8 wrote it); none when neither operand
  // is int8 (their producers could not write it: the add stays float, quantizing nothing).
  std::optional<Form> Int8AddForm(int i) const {
    if (!IsInt8Add(i)) return std::nullopt;
    for (int t : g_.nodes()[i].inputs) {
      const int v = p_.value_of[t];
      if (v >= 0 && p_.tensors[v].dtype == DType::kI8) return FormOf(p_.tensors[v]);
    }
    return std::nullopt;
  }

  // ResNet's skip add on int8 operands (AddInt8Kernel): one step, no dequantize before it and no
  // quantize after it. An operand in another form is made int8 in `form` by InputValue (quantized
  // with its own slot, or its layout converted). The sum (+relu) is requantized to the output's
  // own scale slot (the float graph tensor `end`, calibrated like any int8 tensor's) when every
  // reader takes int8; otherwise the step writes it as float32 in the operands' layout, which a
  // convert step brings to another form where a reader wants one.
  absl::Status LowerInt8Add(Step s, int end, Form form) {
    const Node& node = g_.nodes()[s.node];
    for (int t : node.inputs) {
      // The quantize kernel reads float32 only (no int8 mode writes float16 where int8 is wanted).
      if (const int v = p_.value_of[t]; v >= 0 && p_.tensors[v].dtype == DType::kF16) {
        return absl::UnimplementedError(absl::StrCat(
            NodeLabel(s.node, node), ": int8 add of float16 '", g_.tensor(t).name, "'"));
      }
    }
    s.int8 = true;
    TUNEJIT_ASSIGN_OR_RETURN(s.input, InputValue(node.inputs[0], form, s.node));
    TUNEJIT_ASSIGN_OR_RETURN(s.residual, InputValue(node.inputs[1], form, s.node));
    const bool to_int8 = want_int8_[end];
    std::vector<std::string> fused;
    if (!s.fused.empty()) fused.push_back(s.fused);
    fused.push_back(to_int8 ? "requantize" : "dequantize");
    s.fused = absl::StrJoin(fused, "+");
    s.output = AddOutput(end, to_int8 ? DType::kI8 : DType::kF32, to_int8 ? Slot(end) : -1);
    p_.tensors[s.output].nhwc = form.nhwc;
    p_.steps.push_back(std::move(s));
    return absl::OkStatus();
  }

  // The float kernels read float32 only; a graph input of another dtype has no kernel here.
  absl::Status RequireFloatValue(int node, int t) const {
    const int v = p_.value_of[t];
    const DType d = v < 0 ? DType::kF32 : p_.tensors[v].dtype;
    if (d == DType::kF32 || d == DType::kI8 || d == DType::kF16) {
      return absl::OkStatus();  // no value: InputValue says so; int8 and fp16: it converts
    }
    return absl::UnimplementedError(
        absl::StrCat(NodeLabel(node, g_.nodes()[node]), ": input '", g_.tensor(t).name, "' is ",
                     std::string(DTypeName(p_.tensors[v].dtype)), "; the executor runs float32"));
  }

  // max pool (float32 NCHW, int8 NCHW or fp16 NHWC, following its input; int8 keeps the input's
  // scale: max commutes with a positive scale and with rounding); global average pool (fp16 NHWC
  // stays so) and clip (fp16 stays so), else float32 NCHW; average pool (float32 NCHW).
  absl::Status LowerSimple(int i, StepKind kind) {
    const Node& node = g_.nodes()[i];
    TUNEJIT_RETURN_IF_ERROR(RequireFloatValue(i, node.inputs[0]));
    const int v = p_.value_of[node.inputs[0]];
    Form form = kFloatNchw;
    if (kind == StepKind::kMaxPool2d && v >= 0) {
      const Form in = FormOf(p_.tensors[v]);
      if (in.dtype == DType::kI8 || in == Form{DType::kF16, true}) form = in;
    }
    if (kind == StepKind::kGlobalAvgPool2d && v >= 0 && p_.tensors[v].nhwc) {
      form = Fp16FormOr(node.inputs[0], form);  // [N, C, 1, 1]: the same bytes in either layout
    }
    if (kind == StepKind::kClip) form = Fp16FormOr(node.inputs[0], form);
    Step s;
    s.kind = kind;
    s.name = node.name;
    s.node = i;
    s.int8 = form.dtype == DType::kI8;
    TUNEJIT_ASSIGN_OR_RETURN(s.input, InputValue(node.inputs[0], form, i));
    s.output = AddOutput(node.output, form.dtype, s.int8 ? p_.tensors[s.input].scale_slot : -1);
    p_.tensors[s.output].nhwc = form.nhwc;
    p_.steps.push_back(std::move(s));
    return absl::OkStatus();
  }

  // The form a tensor op runs in: its first activation's when the op is element-wise or a copy
  // (unary, binary, concat, transpose, slice) or a layer norm, and that form is float32 or
  // float16, so the tensor-core path's fp16 activations stay so; NHWC only for unary, binary and
  // concat on 4-D activations, with weights whose bytes read the same in either layout (at most
  // one dim above 1). Float32 NCHW otherwise.
  Form TensorOpForm(const Node& node, StepKind kind) const {
    const bool layout_free =
        kind == StepKind::kUnary || kind == StepKind::kBinary || kind == StepKind::kConcat;
    if (!layout_free && kind != StepKind::kTranspose && kind != StepKind::kSlice &&
        kind != StepKind::kLayerNorm) {
      return kFloatNchw;
    }
    std::optional<Form> form;
    for (int t : node.inputs) {
      const int v = p_.value_of[t];
      if (g_.tensor(t).kind == TensorKind::kWeight || v < 0) continue;
      form = FormOf(p_.tensors[v]);
      break;
    }
    if (!form || (form->dtype != DType::kF32 && form->dtype != DType::kF16)) return kFloatNchw;
    if (!form->nhwc) {
      const bool weights = std::any_of(node.inputs.begin(), node.inputs.end(), [&](int t) {
        return g_.tensor(t).kind == TensorKind::kWeight;
      });
      // A concat copies its weights as they are: float32 only.
      return kind == StepKind::kConcat && weights && form->dtype != DType::kF32 ? kFloatNchw
                                                                                : *form;
    }
    if (!layout_free) return kFloatNchw;
    for (int t : node.inputs) {
      const TensorDesc& d = g_.tensor(t);
      if (d.kind == TensorKind::kWeight) {
        const int64_t big =
            std::count_if(d.shape.begin(), d.shape.end(), [](int64_t dim) { return dim > 1; });
        if (kind == StepKind::kConcat || d.shape.size() > 4 || big > 1) return kFloatNchw;
      } else if (d.shape.size() != 4) {
        return kFloatNchw;
      }
    }
    return *form;
  }

  // A tensor op: its activation inputs in the op's form (converted once where they are not),
  // weights read as float32, the output in the op's form.
  absl::Status LowerTensorOp(int i, StepKind kind) {
    const Node& node = g_.nodes()[i];
    const Form form = TensorOpForm(node, kind);
    Step s;
    s.kind = kind;
    s.name = node.name;
    s.node = i;
    // A matmul batch_matmul.cuda implements (NodeTask): its kernel comes from kernel choice.
    if (kind == StepKind::kMatMul) s.task = task_of_node_[i];
    for (int t : node.inputs) {
      StepOperand operand;
      if (g_.tensor(t).kind == TensorKind::kWeight) {
        operand.weight = t;
      } else if (kind == StepKind::kGather) {  // the ids, int64 as the graph gives them
        TUNEJIT_ASSIGN_OR_RETURN(operand.tensor, InputValue(t, Form{g_.tensor(t).dtype, false}, i));
        if (s.input < 0) s.input = operand.tensor;
      } else {
        TUNEJIT_RETURN_IF_ERROR(RequireFloatValue(i, t));
        TUNEJIT_ASSIGN_OR_RETURN(operand.tensor, InputValue(t, form, i));
        if (s.input < 0) s.input = operand.tensor;
      }
      s.operands.push_back(operand);
    }
    if (s.input < 0) {
      return absl::UnimplementedError(absl::StrCat(
          NodeLabel(i, node), ": every input is a weight (a constant the importer should fold)"));
    }
    int end = node.output;
    if (kind == StepKind::kUnary) {
      s.unary = node.attrs.unary;
      if (const int mul = SiluMul(i); mul >= 0) {
        s.unary = UnaryFn::kSilu;
        s.fused = "mul";
        s.fused_nodes.push_back(mul);
        consumed_[mul] = true;
        end = g_.nodes()[mul].output;
      }
    }
    s.output = AddOutput(end, form.dtype, -1);
    p_.tensors[s.output].nhwc = form.nhwc;
    p_.steps.push_back(std::move(s));
    return absl::OkStatus();
  }

  // Transpose node `i` only renames its input's storage order: NCHW -> NHWC (perm 0,2,3,1) of a
  // float activation stored NHWC, or NHWC -> NCHW (perm 0,3,1,2) of a row-major one, whose
  // output is then stored NHWC. ConvNeXt's LayerNorm2d (permute, layer_norm over channels,
  // permute back) and ViT-style patch embeddings write these around every norm. Graph outputs
  // are read back NCHW, so a transpose writing one stays a copy.
  bool TransposeIsLayoutView(int i) const {
    const Node& node = g_.nodes()[i];
    const int v =
        g_.tensor(node.inputs[0]).kind == TensorKind::kWeight ? -1 : p_.value_of[node.inputs[0]];
    if (v < 0 || g_.tensor(node.output).kind == TensorKind::kOutput) return false;
    const StepTensor& in = p_.tensors[v];
    if (in.shape.size() != 4 || !in.flattened_hwc.empty() ||
        (in.dtype != DType::kF32 && in.dtype != DType::kF16)) {
      return false;
    }
    const std::vector<int64_t> to_nhwc = {0, 2, 3, 1}, to_nchw = {0, 3, 1, 2};
    return in.nhwc ? node.attrs.perm == to_nhwc : node.attrs.perm == to_nchw;
  }

  // The transpose's output as a view of its input's bytes (TransposeIsLayoutView).
  absl::Status LowerTransposeView(int i) {
    const Node& node = g_.nodes()[i];
    const int v = p_.value_of[node.inputs[0]];
    const int out = AddView(node.output, v);
    p_.tensors[out].nhwc = !p_.tensors[v].nhwc;
    return absl::OkStatus();
  }

  // For sigmoid node `i`: the mul node computing x * sigmoid(x) from its output (its only reader),
  // which the step absorbs as silu; -1 otherwise.
  int SiluMul(int i) const {
    const Node& sigmoid = g_.nodes()[i];
    if (sigmoid.op != OpKind::kUnary || sigmoid.attrs.unary != UnaryFn::kSigmoid) return -1;
    const int t = sigmoid.output;
    if (g_.tensor(t).kind != TensorKind::kActivation || consumers_[t].size() != 1) return -1;
    const int m = consumers_[t][0];
    const Node& mul = g_.nodes()[m];
    if (mul.op != OpKind::kBinary || mul.attrs.binary != BinaryFn::kMul) return -1;
    const int x = sigmoid.inputs[0];
    const bool pairs =
        (mul.inputs[0] == x && mul.inputs[1] == t) || (mul.inputs[0] == t && mul.inputs[1] == x);
    return pairs ? m : -1;
  }

  // A view of its input (flatten, reshape), in its element type. A flattened NHWC input stays in
  // (h, w, c) order when only dense layers with weights of their own read the result (they take
  // their weight's columns in that order); otherwise it is converted to NCHW first, keeping its
  // type.
  absl::Status LowerFlatten(int i) {
    const Node& node = g_.nodes()[i];
    int v = p_.value_of[node.inputs[0]];
    if (v < 0) return absl::InternalError(absl::StrCat(NodeLabel(i, node), ": input has no value"));
    const std::vector<int64_t>& out_shape = g_.tensor(node.output).shape;
    const bool keep_hwc = node.op == OpKind::kFlatten && p_.tensors[v].nhwc &&
                          out_shape.size() == 2 && out_shape[0] == p_.tensors[v].shape[0] &&
                          OnlyOwnWeightDensesRead(node.output);
    if (p_.tensors[v].nhwc && !keep_hwc) {
      TUNEJIT_ASSIGN_OR_RETURN(v, InputValue(node.inputs[0], Form{p_.tensors[v].dtype, false}, i));
    }
    const int out = AddView(node.output, v);
    if (keep_hwc) {
      const std::vector<int64_t>& in = p_.tensors[v].shape;
      p_.tensors[out].flattened_hwc = {in[1], in[2], in[3]};
    }
    return absl::OkStatus();
  }

  // Graph tensor `t`'s value as a view of step tensor `v`'s bytes (of its root when `v` is itself
  // a view), in its type and scale; the caller sets how the view orders them.
  int AddView(int t, int v) {
    const StepTensor& in = p_.tensors[v];
    const TensorDesc& d = g_.tensor(t);
    const int id = AddTensor({d.name, d.shape, in.dtype, t, in.alias_of >= 0 ? in.alias_of : v,
                              d.kind == TensorKind::kOutput, in.scale_slot});
    p_.value_of[t] = id;
    return id;
  }

  // Graph tensor `t` is read only as the data input of dense nodes, each the sole reader of its
  // weight, and is not a graph output (which must read back in the graph's order).
  bool OnlyOwnWeightDensesRead(int t) const {
    if (g_.tensor(t).kind == TensorKind::kOutput || consumers_[t].empty()) return false;
    return std::all_of(consumers_[t].begin(), consumers_[t].end(), [&](int c) {
      const Node& user = g_.nodes()[c];
      if (user.op != OpKind::kDense || user.inputs[0] != t) return false;
      const int w = user.inputs[1];
      return g_.tensor(w).kind == TensorKind::kWeight && consumers_[w].size() == 1;
    });
  }

  // Weight tensor `t` is float32 and every element is `value` (to 1e-6 relative); false when the
  // weights are not known.
  bool WeightIs(int t, double value) const {
    return weights_ != nullptr && EveryWeightValue(g_, *weights_, t, [value](float v) {
             return std::abs(v - value) <= 1e-6 * std::abs(value);
           });
  }

  // The node reading activation `t` when it is its only reader, else -1.
  int SoleConsumer(int t) const {
    const bool single = g_.tensor(t).kind == TensorKind::kActivation && consumers_[t].size() == 1;
    return single ? consumers_[t][0] : -1;
  }

  // The binary node `n` computes `fn` of activation `t` and a weight of `value` (either order).
  bool IsBinaryWithWeight(int n, BinaryFn fn, int t, double value) const {
    if (n < 0) return false;
    const Node& node = g_.nodes()[n];
    if (node.op != OpKind::kBinary || node.attrs.binary != fn) return false;
    return (node.inputs[0] == t && WeightIs(node.inputs[1], value)) ||
           (fn != BinaryFn::kDiv && node.inputs[1] == t && WeightIs(node.inputs[0], value));
  }

  // From binary node `i`, the exact GELU as PyTorch exports it: x / sqrt(2) -> erf -> + 1 (a
  // binary add or a bias_add of ones) -> * x -> * 0.5, each value read once. The nodes after
  // `i` (erf, add, mul, mul), or empty.
  std::vector<int> GeluChain(int i) const {
    const Node& div = g_.nodes()[i];
    const int x = div.inputs[0];
    if (!IsBinaryWithWeight(i, BinaryFn::kDiv, x, std::sqrt(2.0))) return {};
    const int erf = SoleConsumer(div.output);
    if (erf < 0 || g_.nodes()[erf].op != OpKind::kUnary ||
        g_.nodes()[erf].attrs.unary != UnaryFn::kErf) {
      return {};
    }
    const int e = g_.nodes()[erf].output;
    const int add = SoleConsumer(e);
    if (!IsPlusOne(add, e)) return {};
    const int a = g_.nodes()[add].output;
    const int mul = SoleConsumer(a);
    if (mul < 0 || !IsProductOf(g_.nodes()[mul], x, a)) return {};
    const Node& m = g_.nodes()[mul];
    const int half = SoleConsumer(m.output);
    if (!IsBinaryWithWeight(half, BinaryFn::kMul, m.output, 0.5)) return {};
    return {erf, add, mul, half};
  }

  // An RMS norm as transformers exports it (Llama's, T5's), from node `i` = Pow(x, 2):
  // ReduceMean over the last axis (keepdims) -> + eps (a binary add, or a bias_add of one value)
  // -> Sqrt -> 1 / that (a Div of one, or Reciprocal) -> x * that -> * a scale weight [C] (either
  // order), every value after `x` read by the next node alone (`x` itself, a residual stream,
  // may have other readers).
  struct RmsNormMatch {
    std::vector<int> nodes;  // after `i`, the scale's Mul last
    float epsilon = 0;
    int scale = -1;  // the weight
  };
  std::optional<RmsNormMatch> RmsNormChain(int i) const {
    const Node& pow = g_.nodes()[i];
    const int x = pow.inputs[0];
    const std::vector<int64_t>& shape = g_.tensor(x).shape;
    if (pow.attrs.binary != BinaryFn::kPow || !WeightIs(pow.inputs[1], 2.0) || shape.empty() ||
        g_.tensor(x).kind == TensorKind::kWeight) {
      return std::nullopt;
    }
    const int64_t rank = static_cast<int64_t>(shape.size());
    const int mean = SoleConsumer(pow.output);
    if (mean < 0 || g_.nodes()[mean].op != OpKind::kReduceMean ||
        !g_.nodes()[mean].attrs.keepdims ||
        g_.nodes()[mean].attrs.axes != std::vector<int64_t>{rank - 1}) {
      return std::nullopt;
    }
    const int m = g_.nodes()[mean].output;
    const int add = SoleConsumer(m);
    if (add < 0) return std::nullopt;
    const Node& a = g_.nodes()[add];
    const bool adds =
        a.op == OpKind::kBiasAdd || (a.op == OpKind::kBinary && a.attrs.binary == BinaryFn::kAdd);
    const int eps_weight = a.inputs[0] == m ? a.inputs[1] : a.inputs[0];
    const std::optional<float> eps =
        adds && weights_ != nullptr ? UniformWeightValue(g_, *weights_, eps_weight) : std::nullopt;
    if (!eps || !(*eps > 0)) return std::nullopt;
    const int sqrt = SoleConsumer(a.output);
    if (sqrt < 0 || g_.nodes()[sqrt].op != OpKind::kUnary ||
        g_.nodes()[sqrt].attrs.unary != UnaryFn::kSqrt) {
      return std::nullopt;
    }
    const int s = g_.nodes()[sqrt].output;
    const int inv = SoleConsumer(s);
    if (inv < 0) return std::nullopt;
    const Node& d = g_.nodes()[inv];
    const bool one_over = (d.op == OpKind::kBinary && d.attrs.binary == BinaryFn::kDiv &&
                           d.inputs[1] == s && WeightIs(d.inputs[0], 1.0)) ||
                          (d.op == OpKind::kUnary && d.attrs.unary == UnaryFn::kReciprocal);
    if (!one_over) return std::nullopt;
    const int r = d.output;
    const int scaled = SoleConsumer(r);
    if (scaled < 0 || !IsProductOf(g_.nodes()[scaled], x, r)) return std::nullopt;
    const int y = g_.nodes()[scaled].output;
    const int times = SoleConsumer(y);
    if (times < 0) return std::nullopt;
    const Node& t = g_.nodes()[times];
    const int w = t.inputs[0] == y ? t.inputs[1] : t.inputs[0];
    if (!IsProductOf(t, y, w) || g_.tensor(w).kind != TensorKind::kWeight ||
        g_.tensor(w).NumElements() != shape.back() || g_.tensor(w).shape.back() != shape.back() ||
        g_.tensor(t.output).shape != shape) {
      return std::nullopt;
    }
    return RmsNormMatch{{mean, add, sqrt, inv, scaled, times}, *eps, w};
  }

  // The RMS norm from node `i` (RmsNormChain) as one layer_norm step of kind RMS.
  absl::Status LowerRmsNorm(int i, const RmsNormMatch& m) {
    const Node& pow = g_.nodes()[i];
    Step s;
    s.kind = StepKind::kLayerNorm;
    s.rms_epsilon = m.epsilon;
    s.fused = "rms_norm";
    return LowerChain(std::move(s), i, pow.inputs[0], m.nodes,
                      TensorOpForm(pow, StepKind::kLayerNorm), {m.scale});
  }

  // The rotary position embedding as transformers applies it (Llama's q and k), from node `i` =
  // x * cos: its sum with rotate_half(x) * sin, rotate_half(x) = Concat(Neg(x[..., D/2:]),
  // x[..., :D/2]) on the last axis, cos and sin weights of [S, D] (leading dims of 1), x
  // [..., S, D]; every value after x read by the next node alone. The other nodes (the add last)
  // and the two tables.
  struct RopeMatch {
    std::vector<int> nodes;
    int x = -1, cos = -1, sin = -1;
  };
  std::optional<RopeMatch> RopeChain(int i) const {
    const Node& mc = g_.nodes()[i];
    if (mc.attrs.binary != BinaryFn::kMul) return std::nullopt;
    const int side = g_.tensor(mc.inputs[0]).kind == TensorKind::kWeight ? 1 : 0;
    const int x = mc.inputs[side], cos = mc.inputs[1 - side];
    const std::vector<int64_t>& shape = g_.tensor(x).shape;
    const int rank = static_cast<int>(shape.size());
    if (rank < 2 || shape.back() % 2 != 0 || g_.tensor(x).kind == TensorKind::kWeight ||
        !IsTable(cos, shape)) {
      return std::nullopt;
    }
    const int64_t half = shape.back() / 2;
    const int add = SoleConsumer(mc.output);
    if (add < 0 || !IsAdd(g_.nodes()[add])) return std::nullopt;
    const Node& a = g_.nodes()[add];
    const int other = a.inputs[0] == mc.output ? a.inputs[1] : a.inputs[0];
    const int ms = SoleConsumer(other) == add ? ProducerOf(other) : -1;
    if (ms < 0 || g_.nodes()[ms].op != OpKind::kBinary ||
        g_.nodes()[ms].attrs.binary != BinaryFn::kMul) {
      return std::nullopt;
    }
    const Node& m = g_.nodes()[ms];
    const int rot_side = g_.tensor(m.inputs[0]).kind == TensorKind::kWeight ? 1 : 0;
    const int rot = m.inputs[rot_side], sin = m.inputs[1 - rot_side];
    if (!IsTable(sin, shape) || SoleConsumer(rot) != ms) return std::nullopt;
    const int cat = ProducerOf(rot);
    if (cat < 0 || g_.nodes()[cat].op != OpKind::kConcat || g_.nodes()[cat].inputs.size() != 2 ||
        (g_.nodes()[cat].attrs.axis != rank - 1 && g_.nodes()[cat].attrs.axis != -1)) {
      return std::nullopt;
    }
    const int neg = ProducerOf(g_.nodes()[cat].inputs[0]);
    const int lo = ProducerOf(g_.nodes()[cat].inputs[1]);
    if (neg < 0 || lo < 0 || g_.nodes()[neg].op != OpKind::kUnary ||
        g_.nodes()[neg].attrs.unary != UnaryFn::kNeg ||
        SoleConsumer(g_.nodes()[neg].output) != cat || SoleConsumer(g_.nodes()[lo].output) != cat) {
      return std::nullopt;
    }
    const int hi = ProducerOf(g_.nodes()[neg].inputs[0]);
    if (hi < 0 || SoleConsumer(g_.nodes()[hi].output) != neg ||
        !IsLastAxisSlice(g_.nodes()[hi], x, half, 2 * half) ||
        !IsLastAxisSlice(g_.nodes()[lo], x, 0, half)) {
      return std::nullopt;
    }
    return RopeMatch{{hi, lo, neg, cat, ms, add}, x, cos, sin};
  }

  // Weight `t` holds one [S, D] table for activations of `shape` [..., S, D]: leading dims of 1.
  bool IsTable(int t, const std::vector<int64_t>& shape) const {
    const TensorDesc& d = g_.tensor(t);
    const size_t r = d.shape.size();
    if (d.kind != TensorKind::kWeight || r < 2 || r > shape.size() ||
        d.shape[r - 1] != shape.back() || d.shape[r - 2] != shape[shape.size() - 2]) {
      return false;
    }
    return d.NumElements() == shape.back() * shape[shape.size() - 2];
  }

  // Slice node `n` takes x[..., start:end] on the last axis (step 1).
  bool IsLastAxisSlice(const Node& n, int x, int64_t start, int64_t end) const {
    const int rank = static_cast<int>(g_.tensor(x).shape.size());
    return n.op == OpKind::kSlice && n.inputs[0] == x &&
           (n.attrs.axis == rank - 1 || n.attrs.axis == -1) && n.attrs.start == start &&
           n.attrs.end == end && n.attrs.step == 1;
  }

  absl::Status LowerRope(int i, const RopeMatch& m) {
    Step s;
    s.kind = StepKind::kRope;
    s.fused = "rope";
    // x row-major: the rope reads [..., S, D] rows.
    const Form form{TensorOpForm(g_.nodes()[i], StepKind::kBinary).dtype, false};
    return LowerChain(std::move(s), i, m.x, m.nodes, form, {m.cos, m.sin});
  }

  // A binary node: the first of a GELU chain (either form), an RMS norm or a rotary embedding
  // lowers the chain as one step.
  absl::Status LowerBinary(int i) {
    if (std::optional<RmsNormMatch> m = RmsNormChain(i)) return LowerRmsNorm(i, *m);
    if (std::optional<RopeMatch> m = RopeChain(i)) return LowerRope(i, *m);
    if (std::vector<int> chain = GeluChain(i); !chain.empty()) {
      return LowerGelu(i, g_.nodes()[i].inputs[0], chain, UnaryFn::kGelu);
    }
    int x = -1;
    if (std::vector<int> chain = GeluTanhChainAt(i, &x); !chain.empty()) {
      return LowerGelu(i, x, chain, UnaryFn::kGeluTanh);
    }
    return LowerTensorOp(i, StepKind::kBinary);
  }

  // A GELU chain (GeluChain: `fn` gelu; GeluTanhReaders: gelu_tanh) from node `i`, its other
  // nodes `chain` (the result last), as one step of `fn` on activation `x`.
  absl::Status LowerGelu(int i, int x, const std::vector<int>& chain, UnaryFn fn) {
    Step s;
    s.kind = StepKind::kUnary;
    s.unary = fn;
    s.fused = std::string(UnaryFnName(fn));
    return LowerChain(std::move(s), i, x, chain, TensorOpForm(g_.nodes()[i], StepKind::kUnary), {});
  }

  // Step `s` (its kind and what it computes set) as the one step of a fused chain from node `i`:
  // its other nodes `chain`, consumed, the result the last one's output; operand 0 activation
  // `x` in `form`, then the weights `tables`.
  absl::Status LowerChain(Step s, int i, int x, const std::vector<int>& chain, Form form,
                          const std::vector<int>& tables) {
    s.name = g_.nodes()[i].name;
    s.node = i;
    s.fused_nodes = chain;
    for (int n : chain) consumed_[n] = true;
    TUNEJIT_RETURN_IF_ERROR(RequireFloatValue(i, x));
    TUNEJIT_ASSIGN_OR_RETURN(s.input, InputValue(x, form, i));
    s.operands = {StepOperand{s.input, -1}};
    for (int t : tables) s.operands.push_back(StepOperand{-1, t});
    s.output = AddOutput(g_.nodes()[chain.back()].output, form.dtype, -1);
    p_.tensors[s.output].nhwc = form.nhwc;
    p_.steps.push_back(std::move(s));
    return absl::OkStatus();
  }

  // The attention chains (fp16 only): every node but the last is consumed, the last lowers the
  // whole chain as one step.
  void FindAttention() {
    chains_ = FindAttentionChains(g_, weights_);
    for (size_t c = 0; c < chains_.size(); ++c) {
      const std::vector<int>& nodes = chains_[c].nodes;
      for (size_t n = 0; n + 1 < nodes.size(); ++n) consumed_[nodes[n]] = true;
      attention_at_[nodes.back()] = static_cast<int>(c);
    }
  }

  // One attention step: Q, K, V float16 through the chain's strides in the tensors it reads (each
  // converted to row-major float16 once where it is not), the mask as float32 (a weight as it
  // is), the output float16 through the chain's strides.
  absl::Status LowerAttention(int i, const AttentionChain& c) {
    Step s;
    s.kind = StepKind::kAttention;
    s.name = g_.nodes()[c.pv].name;
    s.node = i;
    s.fused = "attention";
    s.fused_nodes.assign(c.nodes.begin(), c.nodes.end() - 1);
    for (const AttentionOperand* o : {&c.q, &c.k, &c.v}) {
      TUNEJIT_RETURN_IF_ERROR(RequireFloatValue(i, o->tensor));
      TUNEJIT_ASSIGN_OR_RETURN(const int v, InputValue(o->tensor, Form{DType::kF16, false}, i));
      s.operands.push_back(StepOperand{v, -1});
    }
    if (c.mask >= 0 && g_.tensor(c.mask).kind == TensorKind::kWeight) {
      s.operands.push_back(StepOperand{-1, c.mask});
    } else if (c.mask >= 0) {
      TUNEJIT_RETURN_IF_ERROR(RequireFloatValue(i, c.mask));
      TUNEJIT_ASSIGN_OR_RETURN(const int v, InputValue(c.mask, kFloatNchw, i));
      s.operands.push_back(StepOperand{v, -1});
    }
    s.input = s.operands[0].tensor;
    s.attention = c.params;
    s.attention_layout.q = c.q.strides;
    s.attention_layout.k = c.k.strides;
    s.attention_layout.v = c.v.strides;
    s.attention_layout.o = OutputStrides(c);
    s.attention_layout.mask_batch = c.mask_batch;
    s.attention_layout.scale = static_cast<float>(c.scale);
    s.output = AddOutput(c.output, DType::kF16, -1);
    p_.steps.push_back(std::move(s));
    return absl::OkStatus();
  }

  const Graph& g_;
  const WeightSet* weights_;  // may be null: no fusion that depends on weight values
  std::vector<AttentionChain> chains_;
  absl::flat_hash_map<int, int> attention_at_;  // the node lowering a chain -> its chains_ index
  StepProgram p_;
  std::vector<std::vector<int>> consumers_;
  std::vector<int> task_of_node_;
  std::vector<bool> want_int8_;
  std::vector<bool> consumed_;
  std::vector<int> slot_of_;
  absl::flat_hash_map<std::tuple<int, DType, bool>, int> converted_;  // InputValue's steps
};

}  // namespace

int64_t StepTensor::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string_view StepKindName(StepKind kind) {
  switch (kind) {
    case StepKind::kConv2d:
      return "conv2d";
    case StepKind::kDense:
      return "dense";
    case StepKind::kMaxPool2d:
      return "max_pool2d";
    case StepKind::kSoftmax:
      return "softmax";
    case StepKind::kBiasAdd:
      return "bias_add";
    case StepKind::kQuantize:
      return "quantize";
    case StepKind::kAdd:
      return "add";
    case StepKind::kAvgPool2d:
      return "avg_pool2d";
    case StepKind::kGlobalAvgPool2d:
      return "global_avg_pool2d";
    case StepKind::kClip:
      return "clip";
    case StepKind::kConvert:
      return "convert";
    case StepKind::kUnary:
      return "unary";
    case StepKind::kBinary:
      return "binary";
    case StepKind::kConcat:
      return "concat";
    case StepKind::kTranspose:
      return "transpose";
    case StepKind::kSlice:
      return "slice";
    case StepKind::kReduceMean:
      return "reduce_mean";
    case StepKind::kLayerNorm:
      return "layer_norm";
    case StepKind::kMatMul:
      return "matmul";
    case StepKind::kGather:
      return "gather";
    case StepKind::kRope:
      return "rope";
    case StepKind::kAttention:
      return "attention";
  }
  return "?";
}

absl::StatusOr<StepProgram> LowerToSteps(const Graph& graph, NumericMode mode,
                                         const WeightSet* weights) {
  return Lowerer(graph, mode, weights).Run();
}

absl::StatusOr<GivenScales> MatchGivenScales(const Graph& graph, const StepProgram& program,
                                             const absl::flat_hash_map<std::string, float>& given) {
  GivenScales out;
  out.per_slot.resize(program.scale_sources.size());
  absl::flat_hash_map<std::string, bool> used;
  for (const auto& [name, scale] : given) {
    if (!(scale > 0) || !std::isfinite(scale)) {
      return absl::InvalidArgumentError(absl::StrCat("executor: activation scale of '", name,
                                                     "' is ", scale,
                                                     ": it must be positive and finite"));
    }
    used[name] = false;
  }
  auto give = [&](int graph_tensor, int slot) {
    auto it = given.find(graph.tensor(graph_tensor).name);
    if (it == given.end()) return;
    used[it->first] = true;
    std::optional<float>& scale = out.per_slot[slot];
    scale = std::max(scale.value_or(0.0f), it->second);
  };
  for (const StepTensor& t : program.tensors) {
    if (t.scale_slot >= 0 && t.graph_tensor >= 0) give(t.graph_tensor, t.scale_slot);
  }
  // A slot no step tensor carries (a conv's value before the int8 residual its epilogue adds).
  for (size_t j = 0; j < program.scale_sources.size(); ++j) {
    give(program.scale_sources[j], static_cast<int>(j));
  }
  for (const auto& [name, was_used] : used) {
    if (!was_used) out.unused.push_back(name);
  }
  std::sort(out.unused.begin(), out.unused.end());
  return out;
}

std::vector<int> SlotsToCalibrate(const GivenScales& given) {
  std::vector<int> slots;
  for (size_t j = 0; j < given.per_slot.size(); ++j) {
    if (!given.per_slot[j]) slots.push_back(static_cast<int>(j));
  }
  return slots;
}

std::vector<float> ResolveSlotScales(const GivenScales& given,
                                     absl::Span<const float> calibrated_abs_max) {
  std::vector<float> scales;
  size_t next = 0;
  for (const std::optional<float>& s : given.per_slot) {
    scales.push_back(s ? *s : ActivationScale(calibrated_abs_max[next++]));
  }
  return scales;
}

absl::StatusOr<StepMemory> PlanStepMemory(const StepProgram& program, int64_t alignment) {
  const int n = static_cast<int>(program.tensors.size());
  const int steps = static_cast<int>(program.steps.size());
  StepMemory m;
  m.first.assign(n, steps);
  m.last.assign(n, -1);
  auto root = [&](int t) {
    return program.tensors[t].alias_of >= 0 ? program.tensors[t].alias_of : t;
  };
  auto use = [&](int t, int step) {
    const int r = root(t);
    m.first[r] = std::min(m.first[r], step);
    m.last[r] = std::max(m.last[r], step);
  };
  for (int t = 0; t < n; ++t) {
    const StepTensor& st = program.tensors[t];
    if (!st.external) continue;
    // Inputs are written before the first step; outputs are read after the last one.
    const bool is_input = st.alias_of < 0 && st.graph_tensor >= 0 &&
                          program.value_of[st.graph_tensor] == t &&
                          std::none_of(program.steps.begin(), program.steps.end(),
                                       [&](const Step& s) { return s.output == t; });
    if (is_input) use(t, 0);
    use(t, std::max(steps - 1, 0));
  }
  for (int s = 0; s < steps; ++s) {
    use(program.steps[s].input, s);
    if (program.steps[s].residual >= 0) use(program.steps[s].residual, s);
    for (const StepOperand& operand : program.steps[s].operands) {
      if (operand.tensor >= 0) use(operand.tensor, s);
    }
    use(program.steps[s].output, s);
  }
  std::vector<BufferLifetime> buffers;
  std::vector<int> roots;
  for (int t = 0; t < n; ++t) {
    if (program.tensors[t].alias_of >= 0) continue;
    if (m.last[t] < 0) m.first[t] = m.last[t] = 0;  // never used: still gets its bytes
    buffers.push_back({program.tensors[t].Bytes(), m.first[t], m.last[t]});
    roots.push_back(t);
  }
  TUNEJIT_ASSIGN_OR_RETURN(BufferPlan plan, PlanBuffers(buffers, alignment));
  m.offsets.assign(n, 0);
  for (size_t i = 0; i < roots.size(); ++i) m.offsets[roots[i]] = plan.offsets[i];
  for (int t = 0; t < n; ++t) {
    const int r = root(t);
    m.offsets[t] = m.offsets[r];
    m.first[t] = m.first[r];
    m.last[t] = m.last[r];
  }
  m.arena_bytes = plan.arena_bytes;
  m.sum_bytes = plan.sum_bytes;
  return m;
}

absl::Status CheckWeights(const Graph& graph, const WeightSet& weights) {
  std::vector<std::string> bad;
  for (int id : graph.TensorsOfKind(TensorKind::kWeight)) {
    const int64_t got = static_cast<int64_t>(weights.Get(id).size());
    if (got != graph.tensor(id).Bytes()) {
      bad.push_back(absl::StrCat(graph.tensor(id).name, " (", got, " bytes, expected ",
                                 graph.tensor(id).Bytes(), ")"));
    }
  }
  if (bad.empty()) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrCat("executor: missing or mis-sized weights: ", absl::StrJoin(bad, ", ")));
}

}  // namespace tunejit
