#include "search/common/list_schedule.h"

#include <algorithm>
#include <queue>
#include <tuple>

#include "support/assert.h"

namespace cleave::search {
namespace {

cluster::DeviceId device_id(int d) {
  return cluster::DeviceId(static_cast<cluster::DeviceId::value_type>(d));
}

struct Edge {
  std::uint32_t to = 0;
  std::uint32_t holding = 0;  // the block `to` reads (memory-aware only: Schedule::holdings)
  double seconds = 0;         // the transfer between the two pieces' devices; 0 on one device
  std::int64_t bytes = 0;     // the region `to` reads
};

// A block that pieces read: a piece's output on its device (holding t for piece t), or a copy of
// it fetched to another device (after the pieces').
struct Holding {
  int device = 0;
  std::int64_t bytes = 0;
  std::int64_t left = 0;  // its reads not yet run
};

struct Schedule {
  SearchContext const& ctx;
  OpGraph const& graph;
  std::vector<int> const& device_of_unit;
  std::vector<std::int64_t> const& caps;
  std::vector<plan::PieceRef> ref = {};
  std::vector<int> device = {};
  std::vector<double> seconds = {}, bottom = {};
  std::vector<std::int64_t> out = {};  // what each piece writes
  std::vector<std::vector<Edge>> succs = {};
  std::vector<int> waiting = {};
  std::vector<bool> done = {};
  // Memory-aware only.
  std::vector<Holding> holdings = {};
  std::vector<std::size_t> copy_begin = {};  // piece t's copies: holdings [n + copy_begin[t], ...)
  std::vector<std::size_t> copy_owner = {};  // per copy, its piece
  std::vector<std::vector<std::pair<std::uint32_t, std::int64_t>>> reads = {};  // (holding, reads)
  std::vector<std::int64_t> live = {};                         // per device, what it holds now
  std::vector<bool> aware = {};                                // per device: memory-aware
  using Rank = std::tuple<std::int64_t, double, std::size_t>;  // (held after, -bottom, piece)
  std::vector<std::priority_queue<Rank, std::vector<Rank>, std::greater<>>> by_memory = {};

  void build_pieces() {
    auto const& g = ctx.graph;
    std::vector<std::size_t> first(g.num_ops() + 1, 0);  // the task index of each op's piece 0
    for (std::size_t op = 0; op < g.num_ops(); ++op)
      first[op + 1] = first[op] + graph.pieces[op].size();
    std::size_t const n = first.back();
    CLEAVE_ASSERT(n < UINT32_MAX, "pieces are numbered in 32 bits");
    ref.resize(n);
    device.resize(n);
    seconds.resize(n);
    out.resize(n);
    for (std::size_t op = 0; op < g.num_ops(); ++op)
      for (std::size_t p = 0; p < graph.pieces[op].size(); ++p) {
        std::size_t t = first[op] + p;
        ref[t] = {static_cast<std::uint32_t>(op), static_cast<std::uint32_t>(p)};
        device[t] = device_of_unit[graph.unit_of[op][p]];
        seconds[t] = graph.pieces[op][p].seconds[static_cast<std::size_t>(device[t])];
        out[t] = graph.pieces[op][p].output_bytes;
      }
    succs.resize(n);
    waiting.assign(n, 0);
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
            succs[q].push_back({static_cast<std::uint32_t>(to), 0, comm, share.value()});
            ++waiting[to];
          }
        }
      }
    bottom.assign(n, 0.0);
    auto const& topo = g.topo_order();
    for (auto it = topo.rbegin(); it != topo.rend(); ++it)
      for (std::size_t t = first[it->value()]; t < first[it->value() + 1]; ++t) {
        double after = 0;
        for (auto const& e : succs[t])
          after = std::max(after, e.seconds + bottom[e.to]);
        bottom[t] = seconds[t] + after;
      }
  }

  // What each device holds before the step (lower/lowering.h): the weights and optimizer state
  // whose updates it runs, and a copy of the region its pieces read of every other tensor that no
  // op writes (data, labels, weights updated elsewhere).
  std::vector<std::int64_t> held_before() const {
    auto const& g = ctx.graph;
    std::vector<std::int64_t> held(caps.size(), 0);
    auto home = [&](ir::TensorId t) {
      ir::OpId update = graph.update_of[t.value()];
      return update.valid() ? device_of_unit[graph.unit_of[update.value()][0]] : -1;
    };
    std::vector<std::tuple<std::uint32_t, int, std::int64_t>> copies;  // (tensor, device, bytes)
    for (auto const& t : g.tensors())
      if (!g.producer(t.id).valid() && home(t.id) >= 0)
        held[static_cast<std::size_t>(home(t.id))] +=
            ir::num_elements(t.type.shape) * ir::dtype_bytes(t.type.dtype);
    for (auto const& op : g.ops())
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        if (g.producer(op.inputs[i]).valid()) continue;
        for (std::size_t p = 0; p < graph.unit_of[op.id.value()].size(); ++p) {
          int d = device_of_unit[graph.unit_of[op.id.value()][p]];
          if (d != home(op.inputs[i]))
            copies.emplace_back(op.inputs[i].value(), d,
                                graph.pieces[op.id.value()][p].input_bytes[i]);
        }
      }
    std::sort(copies.begin(), copies.end(), std::greater<>());  // the largest region first
    for (std::size_t i = 0; i < copies.size(); ++i)
      if (i == 0 || std::get<0>(copies[i]) != std::get<0>(copies[i - 1]) ||
          std::get<1>(copies[i]) != std::get<1>(copies[i - 1]))
        held[static_cast<std::size_t>(std::get<1>(copies[i]))] += std::get<2>(copies[i]);
    return held;
  }

  // The blocks pieces read, each piece's reads of them, and what each device holds at the start.
  void build_memory() {
    std::size_t const n = ref.size();
    holdings.resize(n);
    copy_begin.assign(n + 1, 0);
    reads.resize(n);
    std::vector<std::pair<int, std::uint32_t>> copies;  // of one piece: (device, holding)
    for (std::size_t q = 0; q < n; ++q) {
      holdings[q] = {device[q], out[q], 0};
      copies.clear();
      for (auto& e : succs[q]) {
        int d = device[e.to];
        if (d == device[q]) {
          e.holding = static_cast<std::uint32_t>(q);
        } else {
          auto it =
              std::find_if(copies.begin(), copies.end(), [&](auto c) { return c.first == d; });
          if (it == copies.end()) {
            copies.emplace_back(d, static_cast<std::uint32_t>(holdings.size()));
            holdings.push_back({d, 0, 0});
            copy_owner.push_back(q);
            it = copies.end() - 1;
          }
          e.holding = it->second;
          // One copy per device of what its readers there fetch (FetchPolicy::shared).
          auto& copy = holdings[e.holding];
          copy.bytes = std::max(copy.bytes, e.bytes);
        }
        ++holdings[e.holding].left;
        auto& r = reads[e.to];
        if (!r.empty() && r.back().first == e.holding)
          ++r.back().second;
        else
          r.emplace_back(e.holding, 1);
      }
      copy_begin[q + 1] = holdings.size() - n;
    }
    live = held_before();
    by_memory.resize(caps.size());
  }

  // What piece t leaves held on its device once it ends: its output (unless only other devices
  // read it: sent, then freed), less the blocks it is the last to read.
  std::int64_t held_after(std::size_t t) const {
    std::int64_t held = succs[t].empty() || holdings[t].left > 0 ? out[t] : 0;
    for (auto [h, count] : reads[t])
      if (holdings[h].left == count) held -= holdings[h].bytes;
    return held;
  }

  void rank(std::size_t t) {
    by_memory[static_cast<std::size_t>(device[t])].emplace(held_after(t), -bottom[t], t);
  }

  // The ready piece of device d that leaves it holding the least (left first in its heap). A
  // rank grows stale as other readers of its inputs run (it only falls): a stale one is ranked
  // again.
  std::size_t least_held(std::size_t d) {
    auto& heap = by_memory[d];
    for (;;) {
      auto [held, neg_bottom, t] = heap.top();
      if (!done[t] && held_after(t) == held) return t;
      heap.pop();
      if (!done[t]) rank(t);
    }
  }

  // Runs piece t in the emulation: its output is held from its start, the blocks it is the last
  // to read are freed when it ends, its output's copies are fetched to the devices that read it.
  void run_memory(std::size_t t) {
    std::size_t const n = ref.size();
    auto d = static_cast<std::size_t>(device[t]);
    live[d] += out[t];
    for (auto [h, count] : reads[t]) {
      auto& hold = holdings[h];
      hold.left -= count;
      if (hold.left == 0) {
        live[static_cast<std::size_t>(hold.device)] -= hold.bytes;
      } else if (hold.left <= 2) {
        // Its readers that are ready may now be the last to read it: ranked again (a reader that
        // reads it more than twice keeps its rank until it is next looked at).
        std::size_t q = h < n ? h : copy_owner[h - n];
        for (auto const& e : succs[q])
          if (e.holding == h && waiting[e.to] == 0 && !done[e.to] &&
              aware[static_cast<std::size_t>(device[e.to])])
            rank(e.to);
      }
    }
    if (!succs[t].empty() && holdings[t].left == 0) live[d] -= out[t];
    for (std::size_t c = n + copy_begin[t]; c < n + copy_begin[t + 1]; ++c)
      live[static_cast<std::size_t>(holdings[c].device)] += holdings[c].bytes;
  }

  // One pass of the list schedule. With the memory emulated (caps given), aware devices take a
  // ready piece that frees memory first, most first, and at their cap the one that leaves them
  // holding the least; `peak` gets each device's emulated peak.
  std::vector<std::vector<plan::PieceRef>> run(std::vector<std::int64_t>& peak) {
    std::size_t const n = ref.size();
    bool const emulated = !caps.empty();
    auto later = [&](std::size_t a, std::size_t b) {
      return bottom[a] != bottom[b] ? bottom[a] < bottom[b] : a > b;
    };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> ready(later);
    done.assign(n, false);
    auto make_ready = [&](std::size_t t) {
      ready.push(t);
      if (emulated && aware[static_cast<std::size_t>(device[t])]) rank(t);
    };
    for (std::size_t t = 0; t < n; ++t)
      if (waiting[t] == 0) make_ready(t);
    std::vector<double> free_at(ctx.cluster().num_devices(), 0.0), inputs_at(n, 0.0);
    std::vector<std::vector<plan::PieceRef>> order(ctx.cluster().num_devices());
    while (!ready.empty()) {
      std::size_t t = ready.top();
      if (done[t]) {  // run early, memory first
        ready.pop();
        continue;
      }
      auto d = static_cast<std::size_t>(device[t]);
      if (emulated && aware[d]) {
        std::size_t least = least_held(d);
        if (held_after(least) < 0 || live[d] + out[t] > caps[d]) t = least;
      }
      if (t == ready.top()) ready.pop();
      done[t] = true;
      double end = std::max(free_at[d], inputs_at[t]) + seconds[t];
      free_at[d] = end;
      order[d].push_back(ref[t]);
      if (emulated) {
        peak[d] = std::max(peak[d], live[d] + out[t]);
        run_memory(t);
      }
      for (auto const& e : succs[t]) {
        inputs_at[e.to] = std::max(inputs_at[e.to], end + e.seconds);
        if (--waiting[e.to] == 0) make_ready(e.to);
      }
    }
    return order;
  }

  // The bytes by which emulated peaks pass their caps, summed.
  std::int64_t overflow(std::vector<std::int64_t> const& peak) const {
    std::int64_t over = 0;
    for (std::size_t d = 0; d < peak.size(); ++d)
      over += std::max<std::int64_t>(0, peak[d] - caps[d]);
    return over;
  }

  // The plain order; where it takes a device past its cap (in the emulation), again with that
  // device memory-aware, kept if it overflows less.
  std::vector<std::vector<plan::PieceRef>> schedule() {
    std::size_t const k = ctx.cluster().num_devices();
    aware.assign(k, false);
    std::vector<std::int64_t> plain_peak(k, 0);
    if (caps.empty()) return run(plain_peak);
    build_memory();
    auto const waiting_before = waiting;
    auto const holdings_before = holdings;
    auto const live_before = live;
    auto plain = run(plain_peak);
    for (std::size_t d = 0; d < k; ++d)
      aware[d] = plain_peak[d] > caps[d];
    if (overflow(plain_peak) == 0) return plain;
    waiting = waiting_before;
    holdings = holdings_before;
    live = live_before;
    std::vector<std::int64_t> aware_peak(k, 0);
    auto order = run(aware_peak);
    return overflow(aware_peak) < overflow(plain_peak) ? order : plain;
  }
};

}  // namespace

std::vector<std::int64_t> usable_memory(cluster::Cluster const& cluster, double usable) {
  std::vector<std::int64_t> caps;
  for (auto const& d : cluster.devices())
    caps.push_back(static_cast<std::int64_t>(usable * static_cast<double>(d.memory.value())));
  return caps;
}

std::vector<std::vector<plan::PieceRef>> list_schedule(SearchContext const& ctx,
                                                       OpGraph const& graph,
                                                       std::vector<int> const& device_of_unit,
                                                       std::vector<std::int64_t> const& caps) {
  CLEAVE_ASSERT(caps.empty() || caps.size() == ctx.cluster().num_devices(), "a cap per device");
  Schedule s{ctx, graph, device_of_unit, caps};
  s.build_pieces();
  return s.schedule();
}

plan::Plan placement_plan(SearchContext const& ctx, OpGraph const& graph,
                          std::vector<int> const& device_of_unit,
                          std::vector<std::int64_t> const& caps) {
  auto configs = graph.configs;
  for (std::size_t op = 0; op < configs.size(); ++op)
    for (std::size_t p = 0; p < configs[op].devices.size(); ++p)
      configs[op].devices[p] = device_of_unit[graph.unit_of[op][p]];
  plan::Plan p;  // not plan_from_configs: the op graph has the fingerprint already
  p.graph_fingerprint = graph.fingerprint;
  p.ops = std::move(configs);
  p.fetch = plan::FetchPolicy::shared;
  p.num_devices = static_cast<int>(ctx.cluster().num_devices());
  p.order = list_schedule(ctx, graph, device_of_unit, caps);
  return p;
}

}  // namespace cleave::search
