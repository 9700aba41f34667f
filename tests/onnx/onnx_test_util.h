// File: tests/onnx/onnx_test_util.h
// Builds small ONNX ModelProtos with the protobuf API for the importer's tests and seed corpus.
//
//   OnnxBuilder b;
//   b.Input("x", {1, 3, 8, 8}).Init("w", {4, 3, 3, 3}, Iota(108)).Output("y");
//   onnx::NodeProto& conv = b.Node("Conv", {"x", "w"}, {"y"});
//   OnnxBuilder::Ints(conv, "pads", {1, 1, 1, 1});
//   absl::StatusOr<OnnxModel> m = b.Import();
#ifndef TUNEJIT_TESTS_GRAPH_ONNX_TEST_UTIL_H_
#define TUNEJIT_TESTS_GRAPH_ONNX_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "onnx/import.h"
#include "onnx/onnx_pb.h"

namespace tunejit::testing {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("tunejit-test");
    onnx::OperatorSetIdProto* op = model_.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  // A float input; a negative dim is dynamic (dim_param "N").
  OnnxBuilder& Input(const std::string& name, const std::vector<int64_t>& dims,
                     int elem_type = onnx::TensorProto::FLOAT) {
    onnx::ValueInfoProto* in = model_.mutable_graph()->add_input();
    in->set_name(name);
    onnx::TypeProto::Tensor* t = in->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    for (int64_t d : dims) {
      onnx::TensorShapeProto::Dimension* dim = t->mutable_shape()->add_dim();
      if (d < 0) {
        dim->set_dim_param("N");
      } else {
        dim->set_dim_value(d);
      }
    }
    return *this;
  }
  // An int64 input (token ids).
  OnnxBuilder& InputI64(const std::string& name, const std::vector<int64_t>& dims) {
    return Input(name, dims, onnx::TensorProto::INT64);
  }
  OnnxBuilder& Output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  OnnxBuilder& Init(const std::string& name, const std::vector<int64_t>& dims,
                    const std::vector<float>& values) {
    return Raw(name, dims, onnx::TensorProto::FLOAT, values.data(), values.size() * 4);
  }
  OnnxBuilder& InitI64(const std::string& name, const std::vector<int64_t>& dims,
                       const std::vector<int64_t>& values) {
    return Raw(name, dims, onnx::TensorProto::INT64, values.data(), values.size() * 8);
  }
  OnnxBuilder& InitI8(const std::string& name, const std::vector<int64_t>& dims,
                      const std::vector<int8_t>& values) {
    return Raw(name, dims, onnx::TensorProto::INT8, values.data(), values.size());
  }
  OnnxBuilder& InitI32(const std::string& name, const std::vector<int64_t>& dims,
                       const std::vector<int32_t>& values) {
    return Raw(name, dims, onnx::TensorProto::INT32, values.data(), values.size() * 4);
  }
  onnx::TensorProto& LastInit() {
    return *model_.mutable_graph()->mutable_initializer(model_.graph().initializer_size() - 1);
  }

  onnx::NodeProto& Node(const std::string& op, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, const std::string& name = "") {
    onnx::NodeProto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
    for (const std::string& i : inputs) n->add_input(i);
    for (const std::string& o : outputs) n->add_output(o);
    return *n;
  }
  static void Ints(onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void Int(onnx::NodeProto& n, const std::string& name, int64_t v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void Float(onnx::NodeProto& n, const std::string& name, float v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }
  static void String(onnx::NodeProto& n, const std::string& name, const std::string& v) {
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }

  onnx::ModelProto& model() { return model_; }
  std::string Bytes() const { return model_.SerializeAsString(); }
  absl::StatusOr<OnnxModel> Import(const OnnxImportOptions& options = {}) const {
    const std::string b = Bytes();
    return ImportOnnxFromBytes({reinterpret_cast<const uint8_t*>(b.data()), b.size()}, options,
                               "test.onnx");
  }

 private:
  OnnxBuilder& Raw(const std::string& name, const std::vector<int64_t>& dims, int type,
                   const void* data, size_t bytes) {
    onnx::TensorProto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(type);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(static_cast<const char*>(data), bytes));
    return *this;
  }

  onnx::ModelProto model_;
};

// 0.01 * (i % 17 - 8) for i in [0, n): small, varied, deterministic values.
inline std::vector<float> Ramp(size_t n, float step = 0.01f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = step * static_cast<float>(static_cast<int>(i % 17) - 8);
  return v;
}

// The float32 values of weight tensor `name` of an imported model.
inline std::vector<float> WeightFloats(const OnnxModel& m, const std::string& name) {
  std::optional<int> id = m.graph.FindTensor(name);
  if (!id) return {};
  absl::Span<const uint8_t> b = m.weights.Get(*id);
  std::vector<float> f(b.size() / 4);
  std::memcpy(f.data(), b.data(), f.size() * 4);
  return f;
}

// x [N (dynamic), 3, 8, 8] -> Conv 'conv1' (4, 3x3, pad 1) + bias -> Relu -> MaxPool 2x2 ->
// Flatten -> Gemm 'fc' (transB, 10 classes) -> "logits".
inline OnnxBuilder SmallConvNet() {
  OnnxBuilder b;
  b.Input("x", {-1, 3, 8, 8}).Init("w", {4, 3, 3, 3}, Ramp(108)).Init("b", {4}, {1, 2, 3, 4});
  OnnxBuilder::Ints(b.Node("Conv", {"x", "w", "b"}, {"c"}, "conv1"), "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"});
  onnx::NodeProto& p = b.Node("MaxPool", {"r"}, {"p"});
  OnnxBuilder::Ints(p, "kernel_shape", {2, 2});
  OnnxBuilder::Ints(p, "strides", {2, 2});
  b.Node("Flatten", {"p"}, {"f"});
  b.Init("fw", {10, 64}, Ramp(640)).Init("fb", {10}, Ramp(10));
  OnnxBuilder::Int(b.Node("Gemm", {"f", "fw", "fb"}, {"logits"}, "fc"), "transB", 1);
  b.Output("logits");
  return b;
}

// The error message of importing `b`, which must fail (a test failure when it imports).
inline std::string ImportError(const OnnxBuilder& b) {
  absl::StatusOr<OnnxModel> m = b.Import();
  EXPECT_FALSE(m.ok());
  return m.ok() ? "" : std::string(m.status().message());
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_GRAPH_ONNX_TEST_UTIL_H_
