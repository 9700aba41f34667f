// File: tests/onnx/tensor_corpus.h
// Small models in the shape of the torchvision classifiers beyond plain CNNs, for the fuzzer's
// seed corpus (OnnxImportTest.SeedCorpus) and the importer's tests: a ViT encoder block written
// the way PyTorch's TorchScript exporter writes it around a dynamic batch, a MobileNetV3 block
// with squeeze-excitation, a DenseNet / SqueezeNet concatenation with a standalone batch norm,
// the integer and logic ops of the constant folder, and a BERT encoder layer (transformers'
// BertModel as exported) reading int64 token ids. Each has a dynamic batch.
//
//   OnnxBuilder b = testing::VitBlockModel();
//   absl::StatusOr<OnnxModel> m = b.Import({.batch = 2});
#ifndef TUNEJIT_TESTS_ONNX_TENSOR_CORPUS_H_
#define TUNEJIT_TESTS_ONNX_TENSOR_CORPUS_H_

#include <climits>
#include <string>
#include <vector>

#include "tests/onnx/onnx_test_util.h"

namespace tunejit::testing {

// A ConstantOfShape node filled with the INT64 `value`.
inline onnx::NodeProto& FillInt64(OnnxBuilder& b, const std::string& shape, const std::string& out,
                                  int64_t value) {
  onnx::NodeProto& n = b.Node("ConstantOfShape", {shape}, {out});
  onnx::AttributeProto* v = n.add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::INT64);
  v->mutable_t()->add_dims(1);
  v->mutable_t()->add_int64_data(value);
  return n;
}

// x [N, 3, 4, 4] -> 2x2 patches (conv) -> x.reshape(n, 8, 4).permute(0, 2, 1) with n from
// Shape -> class token expand(n, -1, -1) and concat -> + position embedding -> LayerNorm ->
// attention (qkv Linear, Split, q k^T * 1/sqrt(8), Softmax, . v) -> + residual -> LayerNorm ->
// MLP with the erf Gelu -> + residual -> x[:, 0] -> head Gemm: "logits" [N, 3].
inline OnnxBuilder VitBlockModel() {
  OnnxBuilder b(17);
  b.Input("x", {-1, 3, 4, 4}).Init("patch_w", {8, 3, 2, 2}, Ramp(96, 0.05f));
  b.Init("patch_b", {8}, Ramp(8)).Init("cls", {1, 1, 8}, Ramp(8, 0.1f));
  b.Init("pos", {1, 5, 8}, Ramp(40, 0.02f)).Init("ln_g", {8}, Ramp(8, 0.1f));
  b.Init("ln_b", {8}, Ramp(8)).Init("qkv_w", {8, 24}, Ramp(192, 0.03f));
  b.Init("qkv_b", {24}, Ramp(24)).Init("mlp_w", {8, 8}, Ramp(64, 0.04f));
  b.Init("head_w", {3, 8}, Ramp(24, 0.05f)).Init("head_b", {3}, {0.1f, 0.2f, 0.3f});
  b.Init("one", {}, {1.f}).Init("half", {}, {0.5f}).Init("sqrt2", {}, {1.4142135f});
  b.InitI64("i0", {}, {0}).InitI64("axes0", {1}, {0}).InitI64("c8", {1}, {8});
  b.InitI64("neg1", {1}, {-1}).InitI64("three", {1}, {3}).InitI64("qkv_sizes", {3}, {8, 8, 8});
  OnnxBuilder::Ints(b.Node("Conv", {"x", "patch_w", "patch_b"}, {"p"}, "conv_proj"), "strides",
                    {2, 2});
  b.Node("Shape", {"x"}, {"s"});
  b.Node("Gather", {"s", "i0"}, {"n"});
  b.Node("Unsqueeze", {"n", "axes0"}, {"n1"});
  OnnxBuilder::Int(b.Node("Concat", {"n1", "c8", "neg1"}, {"flat_shape"}), "axis", 0);
  b.Node("Reshape", {"p", "flat_shape"}, {"flat"});
  OnnxBuilder::Ints(b.Node("Transpose", {"flat"}, {"tokens"}), "perm", {0, 2, 1});
  OnnxBuilder::Int(b.Node("Concat", {"n1", "neg1", "neg1"}, {"size"}), "axis", 0);
  b.Node("Equal", {"size", "neg1"}, {"is_neg"});
  FillInt64(b, "three", "ones", 1);
  b.Node("Where", {"is_neg", "ones", "size"}, {"expand_shape"});
  b.Node("Expand", {"cls", "expand_shape"}, {"cls_tokens"});
  OnnxBuilder::Int(b.Node("Concat", {"cls_tokens", "tokens"}, {"seq"}), "axis", 1);
  b.Node("Add", {"seq", "pos"}, {"h0"});
  b.Node("LayerNormalization", {"h0", "ln_g", "ln_b"}, {"ln1"}, "ln_1");
  b.Node("MatMul", {"ln1", "qkv_w"}, {"qkv_mm"});
  b.Node("Add", {"qkv_mm", "qkv_b"}, {"qkv"});
  OnnxBuilder::Int(b.Node("Split", {"qkv", "qkv_sizes"}, {"q", "k", "v"}), "axis", -1);
  OnnxBuilder::Ints(b.Node("Transpose", {"k"}, {"kt"}), "perm", {0, 2, 1});
  OnnxBuilder::Int(b.Node("Shape", {"q"}, {"d"}), "start", -1);
  OnnxBuilder::Int(b.Node("Cast", {"d"}, {"df"}), "to", onnx::TensorProto::FLOAT);
  b.Node("Sqrt", {"df"}, {"sd"});
  b.Node("Div", {"one", "sd"}, {"scale"});
  b.Node("MatMul", {"q", "kt"}, {"scores"});
  b.Node("Mul", {"scores", "scale"}, {"scaled"});
  OnnxBuilder::Int(b.Node("Softmax", {"scaled"}, {"attn"}), "axis", -1);
  b.Node("MatMul", {"attn", "v"}, {"ctx"});
  b.Node("Add", {"ctx", "h0"}, {"h1"});
  b.Node("LayerNormalization", {"h1", "ln_g"}, {"ln2"}, "ln_2");
  b.Node("MatMul", {"ln2", "mlp_w"}, {"mlp"});
  b.Node("Div", {"mlp", "sqrt2"}, {"g_div"});
  b.Node("Erf", {"g_div"}, {"g_erf"});
  b.Node("Add", {"g_erf", "one"}, {"g_add"});
  b.Node("Mul", {"mlp", "g_add"}, {"g_mul"});
  b.Node("Mul", {"g_mul", "half"}, {"gelu"});
  b.Node("Add", {"h1", "gelu"}, {"h2"});
  OnnxBuilder::Int(b.Node("Gather", {"h2", "i0"}, {"cls_out"}), "axis", 1);
  OnnxBuilder::Int(b.Node("Gemm", {"cls_out", "head_w", "head_b"}, {"logits"}, "head"), "transB",
                   1);
  b.Output("logits");
  return b;
}

// x [N, 4, 4, 4] -> conv 1x1 -> HardSwish -> SE (GlobalAveragePool, conv, Relu, conv,
// HardSigmoid, Mul) -> + x -> ReduceMean over H, W -> Flatten -> Gemm -> "logits" [N, 2].
inline OnnxBuilder SqueezeExciteModel() {
  OnnxBuilder b(17);
  b.Input("x", {-1, 4, 4, 4}).Init("w", {4, 4, 1, 1}, Ramp(16, 0.1f)).Init("b", {4}, Ramp(4));
  b.Init("se1", {2, 4, 1, 1}, Ramp(8, 0.2f)).Init("se1b", {2}, {0.1f, -0.1f});
  b.Init("se2", {4, 2, 1, 1}, Ramp(8, 0.3f)).Init("se2b", {4}, Ramp(4));
  b.Init("fc", {2, 4}, Ramp(8, 0.1f)).Init("fcb", {2}, {0, 1});
  b.Node("Conv", {"x", "w", "b"}, {"c"});
  b.Node("HardSwish", {"c"}, {"hs"});
  b.Node("GlobalAveragePool", {"hs"}, {"sq"});
  b.Node("Conv", {"sq", "se1", "se1b"}, {"e1"});
  b.Node("Relu", {"e1"}, {"e1r"});
  b.Node("Conv", {"e1r", "se2", "se2b"}, {"e2"});
  onnx::NodeProto& gate = b.Node("HardSigmoid", {"e2"}, {"gate"});
  OnnxBuilder::Float(gate, "alpha", 1.f / 6);
  b.Node("Mul", {"hs", "gate"}, {"scaled"});
  b.Node("Add", {"scaled", "x"}, {"res"});
  onnx::NodeProto& mean = b.Node("ReduceMean", {"res"}, {"m"});
  OnnxBuilder::Ints(mean, "axes", {-1, 2});
  b.Node("Flatten", {"m"}, {"f"});
  OnnxBuilder::Int(b.Node("Gemm", {"f", "fc", "fcb"}, {"logits"}), "transB", 1);
  b.Output("logits");
  return b;
}

// x [N, 2, 4, 4] -> two convs concatenated (SqueezeNet's Fire, DenseNet's dense layer) -> a
// BatchNormalization of the concatenation -> Relu -> Slice of channels 1..3 -> AveragePool ->
// Flatten(axis 1) -> Unsqueeze / Squeeze -> Softmax: "y" [N, 8].
inline OnnxBuilder DenseConcatModel() {
  OnnxBuilder b(13);
  b.Input("x", {-1, 2, 4, 4}).Init("w1", {2, 2, 1, 1}, Ramp(4, 0.2f));
  b.Init("w3", {2, 2, 3, 3}, Ramp(36, 0.05f));
  for (const char* p : {"g", "be", "mu", "v"}) b.Init(p, {6}, {1, 0.5f, 2, 1, 1.5f, 0.8f});
  b.InitI64("st", {1}, {1}).InitI64("en", {1}, {3}).InitI64("ax", {1}, {1});
  b.InitI64("ax2", {1}, {2});
  b.Node("Conv", {"x", "w1"}, {"e1"});
  OnnxBuilder::Ints(b.Node("Conv", {"x", "w3"}, {"e3"}), "pads", {1, 1, 1, 1});
  OnnxBuilder::Int(b.Node("Concat", {"x", "e1", "e3"}, {"cat"}), "axis", 1);
  b.Node("BatchNormalization", {"cat", "g", "be", "mu", "v"}, {"bn"});
  b.Node("Relu", {"bn"}, {"r"});
  b.Node("Slice", {"r", "st", "en", "ax"}, {"sl"});
  onnx::NodeProto& pool = b.Node("AveragePool", {"sl"}, {"p"});
  OnnxBuilder::Ints(pool, "kernel_shape", {2, 2});
  OnnxBuilder::Ints(pool, "strides", {2, 2});
  b.Node("Flatten", {"p"}, {"f"});
  b.Node("Unsqueeze", {"f", "ax2"}, {"u"});
  b.Node("Squeeze", {"u", "ax2"}, {"s"});
  OnnxBuilder::Int(b.Node("Softmax", {"s"}, {"y"}), "axis", 1);
  b.Output("y");
  return b;
}

// The folder's integer and logic ops (Range, Mod, Pow, Min, Max, Less, Greater, Not, And, Or,
// Xor, Where, Cast) computing a [4] vector that scales x [N, 4]; an opset 11 Split by attribute;
// a Max and a Min of activations.
inline OnnxBuilder FoldArithmeticModel() {
  OnnxBuilder b(11);
  b.Input("x", {-1, 4});
  b.InitI64("zero", {}, {0}).InitI64("four", {}, {4}).InitI64("one", {}, {1});
  b.InitI64("three", {}, {3}).InitI64("two", {1}, {2});
  b.Node("Range", {"zero", "four", "one"}, {"r"});  // [0, 1, 2, 3]
  b.Node("Mod", {"r", "three"}, {"m"});             // [0, 1, 2, 0]
  b.Node("Pow", {"r", "two"}, {"p"});               // [0, 1, 4, 9]
  b.Node("Less", {"m", "p"}, {"lt"});               // [f, f, t, t]
  b.Node("Greater", {"r", "one"}, {"gt"});          // [f, f, t, t]
  b.Node("Not", {"lt"}, {"nlt"});
  b.Node("And", {"gt", "lt"}, {"both"});
  b.Node("Or", {"nlt", "both"}, {"any"});      // all true
  b.Node("Xor", {"any", "gt"}, {"x1"});        // [t, t, f, f]
  b.Node("Max", {"m", "one"}, {"mx"});         // [1, 1, 2, 1]
  b.Node("Min", {"p", "three"}, {"mn"});       // [0, 1, 3, 3]
  b.Node("Where", {"x1", "mx", "mn"}, {"w"});  // [1, 1, 3, 3]
  OnnxBuilder::Int(b.Node("Cast", {"w"}, {"wf"}), "to", onnx::TensorProto::FLOAT);
  b.Node("Mul", {"x", "wf"}, {"scaled"});
  onnx::NodeProto& split = b.Node("Split", {"scaled"}, {"lo", "hi"});
  OnnxBuilder::Int(split, "axis", 1);
  OnnxBuilder::Ints(split, "split", {1, 3});
  OnnxBuilder::Int(b.Node("Concat", {"hi", "lo"}, {"cat"}), "axis", -1);
  b.Node("Max", {"cat", "x"}, {"hi_max"});
  b.Node("Min", {"hi_max", "wf"}, {"y"});
  b.Output("y");
  return b;
}

// n values from `first` by `step`: LayerNorm scales near 1, biases near 0.
inline std::vector<float> Around(size_t n, float first, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = first + step * static_cast<float>(i % 5);
  return v;
}

// One BERT encoder layer as PyTorch's TorchScript exporter writes transformers' BertModel without
// an attention mask: int64 input_ids [N, 4] (a vocabulary of 10) -> word embeddings (a Gather by
// the ids) + token type embeddings of zeros (Expand, GatherElements, Gather: all folded) +
// position embeddings (a Gather of constant ids: folded) -> LayerNorm (epsilon 1e-12) ->
// attention with 2 heads of 4 (q and k^T each scaled by 4^-1/4, as PyTorch exports SDPA; Reshape
// with 0 for the batch; the softmax's NaN guard Where(IsNaN(p), 0, p), as torch.onnx writes it
// after a boolean mask) -> output dense (bias first in its Add) + residual -> LayerNorm -> MLP of
// 16 with the erf GELU -> + residual -> LayerNorm: "last_hidden_state" [N, 4, 8].
inline OnnxBuilder BertLayerModel() {
  OnnxBuilder b(17);
  b.InputI64("input_ids", {-1, 4});
  b.Init("word", {10, 8}, Ramp(80, 0.1f)).Init("type", {2, 8}, Ramp(16, 0.03f));
  b.Init("pos", {4, 8}, Ramp(32, 0.02f)).InitI64("pos_ids", {1, 4}, {0, 1, 2, 3});
  b.InitI64("type_ids", {1, 4}, {0, 0, 0, 0}).InitI64("one_row", {2}, {1, 4});
  for (const char* ln : {"ln0", "ln1", "ln2"}) {
    b.Init(std::string(ln) + "_g", {8}, Around(8, 0.9f, 0.05f));
    b.Init(std::string(ln) + "_b", {8}, Around(8, -0.1f, 0.05f));
  }
  for (const char* w : {"wq", "wk", "wv", "wo"}) b.Init(w, {8, 8}, Ramp(64, 0.04f));
  for (const char* w : {"bq", "bk", "bv", "bo"}) b.Init(w, {8}, Around(8, -0.05f, 0.02f));
  b.Init("w1", {8, 16}, Ramp(128, 0.05f)).Init("b1", {16}, Around(16, 0.1f, -0.05f));
  b.Init("w2", {16, 8}, Ramp(128, 0.03f)).Init("b2", {8}, Around(8, 0.f, 0.01f));
  b.Init("scale", {}, {0.70710677f}).Init("one", {}, {1.f}).Init("half", {}, {0.5f});
  b.Init("zero", {}, {0.f});
  b.Init("sqrt2", {}, {1.4142135f}).InitI64("heads_shape", {4}, {0, 4, 2, 4});
  b.InitI64("hidden_shape", {3}, {0, 4, 8});
  // Embeddings.
  b.Node("Shape", {"input_ids"}, {"ids_shape"});
  b.Node("Expand", {"type_ids", "one_row"}, {"type_row"});
  OnnxBuilder::Int(b.Node("GatherElements", {"type_row", "pos_ids"}, {"type_sel"}), "axis", 1);
  b.Node("Expand", {"type_sel", "ids_shape"}, {"type_all"});
  b.Node("Gather", {"word", "input_ids"}, {"we"}, "word_embeddings");
  b.Node("Gather", {"type", "type_all"}, {"te"});
  b.Node("Add", {"we", "te"}, {"e0"});
  b.Node("Gather", {"pos", "pos_ids"}, {"pe"});
  b.Node("Add", {"e0", "pe"}, {"e1"});
  auto layer_norm = [&b](const std::string& x, const std::string& ln, const std::string& y) {
    onnx::NodeProto& n = b.Node("LayerNormalization", {x, ln + "_g", ln + "_b"}, {y}, ln);
    OnnxBuilder::Int(n, "axis", -1);
    OnnxBuilder::Float(n, "epsilon", 1e-12f);
  };
  layer_norm("e1", "ln0", "h0");
  // Attention.
  for (const char* p : {"q", "k", "v"}) {
    const std::string s(p);
    b.Node("MatMul", {"h0", "w" + s}, {s + "_mm"});
    b.Node("Add", {"b" + s, s + "_mm"}, {s + "_lin"});
    b.Node("Reshape", {s + "_lin", "heads_shape"}, {s + "_heads"});
  }
  OnnxBuilder::Ints(b.Node("Transpose", {"q_heads"}, {"qh"}), "perm", {0, 2, 1, 3});
  OnnxBuilder::Ints(b.Node("Transpose", {"k_heads"}, {"kt"}), "perm", {0, 2, 3, 1});
  OnnxBuilder::Ints(b.Node("Transpose", {"v_heads"}, {"vh"}), "perm", {0, 2, 1, 3});
  b.Node("Mul", {"qh", "scale"}, {"qs"});
  b.Node("Mul", {"kt", "scale"}, {"ks"});
  b.Node("MatMul", {"qs", "ks"}, {"scores"});
  OnnxBuilder::Int(b.Node("Softmax", {"scores"}, {"probs"}), "axis", -1);
  b.Node("IsNaN", {"probs"}, {"probs_nan"});
  b.Node("Where", {"probs_nan", "zero", "probs"}, {"attn"});
  b.Node("MatMul", {"attn", "vh"}, {"ctx"});
  OnnxBuilder::Ints(b.Node("Transpose", {"ctx"}, {"ctx_t"}), "perm", {0, 2, 1, 3});
  b.Node("Reshape", {"ctx_t", "hidden_shape"}, {"ctx_flat"});
  b.Node("MatMul", {"ctx_flat", "wo"}, {"o_mm"});
  b.Node("Add", {"bo", "o_mm"}, {"o_lin"});
  b.Node("Add", {"o_lin", "h0"}, {"r1"});
  layer_norm("r1", "ln1", "h1");
  // MLP.
  b.Node("MatMul", {"h1", "w1"}, {"i_mm"});
  b.Node("Add", {"b1", "i_mm"}, {"i_lin"});
  b.Node("Div", {"i_lin", "sqrt2"}, {"g_div"});
  b.Node("Erf", {"g_div"}, {"g_erf"});
  b.Node("Add", {"g_erf", "one"}, {"g_add"});
  b.Node("Mul", {"i_lin", "g_add"}, {"g_mul"});
  b.Node("Mul", {"g_mul", "half"}, {"gelu"});
  b.Node("MatMul", {"gelu", "w2"}, {"o2_mm"});
  b.Node("Add", {"b2", "o2_mm"}, {"o2_lin"});
  b.Node("Add", {"o2_lin", "h1"}, {"r2"});
  layer_norm("r2", "ln2", "last_hidden_state");
  b.Output("last_hidden_state");
  return b;
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_ONNX_TENSOR_CORPUS_H_
