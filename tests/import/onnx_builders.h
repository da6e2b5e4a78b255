// Small ONNX models written with the ONNX C++ API, for the importer's tests and the fuzz seeds.
#pragma once

#include <cstdint>
#include <onnx/onnx_pb.h>
#include <string>
#include <vector>

namespace cleave::importer::testing {

inline void add_tensor_value(onnx::ValueInfoProto* v, std::string const& name,
                             std::vector<std::int64_t> const& dims,
                             int elem = onnx::TensorProto::FLOAT, bool symbolic_batch = false) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* shape = t->mutable_shape();
  for (std::size_t k = 0; k < dims.size(); ++k) {
    auto* d = shape->add_dim();
    if (k == 0 && symbolic_batch)
      d->set_dim_param("N");
    else
      d->set_dim_value(dims[k]);
  }
}

inline void add_initializer(onnx::GraphProto* g, std::string const& name,
                            std::vector<std::int64_t> const& dims) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  std::int64_t n = 1;
  for (auto d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (std::int64_t i = 0; i < n; ++i)
    t->add_float_data(0.01f * static_cast<float>(i % 7));
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, std::string const& op,
                                 std::vector<std::string> const& in,
                                 std::vector<std::string> const& out,
                                 std::string const& domain = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(out.empty() ? op : op + "_" + out[0]);
  if (!domain.empty()) n->set_domain(domain);
  for (auto const& s : in)
    n->add_input(s);
  for (auto const& s : out)
    n->add_output(s);
  return n;
}

struct MlpOptions {
  std::int64_t opset = 17;
  std::string middle_op = "Relu";  // the activation between the two layers
  std::string middle_domain;
  bool symbolic_batch = false;
  bool dedup_bias = false;  // share one initializer through Identity, as exporters do
};

// x [4, 8] -> Gemm(W1 [16, 8], b1) -> activation -> Gemm(W2 [3, 16], b2) -> y [4, 3]:
// 8*16 + 16 + 16*3 + 3 = 195 parameters.
inline onnx::ModelProto mlp(MlpOptions const& o = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("cleave-tests");
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(o.opset);
  if (!o.middle_domain.empty()) {
    auto* d = m.add_opset_import();
    d->set_domain(o.middle_domain);
    d->set_version(1);
  }
  auto* g = m.mutable_graph();
  g->set_name("mlp");
  add_tensor_value(g->add_input(), "x", {4, 8}, onnx::TensorProto::FLOAT, o.symbolic_batch);
  add_initializer(g, "w1", {16, 8});
  add_initializer(g, "b1", {16});
  add_initializer(g, "w2", {3, 16});
  std::string b2 = "b2";
  if (o.dedup_bias) {
    add_initializer(g, "b_shared", {3});
    add_node(g, "Identity", {"b_shared"}, {"b2"});
    add_node(g, "Identity", {"b_shared"}, {"b3"});
  } else {
    add_initializer(g, "b2", {3});
  }
  auto* g1 = add_node(g, "Gemm", {"x", "w1", "b1"}, {"h"});
  auto* t = g1->add_attribute();
  t->set_name("transB");
  t->set_type(onnx::AttributeProto::INT);
  t->set_i(1);
  add_node(g, o.middle_op, {"h"}, {"a"}, o.middle_domain);
  auto* g2 = add_node(g, "Gemm", {"a", "w2", b2}, {o.dedup_bias ? "y0" : "y"});
  *g2->add_attribute() = *t;
  if (o.dedup_bias) add_node(g, "Add", {"y0", "b3"}, {"y"});
  add_tensor_value(g->add_output(), "y", {4, 3});
  return m;
}

inline std::string bytes_of(onnx::ModelProto const& m) {
  std::string s;
  m.SerializeToString(&s);
  return s;
}

}  // namespace cleave::importer::testing
