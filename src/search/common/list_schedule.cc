#include "search/common/list_schedule.h"

#include <algorithm>
#include <queue>

namespace cleave::search {
namespace {

cluster::DeviceId device_id(int d) {
  return cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(d));
}

struct Edge {
  std::size_t to = 0;
  double seconds = 0;  // the transfer between the two pieces' devices; 0 on one device
};

}  // namespace

std::vector<std::vector<plan::PieceRef>> list_schedule(SearchContext const& ctx,
                                                       OpGraph const& graph,
                                                       std::vector<int> const& device_of_unit) {
  auto const& g = ctx.graph;
  std::vector<std::size_t> first(g.num_ops() + 1, 0);  // the task index of each op's piece 0
  for (std::size_t op = 0; op < g.num_ops(); ++op)
    first[op + 1] = first[op] + graph.pieces[op].size();
  std::size_t const n = first.back();
  std::vector<plan::PieceRef> ref(n);
  std::vector<int> device(n);
  std::vector<double> seconds(n);
  for (std::size_t op = 0; op < g.num_ops(); ++op)
    for (std::size_t p = 0; p < graph.pieces[op].size(); ++p) {
      std::size_t t = first[op] + p;
      ref[t] = {static_cast<std::uint32_t>(op), static_cast<std::uint32_t>(p)};
      device[t] = device_of_unit[graph.unit_of[op][p]];
      seconds[t] = graph.pieces[op][p].seconds[static_cast<std::size_t>(device[t])];
    }
  std::vector<std::vector<Edge>> succs(n);
  std::vector<int> waiting(n, 0);
  for (auto const& op : g.ops())
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      ir::OpId from = g.producer(op.inputs[i]);
      if (!from.valid()) continue;
      auto producers = static_cast<std::int64_t>(graph.pieces[from.value()].size());
      for (std::size_t p = 0; p < graph.pieces[op.id.value()].size(); ++p) {
        std::size_t to = first[op.id.value()] + p;
        Bytes share(graph.pieces[op.id.value()][p].input_bytes[i] / producers);
        for (std::size_t q = first[from.value()]; q < first[from.value() + 1]; ++q) {
          double comm =
              device[q] == device[to]
                  ? 0.0
                  : ctx.cost.transfer(share, device_id(device[q]), device_id(device[to])).value();
          succs[q].push_back({to, comm});
          ++waiting[to];
        }
      }
    }
  std::vector<double> bottom(n, 0.0);
  auto const& topo = g.topo_order();
  for (auto it = topo.rbegin(); it != topo.rend(); ++it)
    for (std::size_t t = first[it->value()]; t < first[it->value() + 1]; ++t) {
      double after = 0;
      for (auto const& e : succs[t])
        after = std::max(after, e.seconds + bottom[e.to]);
      bottom[t] = seconds[t] + after;
    }
  auto later = [&](std::size_t a, std::size_t b) {
    return bottom[a] != bottom[b] ? bottom[a] < bottom[b] : a > b;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> ready(later);
  for (std::size_t t = 0; t < n; ++t)
    if (waiting[t] == 0) ready.push(t);
  std::vector<double> free_at(ctx.cluster().num_devices(), 0.0), inputs_at(n, 0.0);
  std::vector<std::vector<plan::PieceRef>> order(ctx.cluster().num_devices());
  while (!ready.empty()) {
    std::size_t t = ready.top();
    ready.pop();
    auto d = static_cast<std::size_t>(device[t]);
    double end = std::max(free_at[d], inputs_at[t]) + seconds[t];
    free_at[d] = end;
    order[d].push_back(ref[t]);
    for (auto const& e : succs[t]) {
      inputs_at[e.to] = std::max(inputs_at[e.to], end + e.seconds);
      if (--waiting[e.to] == 0) ready.push(e.to);
    }
  }
  return order;
}

plan::Plan placement_plan(SearchContext const& ctx, OpGraph const& graph,
                          std::vector<int> const& device_of_unit) {
  auto configs = graph.configs;
  for (std::size_t op = 0; op < configs.size(); ++op)
    for (std::size_t p = 0; p < configs[op].devices.size(); ++p)
      configs[op].devices[p] = device_of_unit[graph.unit_of[op][p]];
  plan::Plan p;  // not plan_from_configs: the op graph has the fingerprint already
  p.graph_fingerprint = graph.fingerprint;
  p.ops = std::move(configs);
  p.fetch = plan::FetchPolicy::shared;
  p.num_devices = static_cast<int>(ctx.cluster().num_devices());
  p.order = list_schedule(ctx, graph, device_of_unit);
  return p;
}

}  // namespace cleave::search
