#include "harness.h"

#include <algorithm>
#include <cmath>

#include "ops/op_builder.h"

namespace cleave::runtime::testing {

Expected<OpCase> make_case(ops::OpRegistry const& registry, std::string const& type,
                           std::vector<ir::TensorType> const& inputs, ir::Attrs const& attrs,
                           std::vector<InputFill> const& fills, std::mt19937_64& rng) {
  ops::OpBuilder b(registry);
  std::vector<ir::TensorId> ids;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    ids.push_back(b.input("in" + std::to_string(i), inputs[i].shape, inputs[i].dtype));
  b.op(type, ids, attrs, "op");
  CLEAVE_TRY(ir::Graph graph, b.finish());
  OpCase c{std::move(graph), nullptr, nullptr, {}};
  c.op = &c.graph.ops()[0];
  CLEAVE_TRY(c.bound, registry.bind(c.graph, c.op->id));
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    InputFill f = i < fills.size() ? fills[i] : InputFill{};
    std::vector<double> v(static_cast<std::size_t>(ir::num_elements(inputs[i].shape)));
    for (auto& x : v) {
      if (f.int_hi > 0) {
        x = static_cast<double>(std::uniform_int_distribution<std::int64_t>(0, f.int_hi - 1)(rng));
      } else {
        // Rounded to fp32, so kernel and interpreter see the same values.
        x = static_cast<float>(std::uniform_real_distribution<double>(f.lo, f.hi)(rng));
      }
    }
    c.inputs.push_back(tdl::TensorData::whole(inputs[i].shape, std::move(v)));
  }
  return c;
}

PieceResult run_piece(KernelRegistry const& registry, OpCase const& c, tdl::Box const& iter_box) {
  PieceResult r;
  auto info = tdl::analyze_piece(*c.bound, iter_box);
  if (!info) {
    r.message = info.error().to_string();
    return r;
  }
  // Blocks as the executor gives them: each input's region, fp32, row-major.
  std::vector<std::vector<float>> blocks;
  std::vector<tdl::TensorData> regions;
  KernelCall call{&c.graph, c.op, c.bound.get(), &*info, {}, {}};
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    auto const& region = info->inputs[i];
    tdl::TensorData part = region.empty() ? tdl::TensorData::zeros(c.inputs[i].shape, region.box)
                                          : tdl::extract(c.inputs[i], region.box);
    blocks.emplace_back(part.values.begin(), part.values.end());
    regions.push_back(std::move(part));
    call.inputs.push_back({region.empty() ? nullptr : blocks.back().data(), region.box});
  }
  std::vector<float> out(static_cast<std::size_t>(tdl::box_volume(info->output)), -7.f);
  call.output = {out.data(), info->output};
  Kernel const* kernel = registry.find(call);
  if (kernel == nullptr) return r;
  r.kernel = std::string(kernel->name());
  Status s = kernel->run(call);
  if (!s.is_ok()) {
    r.message = s.error().to_string();
    r.max_error = INFINITY;
    return r;
  }
  auto want = tdl::evaluate(*c.bound, iter_box, regions, tdl::EvalOptions{.fp64 = true});
  if (!want) {
    r.message = want.error().to_string();
    r.max_error = INFINITY;
    return r;
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    double y = want->values[i], x = out[i];
    if (std::isinf(y) && x == y) continue;
    double e = std::abs(x - y) / std::max(1.0, std::abs(y));
    if (!(e <= r.max_error)) r.max_error = std::isnan(e) ? INFINITY : e;
  }
  return r;
}

Expected<std::vector<float>> kernel_output(KernelRegistry const& registry, OpCase const& c,
                                           tdl::Box const& iter_box) {
  CLEAVE_TRY(tdl::PieceInfo info, tdl::analyze_piece(*c.bound, iter_box));
  std::vector<std::vector<float>> blocks;
  KernelCall call{&c.graph, c.op, c.bound.get(), &info, {}, {}};
  for (std::size_t i = 0; i < c.inputs.size(); ++i) {
    auto const& region = info.inputs[i];
    std::vector<double> part =
        region.empty() ? std::vector<double>{} : tdl::extract(c.inputs[i], region.box).values;
    blocks.emplace_back(part.begin(), part.end());
  }
  for (std::size_t i = 0; i < c.inputs.size(); ++i)
    call.inputs.push_back(
        {info.inputs[i].empty() ? nullptr : blocks[i].data(), info.inputs[i].box});
  std::vector<float> out(static_cast<std::size_t>(tdl::box_volume(info.output)));
  call.output = {out.data(), info.output};
  Kernel const* kernel = registry.find(call);
  if (kernel == nullptr) return Error(ErrorCode::unsupported, "no kernel handles the piece");
  CLEAVE_CHECK_OK(kernel->run(call));
  return out;
}

std::vector<tdl::Box> random_pieces(tdl::BoundOp const& op, std::mt19937_64& rng,
                                    std::size_t limit) {
  std::vector<tdl::Box> out = {tdl::full_box(op)};
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int grid = 0; grid < 3 && out.size() < limit; ++grid) {
    std::vector<tdl::Box> boxes = {tdl::full_box(op)};
    for (std::size_t d = 0; d < op.dims().size(); ++d) {
      auto const& dim = op.dims()[d];
      if (!dim.splittable || pick(0, 2) == 0) continue;
      std::vector<std::int64_t> cuts = {0, dim.extent};
      for (auto c = pick(1, 2); c > 0; --c)
        cuts.push_back(pick(1, dim.extent - 1));
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      std::vector<tdl::Box> next;
      for (auto const& b : boxes)
        for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
          tdl::Box piece = b;
          piece[d] = {cuts[k], cuts[k + 1]};
          next.push_back(piece);
        }
      boxes = std::move(next);
    }
    std::shuffle(boxes.begin(), boxes.end(), rng);
    for (auto& b : boxes)
      if (out.size() < limit) out.push_back(std::move(b));
  }
  return out;
}

}  // namespace cleave::runtime::testing
