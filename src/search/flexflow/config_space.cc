#include "search/flexflow/config_space.h"

#include <algorithm>
#include <array>

#include "search/common/plan_util.h"
#include "support/assert.h"

namespace cleave::search::flexflow {
namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// Whether the input's tensor holds model state: the dimensions indexing it are Parameter ones.
bool is_state(ir::TensorRole role) {
  return role == ir::TensorRole::weight || role == ir::TensorRole::optimizer_state;
}

DimRole role_of(SearchContext const& ctx, ir::Op const& op, tdl::BoundOp const& bound,
                std::size_t dim) {
  if (bound.dims()[dim].kind == tdl::DimKind::reduction) return DimRole::reduction;
  auto const& out = ctx.graph.tensor(op.outputs[0]);
  if (is_state(out.role)) return DimRole::parameter;
  std::vector<int> slots;
  for (std::size_t i = 0; i < op.inputs.size() && i < bound.accesses().size(); ++i) {
    if (!is_state(ctx.graph.tensor(op.inputs[i]).role)) continue;
    for (auto const* indices : bound.accesses()[i])
      for (auto const& index : *indices)
        slots_in(index, slots);
  }
  if (std::find(slots.begin(), slots.end(), static_cast<int>(dim)) != slots.end())
    return DimRole::parameter;
  if (dim == 0 && !out.type.shape.empty() && out.type.shape[0] == ctx.batch) return DimRole::sample;
  return DimRole::attribute;
}

}  // namespace

char const* role_name(DimRole role) {
  static constexpr std::array<char const*, 4> names = {"sample", "attribute", "parameter",
                                                       "reduction"};
  return names[static_cast<std::size_t>(role)];
}

Expected<ConfigSpace> ConfigSpace::create(SearchContext const& ctx, bool reductions) {
  ConfigSpace space;
  auto const& cluster = ctx.cluster();
  for (std::size_t n = 0; n < cluster.nodes().size(); ++n) {
    auto const& ids = cluster.devices_of(cluster::NodeId(static_cast<std::uint32_t>(n)));
    if (ids.empty()) continue;
    std::vector<int> devices;
    for (auto id : ids)
      devices.push_back(static_cast<int>(id.value()));
    space.node_devices_.push_back(std::move(devices));
  }
  CLEAVE_ASSERT(!space.node_devices_.empty(), "a cluster has devices");
  space.per_node_ = static_cast<int>(space.node_devices_.front().size());
  for (auto const& devices : space.node_devices_)
    space.per_node_ = std::min(space.per_node_, static_cast<int>(devices.size()));
  for (int across : divisors(static_cast<int>(space.node_devices_.size())))
    for (int within : divisors(space.per_node_))
      space.blocks_.push_back({within, across});
  std::sort(space.blocks_.begin(), space.blocks_.end(), [](Block a, Block b) {
    return std::pair(a.within * a.across, a.across) < std::pair(b.within * b.across, b.across);
  });
  space.ops_.resize(ctx.graph.num_ops());
  for (std::uint32_t o = 0; o < ctx.graph.num_ops(); ++o) {
    ir::OpId id(o);
    CLEAVE_TRY(auto bound, ctx.registry.bind(ctx.graph, id));
    OpSpace& op = space.ops_[o];
    op.rank = bound->dims().size();
    for (std::size_t d = 0; d < op.rank; ++d) {
      auto const& dim = bound->dims()[d];
      if (!dim.splittable || dim.extent < 2) continue;
      if (dim.kind == tdl::DimKind::reduction && !reductions) continue;
      op.dims.push_back({d, dim.name, dim.extent, role_of(ctx, ctx.graph.op(id), *bound, d)});
    }
  }
  return space;
}

void ConfigSpace::splits(OpSpace const& op, std::int64_t pieces,
                         std::vector<std::vector<std::int64_t>>& out) const {
  std::vector<std::int64_t> degrees(op.rank, 1);
  auto place = [&](auto& self, std::size_t i, std::int64_t left) -> void {
    if (i == op.dims.size()) {
      if (left == 1) out.push_back(degrees);
      return;
    }
    auto const& dim = op.dims[i];
    for (std::int64_t d = 1; d <= std::min(left, dim.extent); ++d) {
      if (left % d != 0) continue;
      degrees[dim.dim] = d;
      self(self, i + 1, left / d);
    }
    degrees[dim.dim] = 1;
  };
  place(place, 0, pieces);
}

std::vector<int> ConfigSpace::devices(Block block, int node_at, int device_at) const {
  std::vector<int> out;
  for (int i = 0; i < block.within * block.across; ++i) {
    auto const& node =
        node_devices_[static_cast<std::size_t>(node_at * block.across + i / block.within)];
    out.push_back(node[static_cast<std::size_t>(device_at * block.within + i % block.within)]);
  }
  return out;
}

plan::OpConfig ConfigSpace::random(ir::OpId op, Rng& rng) const {
  OpSpace const& space = ops_[op.value()];
  auto pick = [&](std::size_t n) {
    return static_cast<std::size_t>(std::uniform_int_distribution<std::size_t>(0, n - 1)(rng));
  };
  std::vector<std::vector<std::int64_t>> options;
  Block block;
  // Blocks whose piece count the op cannot take (too few or too small dimensions) are drawn
  // again; the 1x1 block always fits, so this ends.
  while (options.empty()) {
    block = blocks_[pick(blocks_.size())];
    splits(space, block.within * block.across, options);
  }
  plan::OpConfig config;
  config.degrees = options[pick(options.size())];
  int node_blocks = static_cast<int>(node_devices_.size()) / block.across;
  int device_blocks = per_node_ / block.within;
  config.devices = devices(block, static_cast<int>(pick(static_cast<std::size_t>(node_blocks))),
                           static_cast<int>(pick(static_cast<std::size_t>(device_blocks))));
  return config;
}

std::vector<plan::OpConfig> ConfigSpace::all(ir::OpId op) const {
  std::vector<plan::OpConfig> out;
  for (Block block : blocks_) {
    std::vector<std::vector<std::int64_t>> options;
    splits(ops_[op.value()], block.within * block.across, options);
    for (auto const& degrees : options)
      for (int n = 0; n < static_cast<int>(node_devices_.size()) / block.across; ++n)
        for (int d = 0; d < per_node_ / block.within; ++d)
          out.push_back({degrees, devices(block, n, d)});
  }
  return out;
}

std::optional<DimRole> ConfigSpace::role(ir::OpId op, std::size_t dim) const {
  for (auto const& d : ops_[op.value()].dims)
    if (d.dim == dim) return d.role;
  return std::nullopt;
}

}  // namespace cleave::search::flexflow
