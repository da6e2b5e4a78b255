#include "runtime/whole_op.h"

#include <random>

#include "ops/op_builder.h"

namespace cleave::runtime {

Expected<std::unique_ptr<WholeOp>> whole_op(ops::OpRegistry const& registry,
                                            KernelRegistry const& kernels, std::string const& type,
                                            std::vector<ir::Shape> const& shapes, ir::Attrs attrs,
                                            unsigned seed) {
  ops::OpBuilder b(registry);
  std::vector<ir::TensorId> in;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    in.push_back(b.input("in" + std::to_string(i), shapes[i]));
  b.op(type, in, std::move(attrs), "op");
  CLEAVE_TRY(ir::Graph graph, b.finish());
  auto o = std::make_unique<WholeOp>(std::move(graph));
  ir::Op const& op = o->graph.ops()[0];
  CLEAVE_TRY(o->bound, registry.bind(o->graph, op.id));
  CLEAVE_TRY(o->piece, tdl::analyze_piece(*o->bound, tdl::full_box(*o->bound)));
  o->call = {&o->graph, &op, o->bound.get(), &o->piece, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (auto const& region : o->piece.inputs) {
    std::vector<float> values(static_cast<std::size_t>(tdl::box_volume(region.box)));
    for (auto& v : values)
      v = uniform(rng);
    o->inputs.push_back(std::move(values));
    o->call.inputs.push_back({o->inputs.back().data(), region.box});
  }
  o->output.assign(static_cast<std::size_t>(tdl::box_volume(o->piece.output)), 0.0f);
  o->call.output = {o->output.data(), o->piece.output};
  o->kernel = kernels.find(o->call);
  if (!o->kernel)
    return Error(ErrorCode::unsupported,
                 "no runtime kernel runs '" + type +
                     "' whole; the kernel registry lacks the built-in kernels that handle it");
  return o;
}

}  // namespace cleave::runtime
