#include "search/common/op_graph.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "search/common/plan_util.h"
#include "tdl/bound_op.h"

namespace cleave::search {
namespace {

cluster::DeviceId device_id(std::size_t d) {
  return cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(d));
}

// The op that writes a source tensor's next value (a weight's or optimizer state's update), as the
// lowering places that tensor (lower/lowering.cc): on the device of its update.
ir::OpId update_of(ir::Graph const& g, ir::TensorId t) {
  for (ir::OpId c : g.consumers(t)) {
    ir::Op const& op = g.op(c);
    auto role = g.tensor(op.outputs[0]).role;
    if (op.forward.valid() && !op.inputs.empty() && op.inputs[0] == t &&
        (role == ir::TensorRole::weight || role == ir::TensorRole::optimizer_state))
      return c;
  }
  return {};
}

std::int64_t region_bytes(tdl::Box const& box, ir::DType dtype) {
  return tdl::box_volume(box) * ir::dtype_bytes(dtype);
}

// Union-find over ops: an update with the updates whose outputs it reads (a weight's update
// with its optimizer state's).
std::size_t root(std::vector<std::size_t>& parent, std::size_t i) {
  while (parent[i] != i)
    i = parent[i] = parent[parent[i]];
  return i;
}

struct Builder {
  SearchContext const& ctx;
  OpGraph out;

  // Prices every piece of every op on every device (once per device kind: devices of a kind are
  // alike) and records the regions it reads and writes.
  Status price(std::vector<Split> const& splits) {
    auto const& g = ctx.graph;
    auto const& devices = ctx.cluster().devices();
    auto single = plan::single_device_plan(g, ctx.registry);
    out.configs = std::move(single.ops);
    out.fingerprint = std::move(single.graph_fingerprint);
    out.pieces.resize(g.num_ops());
    for (ir::OpId id : g.topo_order()) {
      ir::Op const& op = g.op(id);
      CLEAVE_TRY(auto bound, ctx.registry.bind(g, id));
      auto& config = out.configs[id.value()];
      for (auto const& s : splits)
        if (s.op == id) split_dim(config, s.dim, bound->dims()[s.dim].extent, s.ways);
      ir::DType dtype = g.tensor(op.outputs[0]).type.dtype;
      for (auto const& box : plan::piece_boxes(*bound, config)) {
        CLEAVE_TRY(auto info, tdl::analyze_piece(*bound, box));
        PieceFacts facts;
        std::map<std::string, double, std::less<>> by_kind;
        for (std::size_t d = 0; d < devices.size(); ++d) {
          auto [it, fresh] = by_kind.try_emplace(devices[d].kind, 0.0);
          if (fresh)
            it->second = ctx.cost
                             .compute({op.type, &op.attrs, dtype, box, info.flops,
                                       info.bytes_read + info.bytes_written, device_id(d), &g, id,
                                       tdl::box_volume(info.output)})
                             .time.value();
          facts.seconds.push_back(it->second);
        }
        for (std::size_t i = 0; i < info.inputs.size(); ++i)
          facts.input_bytes.push_back(
              region_bytes(info.inputs[i].box, g.tensor(op.inputs[i]).type.dtype));
        facts.output_bytes = region_bytes(info.output, dtype);
        out.pieces[id.value()].push_back(std::move(facts));
      }
    }
    return Status::ok();
  }

  void make_units() {
    auto const& g = ctx.graph;
    out.update_of.assign(g.num_tensors(), {});
    std::vector<std::size_t> parent(g.num_ops());
    std::iota(parent.begin(), parent.end(), std::size_t{0});
    for (auto const& t : g.tensors())
      if (!g.producer(t.id).valid()) out.update_of[t.id.value()] = update_of(g, t.id);
    for (auto const& op : g.ops()) {
      bool is_update = !op.inputs.empty() && out.update_of[op.inputs[0].value()] == op.id;
      if (!is_update) continue;
      for (ir::TensorId in : op.inputs) {
        ir::OpId p = g.producer(in);
        if (p.valid() && !g.op(p).inputs.empty() && out.update_of[g.op(p).inputs[0].value()] == p)
          parent[root(parent, p.value())] = root(parent, op.id.value());
      }
    }
    std::vector<std::size_t> unit_of_root(g.num_ops(), SIZE_MAX);
    out.unit_of.resize(g.num_ops());
    for (ir::OpId id : g.topo_order()) {
      std::size_t ways = out.pieces[id.value()].size();
      for (std::size_t p = 0; p < ways; ++p) {
        std::size_t& unit = unit_of_root[root(parent, id.value())];
        if (ways > 1 || unit == SIZE_MAX) {
          out.units.push_back({});
          if (ways == 1) unit = out.units.size() - 1;
        }
        std::size_t u = ways > 1 ? out.units.size() - 1 : unit;
        out.unit_of[id.value()].push_back(u);
        auto& pu = out.units[u];
        pu.pieces.push_back({id.value(), static_cast<std::uint32_t>(p)});
        pu.seconds += out.pieces[id.value()][p].seconds[0];
        pu.bytes += out.pieces[id.value()][p].output_bytes;
        if (ways > 1) pu.exclusive = static_cast<int>(id.value());
      }
      ir::Op const& op = g.op(id);
      if (!op.inputs.empty() && out.update_of[op.inputs[0].value()] == id) {
        auto const& held = g.tensor(op.inputs[0]).type;  // the weight or state it updates
        out.units[out.unit_of[id.value()][0]].bytes +=
            ir::num_elements(held.shape) * ir::dtype_bytes(held.dtype);
      }
    }
  }

  // Each piece's inputs from their producers' pieces (or, for a weight or optimizer state, from
  // its update), spread evenly over the producer's pieces.
  void make_edges() {
    auto const& g = ctx.graph;
    out.edges.resize(out.units.size());
    out.source_reads.assign(out.units.size(), 0);
    for (auto const& op : g.ops()) {
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        ir::OpId from = g.producer(op.inputs[i]);
        if (!from.valid()) from = out.update_of[op.inputs[i].value()];
        if (!from.valid())
          for (std::size_t p = 0; p < out.unit_of[op.id.value()].size(); ++p)
            out.source_reads[out.unit_of[op.id.value()][p]] +=
                out.pieces[op.id.value()][p].input_bytes[i];
        if (!from.valid() || from == op.id) continue;
        auto const& sources = out.unit_of[from.value()];
        for (std::size_t p = 0; p < out.unit_of[op.id.value()].size(); ++p) {
          std::size_t u = out.unit_of[op.id.value()][p];
          std::int64_t share = out.pieces[op.id.value()][p].input_bytes[i] /
                               static_cast<std::int64_t>(sources.size());
          for (std::size_t v : sources) {
            if (u == v || share == 0) continue;
            out.edges[u][v] += share;
            out.edges[v][u] += share;
          }
        }
      }
    }
  }
};

}  // namespace

Expected<OpGraph> build_op_graph(SearchContext const& ctx, std::vector<Split> const& splits) {
  Builder b{ctx, {}};
  CLEAVE_CHECK_OK(b.price(splits));
  b.make_units();
  b.make_edges();
  return std::move(b.out);
}

Status units_fit_some_device(SearchContext const& ctx, OpGraph const& graph) {
  auto const& devices = ctx.cluster().devices();
  auto largest = std::max_element(devices.begin(), devices.end(), [](auto const& a, auto const& b) {
    return a.memory.value() < b.memory.value();
  });
  for (auto const& unit : graph.units) {
    if (unit.bytes <= largest->memory.value()) continue;
    auto const& op = ctx.graph.op(ir::OpId(unit.pieces.front().op));
    return Error(ErrorCode::out_of_memory,
                 "op '" + op.name + "' cannot be placed: it needs " + std::to_string(unit.bytes) +
                     " bytes (the outputs it writes" +
                     (unit.pieces.size() > 1 && unit.exclusive < 0
                          ? " with the updates of the same weight"
                          : "") +
                     ", the weights and optimizer state it updates), more than any device holds "
                     "(the largest, " +
                     largest->name + ", " + std::to_string(largest->memory.value()) + " bytes)");
  }
  return Status::ok();
}

std::int64_t cut_bytes(OpGraph const& graph, std::vector<int> const& device) {
  std::int64_t cut = 0;
  for (std::size_t u = 0; u < graph.units.size(); ++u)
    for (auto [v, w] : graph.edges[u])
      if (u < v && device[u] != device[v]) cut += w;
  return cut;
}

std::vector<std::int64_t> memory_bound(OpGraph const& graph, std::vector<int> const& device,
                                       std::size_t num_devices) {
  std::vector<std::int64_t> bound(num_devices, 0);
  for (std::size_t u = 0; u < graph.units.size(); ++u) {
    auto& b = bound[static_cast<std::size_t>(device[u])];
    b += graph.units[u].bytes + graph.source_reads[u];
    for (auto [v, bytes] : graph.edges[u])
      if (device[v] != device[u]) b += bytes;
  }
  return bound;
}

std::vector<double> device_speeds(SearchContext const& ctx, OpGraph const& graph) {
  std::vector<double> total(ctx.cluster().num_devices(), 0.0);
  for (auto const& op : graph.pieces)
    for (auto const& piece : op)
      for (std::size_t d = 0; d < total.size(); ++d)
        total[d] += piece.seconds[d];
  std::vector<double> speed;
  for (double t : total)
    speed.push_back(t > 0 ? total[0] / t : 1.0);
  return speed;
}

Expected<std::vector<Split>> heavy_splits(SearchContext const& ctx, OpGraph const& whole,
                                          std::vector<double> const& speeds) {
  auto const& g = ctx.graph;
  double total = 0;
  for (auto const& u : whole.units)
    total += u.seconds;
  double part = total / std::accumulate(speeds.begin(), speeds.end(), 0.0);
  std::vector<Split> out;
  if (ctx.batch <= 0) return out;
  for (auto const& op : g.ops()) {
    double seconds = whole.pieces[op.id.value()][0].seconds[0];
    if (seconds <= part) continue;
    CLEAVE_TRY(auto bound, ctx.registry.bind(g, op.id));
    auto const& dims = bound->dims();
    auto batch_dim = [&](std::size_t d) {
      return dims[d].splittable && dims[d].extent == ctx.batch;
    };
    std::optional<std::size_t> chosen;
    auto const& shape = g.tensor(op.outputs[0]).type.shape;
    if (!shape.empty() && shape[0] == ctx.batch) {
      std::vector<int> slots;
      slots_in(bound->output_indices()[0], slots);
      for (int s : slots)
        if (!chosen && s < bound->num_parallel() && batch_dim(static_cast<std::size_t>(s)))
          chosen = static_cast<std::size_t>(s);
    }
    for (std::size_t d = static_cast<std::size_t>(bound->num_parallel()); d < dims.size(); ++d)
      if (!chosen && batch_dim(d)) chosen = d;
    if (!chosen) continue;
    auto ways =
        std::min<std::int64_t>({static_cast<std::int64_t>(std::ceil(seconds / part)),
                                static_cast<std::int64_t>(speeds.size()), dims[*chosen].extent});
    if (ways > 1) out.push_back({op.id, *chosen, static_cast<int>(ways)});
  }
  return out;
}

}  // namespace cleave::search
