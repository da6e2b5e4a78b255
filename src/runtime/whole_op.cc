#include "runtime/whole_op.h"

#include <random>

#include "ops/op_builder.h"
#include "tdl/interpreter.h"

namespace cleave::runtime {

Expected<std::vector<float>> interpret_piece(ir::Graph const& graph, ir::Op const& op,
                                             tdl::BoundOp const& bound, tdl::PieceInfo const& info,
                                             tdl::Box const& iteration,
                                             std::vector<ConstBlock> const& inputs) {
  std::vector<tdl::TensorData> data;
  for (std::size_t i = 0; i < op.inputs.size(); ++i) {
    auto const& shape = graph.tensor(op.inputs[i]).type.shape;
    if (info.inputs[i].empty())
      data.push_back(tdl::TensorData::zeros(shape, tdl::Box(info.inputs[i].box.size())));
    else
      data.push_back({shape,
                      info.inputs[i].box,
                      {inputs[i].data, inputs[i].data + tdl::box_volume(inputs[i].region)}});
  }
  CLEAVE_TRY(tdl::TensorData out, tdl::evaluate(bound, iteration, data));
  CLEAVE_ASSERT(out.region == info.output, "the interpreter wrote another region");
  return std::vector<float>(out.values.begin(), out.values.end());
}

Status PieceRun::run() const {
  if (kernel) return kernel->run(call);
  CLEAVE_TRY(auto out, interpret_piece(*call.graph, *call.op, *call.bound, piece, piece.iter_box,
                                       call.inputs));
  return Status::ok();
}

Expected<std::unique_ptr<PieceRun>> piece_run(ir::Graph const& graph, ir::OpId op,
                                              tdl::BoundOp const& bound, tdl::Box const& box,
                                              KernelRegistry const& kernels, unsigned seed) {
  auto r = std::make_unique<PieceRun>();
  CLEAVE_TRY(r->piece, tdl::analyze_piece(bound, box));
  r->call = {&graph, &graph.op(op), &bound, &r->piece, {}, {}};
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (auto const& region : r->piece.inputs) {
    std::vector<float> values(static_cast<std::size_t>(tdl::box_volume(region.box)));
    for (auto& v : values)
      v = uniform(rng);
    r->inputs.push_back(std::move(values));
    r->call.inputs.push_back({region.empty() ? nullptr : r->inputs.back().data(), region.box});
  }
  r->output.assign(static_cast<std::size_t>(tdl::box_volume(r->piece.output)), 0.0f);
  r->call.output = {r->output.data(), r->piece.output};
  r->kernel = kernels.find(r->call);
  return r;
}

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
  ir::OpId id = o->graph.ops()[0].id;
  CLEAVE_TRY(o->bound, registry.bind(o->graph, id));
  CLEAVE_TRY(o->piece, piece_run(o->graph, id, *o->bound, tdl::full_box(*o->bound), kernels, seed));
  if (!o->piece->kernel)
    return Error(ErrorCode::unsupported,
                 "no runtime kernel runs '" + type +
                     "' whole; the kernel registry lacks the built-in kernels that handle it");
  return o;
}

}  // namespace cleave::runtime
