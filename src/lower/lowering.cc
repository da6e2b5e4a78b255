#include "lower/lowering.h"

#include <algorithm>
#include <array>
#include <map>
#include <numeric>
#include <tuple>
#include <utility>

#include "lower/block_index.h"
#include "lower/lowering_state.h"
#include "lower/schedule.h"
#include "support/assert.h"

namespace cleave::lower {

Pass Lowering::State::pass_of(ir::TensorId t, ir::OpId c) const {
  if (fetch[t.value()] == plan::FetchPolicy::shared) return early_pass;
  if (from_readers[t.value()] || !graph.op(c).forward.valid()) return early_pass;
  ir::OpId producer = graph.producer(t);
  return producer.valid() && graph.op(producer).forward.valid() ? early_pass : late_pass;
}

Expected<std::vector<tdl::PieceInfo>> Lowering::State::analyze(ir::OpId id,
                                                               plan::OpConfig const& config) {
  CLEAVE_TRY(auto bound, registry.bind(graph, id));
  auto boxes = plan::piece_boxes(*bound, config);
  std::vector<tdl::PieceInfo> infos;
  infos.reserve(boxes.size());
  for (auto const& box : boxes) {
    CLEAVE_TRY(tdl::PieceInfo info, tdl::analyze_piece(*bound, box));
    if (!info.output_exact)
      return Error(ErrorCode::invalid_argument,
                   "plan for op '" + graph.op(id).name + "': piece " + tdl::box_to_string(box) +
                       " writes a non-rectangular region; split that dimension evenly with "
                       "another degree or not at all");
    infos.push_back(std::move(info));
  }
  return infos;
}

Status Lowering::State::build() {
  fetch.assign(graph.num_tensors(), plan.fetch);
  for (auto const& f : plan.tensor_fetch)
    fetch[f.tensor.value()] = f.policy;
  for (auto const& t : graph.tensors()) {
    if (graph.producer(t.id).valid()) continue;
    if (auto update = update_of(graph, t.id))
      places[update->value()] = t.id;
    else
      from_readers[t.id.value()] = true;
  }
  for (ir::OpId id : graph.topo_order()) {
    CLEAVE_TRY(auto infos, analyze(id, plan.ops[id.value()]));
    build_op_part(id, std::move(infos));
  }
  // A late part goes just before its first reader, after its gate: the latest (in topological
  // order) backward op whose output that reader reads.
  std::vector<std::size_t> position(num_ops);
  for (std::size_t i = 0; i < graph.topo_order().size(); ++i)
    position[graph.topo_order()[i].value()] = i;
  std::vector<std::vector<ir::TensorId>> late_before(num_ops);
  for (auto const& t : graph.tensors()) {
    std::optional<ir::OpId> first;
    for (ir::OpId c : graph.consumers(t.id))
      if (pass_of(t.id, c) == late_pass &&
          (!first || position[c.value()] < position[first->value()]))
        first = c;
    if (!first) continue;
    late_before[first->value()].push_back(t.id);
    for (ir::TensorId in : graph.op(*first).inputs) {
      ir::OpId p = graph.producer(in);
      if (!p.valid() || !graph.op(p).forward.valid()) continue;
      if (!gate[t.id.value()] || position[p.value()] > position[gate[t.id.value()]->value()])
        gate[t.id.value()] = p;
    }
    if (gate[t.id.value()]) gates[gate[t.id.value()]->value()].push_back(t.id);
  }
  for (auto const& t : graph.tensors())
    build_tensor_part(t.id);
  for (auto const& t : graph.tensors())
    if (!graph.producer(t.id).valid()) order.push_back(part_id(t.id, early_pass));
  for (ir::OpId id : graph.topo_order()) {
    for (ir::TensorId t : late_before[id.value()])
      order.push_back(part_id(t, late_pass));
    order.push_back(id.value());
    order.push_back(part_id(graph.op(id).outputs[0], early_pass));
  }
  if (!once) {
    assemble(nullptr);
    return Status::ok();
  }
  std::vector<PieceReads>().swap(pieces);
  assemble_once();
  return Status::ok();
}

Status Lowering::State::lower_all() {
  CLEAVE_CHECK_OK(build());
  return apply_schedule(graph, plan, program);
}

void Lowering::State::build_op_part(ir::OpId id, std::vector<tdl::PieceInfo> infos) {
  ir::Op const& op = graph.op(id);
  auto const& devices = plan.ops[id.value()].devices;
  ir::TensorId out = op.outputs[0];
  Part part;
  for (std::size_t k = 0; k < infos.size(); ++k) {
    auto& info = infos[k];
    Task task;
    task.kind = TaskKind::compute;
    task.device = devices[k];
    task.op = id;
    task.piece = static_cast<std::uint32_t>(k);
    task.iteration = std::move(info.iter_box);
    task.tensor = out;
    task.region = info.output;
    task.partial = info.partial;
    task.reducer = info.reducer;
    task.flops = info.flops;
    task.bytes = Bytes(info.bytes_read.value() + info.bytes_written.value());
    part.add(std::move(task), {});
  }
  auto& held = layout[out.value()];
  held.clear();
  // Pieces that differ only in reduction dimensions write the same region: their partial
  // results are combined where the group's devices are (below).
  std::map<tdl::Box, std::vector<std::uint32_t>, BoxLess> groups;
  std::vector<tdl::Box> group_order;
  for (std::uint32_t k = 0; k < infos.size(); ++k) {
    auto [it, fresh] = groups.try_emplace(infos[k].output);
    if (fresh) group_order.push_back(infos[k].output);
    it->second.push_back(k);
  }
  for (auto const& key : group_order) {
    auto const& members = groups[key];
    auto const& first = infos[members[0]];
    if (!first.partial) {
      held.push_back({first.output, devices[members[0]], Ref{id.value(), members[0]}});
      continue;
    }
    reduce_scatter(id, part, infos, members);
  }
  if (auto placed = places[id.value()]) {
    auto& blocks = layout[placed->value()];
    blocks.clear();
    for (std::size_t k = 0; k < infos.size(); ++k)
      blocks.push_back({infos[k].output, devices[k], std::nullopt});
  }
  op_parts[id.value()] = std::move(part);
  PieceReads& reads = pieces[id.value()];
  reads.count = infos.size();
  reads.first.assign(1, 0);
  for (std::size_t i = 0; i < op.inputs.size(); ++i)
    reads.first.push_back(
        reads.first.back() +
        static_cast<std::uint32_t>(infos.empty() ? 0 : infos[0].inputs[i].box.size()));
  reads.intervals.clear();
  reads.intervals.reserve(reads.count * reads.first.back());
  for (auto const& info : infos)
    for (std::size_t i = 0; i < info.inputs.size(); ++i) {
      auto const& box = info.inputs[i].box;
      CLEAVE_ASSERT(box.size() == reads.first[i + 1] - reads.first[i],
                    "an input's read regions differ in rank among pieces");
      reads.intervals.insert(reads.intervals.end(), box.begin(), box.end());
    }
}

Task Lowering::State::partial_move(ir::OpId id, std::uint32_t piece, int target,
                                   tdl::Box const& region, std::size_t sources) const {
  Task move;
  move.kind = TaskKind::transfer;
  move.device = target;
  move.op = id;
  move.piece = piece;
  move.tensor = graph.op(id).outputs[0];
  move.region = region;
  move.partial = true;
  move.bytes =
      Bytes(tensor_bytes(graph.tensor(move.tensor), region) * static_cast<std::int64_t>(sources));
  return move;
}

void Lowering::State::reduce_scatter(ir::OpId id, Part& part,
                                     std::vector<tdl::PieceInfo> const& infos,
                                     std::vector<std::uint32_t> const& members) {
  auto const& devices = plan.ops[id.value()].devices;
  ir::TensorId out = graph.op(id).outputs[0];
  auto const& first = infos[members[0]];
  std::vector<int> targets;
  std::vector<bool> targeted(static_cast<std::size_t>(plan.num_devices), false);
  for (auto k : members)
    if (!targeted[static_cast<std::size_t>(devices[k])]) {
      targeted[static_cast<std::size_t>(devices[k])] = true;
      targets.push_back(devices[k]);
    }
  std::size_t cut = scatter_dimension(first.output, targets.size());
  std::int64_t cuts = first.output.empty()
                          ? 1
                          : std::min<std::int64_t>(static_cast<std::int64_t>(targets.size()),
                                                   first.output[cut].size());
  auto parts = first.output.empty() ? std::vector<tdl::Box>{first.output}
                                    : tdl::split_evenly(first.output, static_cast<int>(cut), cuts);
  bool collective =
      members.size() >= 2 && targets.size() == members.size() && parts.size() == targets.size();
  Collective rs;
  auto local = static_cast<CollectiveId>(part.collectives.size());
  auto member = [&](Task& task) {
    if (collective) task.collective = local;
  };
  for (std::size_t j = 0; j < parts.size(); ++j) {
    int target = targets[j];
    Task reduce;
    reduce.kind = TaskKind::reduce;
    reduce.device = target;
    reduce.op = id;
    reduce.tensor = out;
    reduce.region = parts[j];
    reduce.reducer = first.reducer;
    std::vector<Ref> deps;
    if (collective && form == CollectiveForm::per_device) {
      // One transfer member per device: what the others send it, waiting for its own partial
      // result (members[j] is the one member on target j).
      Task move = partial_move(id, members[j], target, parts[j], members.size() - 1);
      member(move);
      auto index = part.add(std::move(move), {Ref{id.value(), members[j]}});
      rs.members.push_back(index);
      deps = {Ref{id.value(), members[j]}, Ref{id.value(), index}};
    } else {
      for (auto k : members) {
        if (devices[k] == target) {
          deps.push_back({id.value(), k});
          continue;
        }
        Task move = partial_move(id, k, target, parts[j], 1);
        move.source_device = devices[k];
        member(move);
        auto index = part.add(std::move(move), {Ref{id.value(), k}});
        rs.members.push_back(index);
        deps.push_back({id.value(), index});
      }
    }
    reduce.flops = Flops(tdl::box_volume(parts[j]) * static_cast<std::int64_t>(members.size() - 1));
    member(reduce);
    auto index = part.add(std::move(reduce), deps);
    rs.members.push_back(index);
    layout[out.value()].push_back({parts[j], target, Ref{id.value(), index}});
  }
  if (!collective) return;
  rs.kind = CollectiveKind::reduce_scatter;
  rs.group = targets;
  std::sort(rs.group.begin(), rs.group.end());
  rs.tensor = out;
  rs.region = first.output;
  rs.bytes = Bytes(tensor_bytes(graph.tensor(out), first.output));
  part.collectives.push_back(std::move(rs));
}

void Lowering::State::build_tensor_part(ir::TensorId t) {
  std::array<TensorPart, 2> parts;
  auto const& blocks = layout[t.value()];
  bool readers = from_readers[t.value()];
  if (!readers && !graph.producer(t).valid())
    for (auto const& b : blocks)
      parts[early_pass].initial.push_back({t, b.region, b.device});
  // The tasks that wrote the gate's output, which the late part's transfers wait for.
  std::vector<Ref> gate_tasks;
  if (auto g = gate[t.value()])
    for (auto const& b : layout[graph.op(*g).outputs[0].value()])
      if (b.task) gate_tasks.push_back(*b.task);
  // Passes whose fetches are gathers within groups of t's blocks (gather_groups), lowered per
  // device where the form asks for it: each block's member's id in the part (CollectiveForm).
  // Not under swaps: a member gathers from its group, and the schedule would take it for a reader
  // of every block the group holds before the step, its own device's included.
  auto gathers = gather_groups(t);
  std::array<bool, 2> per_device{};
  std::array<std::vector<std::uint32_t>, 2> member_of;
  for (Pass pass : {early_pass, late_pass}) {
    per_device[pass] =
        gathers.regular[pass] && form == CollectiveForm::per_device && plan.swaps.empty();
    if (per_device[pass])
      member_of[pass] = gather_per_device(t, pass, parts[pass], gate_tasks, gathers);
  }
  BlockIndex<Held> index(blocks);
  std::vector<std::uint32_t> candidates;
  Moves delivered;                 // inputs: (device, device, region) of the blocks delivered
  std::array<Moves, 2> transfers;  // per part
  std::vector<ir::OpId> seen;
  for (ir::OpId c : graph.consumers(t)) {
    if (std::find(seen.begin(), seen.end(), c) != seen.end()) continue;
    seen.push_back(c);
    Pass pass = pass_of(t, c);
    TensorPart& part = parts[pass];
    auto self = part_id(t, pass);
    ir::Op const& op = graph.op(c);
    auto const& reads = pieces[c.value()];
    auto const& devices = plan.ops[c.value()].devices;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] != t) continue;
      Read read{c, i, {}};
      for (std::size_t k = 0; k < reads.size(); ++k, read.pieces.close()) {
        if (reads.none(k, i)) continue;
        tdl::Box const region = reads.region(k, i);
        int d = devices[k];
        if (readers) {
          if (delivered.try_emplace({d, d, region}, 0).second)
            part.initial.push_back({t, region, d});
          continue;
        }
        if (per_device[pass]) {  // its own block, and what the others of its group send it
          auto own = static_cast<std::uint32_t>(gathers.block_on[static_cast<std::size_t>(d)]);
          if (blocks[own].task) read.pieces.refs.push_back(*blocks[own].task);
          if (!contains(blocks[own].region, region))
            read.pieces.refs.push_back({self, member_of[pass][own]});
          continue;
        }
        std::int64_t covered = 0;
        index.candidates(region, candidates);
        for (auto at : candidates) {
          Held const& b = blocks[at];
          tdl::Box piece = tdl::intersect(region, b.region);
          if (tdl::box_volume(piece) == 0) continue;
          covered += tdl::box_volume(piece);
          if (b.device == d) {
            if (b.task) read.pieces.refs.push_back(*b.task);
            continue;
          }
          auto [it, fresh] = transfers[pass].try_emplace(std::make_tuple(b.device, d, piece), 0);
          if (fresh) {
            Task move;
            move.kind = TaskKind::transfer;
            move.device = d;
            move.source_device = b.device;
            move.tensor = t;
            move.region = piece;
            move.bytes = Bytes(tensor_bytes(graph.tensor(t), piece));
            std::vector<Ref> deps;
            if (b.task) deps.push_back(*b.task);
            if (pass == late_pass) deps.insert(deps.end(), gate_tasks.begin(), gate_tasks.end());
            it->second = part.add(std::move(move), deps);
          }
          read.pieces.refs.push_back({self, it->second});
        }
        CLEAVE_ASSERT(covered == tdl::box_volume(region),
                      "a tensor's blocks do not cover a read region");
      }
      part.reads.push_back(std::move(read));
    }
  }
  for (Pass pass : {early_pass, late_pass})
    if (!per_device[pass]) gather_explicitly(t, pass, parts[pass], transfers[pass], gathers);
  tensor_part(t, early_pass) = std::move(parts[early_pass]);
  tensor_part(t, late_pass) = std::move(parts[late_pass]);
}

void Lowering::State::gather_explicitly(ir::TensorId t, Pass pass, TensorPart& part,
                                        Moves const& transfers, Gathers const& gathers) {
  bool may_complete = pass == early_pass;
  if (gathers.regular[pass]) {
    for (auto const& group : gathers.groups[pass])
      all_gather(t, part, transfers, group.blocks, group.region, may_complete);
    return;
  }
  std::vector<std::uint32_t> all(layout[t.value()].size());
  std::iota(all.begin(), all.end(), 0u);
  all_gather(t, part, transfers, all, tdl::whole_box(graph.tensor(t).type.shape), may_complete);
}

void Lowering::State::all_gather(ir::TensorId t, TensorPart& part, Moves const& transfers,
                                 std::span<std::uint32_t const> members, tdl::Box const& region,
                                 bool may_complete) {
  auto const& blocks = layout[t.value()];
  if (members.size() < 2) return;
  Collective ag;
  auto local = static_cast<CollectiveId>(part.collectives.size());
  std::vector<bool> in_group(static_cast<std::size_t>(plan.num_devices), false);
  for (auto i : members) {
    if (in_group[static_cast<std::size_t>(blocks[i].device)]) return;
    in_group[static_cast<std::size_t>(blocks[i].device)] = true;
    ag.group.push_back(blocks[i].device);
  }
  for (auto from : members)
    for (auto to : members) {
      if (from == to) continue;
      auto it = transfers.find(
          std::make_tuple(blocks[from].device, blocks[to].device, blocks[from].region));
      if (it == transfers.end()) return;
      ag.members.push_back(it->second);
    }
  std::sort(ag.group.begin(), ag.group.end());
  std::sort(ag.members.begin(), ag.members.end());
  for (auto m : ag.members)
    part.tasks[m].collective = local;
  ag.kind = CollectiveKind::all_gather;
  ag.tensor = t;
  ag.region = region;
  ag.bytes = Bytes(tensor_bytes(graph.tensor(t), region));
  part.collectives.push_back(std::move(ag));
  if (may_complete && members.size() == blocks.size()) part.completes = completed_reduce_scatter(t);
}

std::optional<CollectiveId> Lowering::State::completed_reduce_scatter(ir::TensorId t) const {
  ir::OpId producer = graph.producer(t);
  if (!producer.valid()) return std::nullopt;
  auto const& op_part = op_parts[producer.value()];
  std::optional<CollectiveId> rs;
  for (auto const& b : layout[t.value()]) {
    if (!b.task || b.task->part != producer.value()) return std::nullopt;
    Task const& writer = op_part.tasks[b.task->index];
    if (writer.kind != TaskKind::reduce || writer.collective == no_collective) return std::nullopt;
    if (rs && *rs != writer.collective) return std::nullopt;
    rs = writer.collective;
  }
  return rs;
}

Lowering::State::Gathers Lowering::State::gather_groups(ir::TensorId t) const {
  Gathers out;
  auto const& blocks = layout[t.value()];
  if (from_readers[t.value()] || blocks.size() < 2) return out;
  auto const devices = static_cast<std::size_t>(plan.num_devices);
  out.block_on.assign(devices, -1);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    auto& at = out.block_on[static_cast<std::size_t>(blocks[i].device)];
    if (at >= 0) return out;
    at = static_cast<int>(i);
  }
  // Per pass and device: the one region it reads beyond its own block, which holds part of it.
  std::array<std::vector<std::optional<tdl::Box>>, 2> wants;
  wants.fill(std::vector<std::optional<tdl::Box>>(devices));
  std::array<bool, 2> one_region{true, true};
  for (ir::OpId c : graph.consumers(t)) {
    Pass pass = pass_of(t, c);
    ir::Op const& op = graph.op(c);
    auto const& read = pieces[c.value()];
    for (std::size_t i = 0; i < op.inputs.size(); ++i)
      for (std::size_t k = 0; k < read.size() && op.inputs[i] == t; ++k) {
        if (read.none(k, i)) continue;
        auto d = static_cast<std::size_t>(plan.ops[c.value()].devices[k]);
        int own = out.block_on[d];
        tdl::Box const region = read.region(k, i);
        if (own >= 0 && contains(blocks[static_cast<std::size_t>(own)].region, region))
          continue;  // read where it is held: no transfer
        auto& want = wants[pass][d];
        if (own < 0 || !contains(region, blocks[static_cast<std::size_t>(own)].region) ||
            (want && *want != region))
          one_region[pass] = false;
        want = region;
      }
  }
  BlockIndex<Held> index(blocks);
  std::vector<std::uint32_t> candidates;
  for (Pass pass : {early_pass, late_pass}) {
    if (!one_region[pass]) continue;
    // Each device's region is its group's: the blocks it overlaps, each inside it, covering it,
    // their devices all reading that region.
    std::vector<bool> grouped(blocks.size(), false);
    std::vector<GatherGroup> groups;
    bool regular = true;
    for (std::size_t d = 0; d < devices && regular; ++d) {
      auto const& want = wants[pass][d];
      if (!want || grouped[static_cast<std::size_t>(out.block_on[d])]) continue;
      GatherGroup group{*want, {}};
      std::int64_t covered = 0;
      index.candidates(group.region, candidates);
      for (auto at : candidates) {
        Held const& b = blocks[at];
        if (tdl::box_volume(tdl::intersect(group.region, b.region)) == 0) continue;
        regular = regular && contains(group.region, b.region) &&
                  wants[pass][static_cast<std::size_t>(b.device)] == group.region;
        covered += tdl::box_volume(b.region);
        grouped[at] = true;
        group.blocks.push_back(at);
      }
      regular = regular && covered == tdl::box_volume(group.region);
      groups.push_back(std::move(group));
    }
    out.regular[pass] = regular && !groups.empty();
    if (out.regular[pass]) out.groups[pass] = std::move(groups);
  }
  return out;
}

std::vector<std::uint32_t> Lowering::State::gather_per_device(ir::TensorId t, Pass pass,
                                                              TensorPart& part,
                                                              std::vector<Ref> const& gate_tasks,
                                                              Gathers const& gathers) {
  auto const& blocks = layout[t.value()];
  auto const& tensor = graph.tensor(t);
  std::vector<std::uint32_t> member_of(blocks.size(), ~std::uint32_t{0});
  std::vector<bool> in_group(static_cast<std::size_t>(plan.num_devices), false);
  for (auto const& group : gathers.groups[pass]) {
    Collective ag;
    ag.kind = CollectiveKind::all_gather;
    ag.tensor = t;
    ag.region = group.region;
    ag.bytes = Bytes(tensor_bytes(tensor, ag.region));
    auto local = static_cast<CollectiveId>(part.collectives.size());
    for (auto i : group.blocks)
      in_group[static_cast<std::size_t>(blocks[i].device)] = true;
    for (auto i : group.blocks) {
      Task move;
      move.kind = TaskKind::transfer;
      move.device = blocks[i].device;
      move.tensor = t;
      move.region = ag.region;
      move.bytes = Bytes(ag.bytes.value() - tensor_bytes(tensor, blocks[i].region));
      move.collective = local;
      std::vector<Ref> deps;
      if (blocks[i].task) deps.push_back(*blocks[i].task);
      for (auto g : gate_tasks) {
        int on = part_of(g.part).tasks[g.index].device;
        bool here = on == blocks[i].device ||
                    (i == group.blocks[0] && !in_group[static_cast<std::size_t>(on)]);
        if (pass == late_pass && here) deps.push_back(g);
      }
      member_of[i] = part.add(std::move(move), deps);
      ag.members.push_back(member_of[i]);
      ag.group.push_back(blocks[i].device);
    }
    for (auto i : group.blocks)
      in_group[static_cast<std::size_t>(blocks[i].device)] = false;
    std::sort(ag.group.begin(), ag.group.end());
    part.collectives.push_back(std::move(ag));
  }
  if (pass == early_pass && gathers.groups[pass].size() == 1 &&
      gathers.groups[pass][0].blocks.size() == blocks.size())
    part.completes = completed_reduce_scatter(t);
  return member_of;
}

Lowering::Lowering(std::unique_ptr<State> state) : state_(std::move(state)) {}
Lowering::Lowering(Lowering&&) noexcept = default;
Lowering& Lowering::operator=(Lowering&&) noexcept = default;
Lowering::~Lowering() = default;

Expected<Lowering> Lowering::create(ir::Graph const& graph, plan::Plan plan,
                                    ops::OpRegistry const& registry) {
  CLEAVE_CHECK_OK(plan::validate(plan, graph, registry));
  auto state = std::make_unique<State>(graph, std::move(plan), registry);
  CLEAVE_CHECK_OK(state->lower_all());
  return Lowering(std::move(state));
}

Status Lowering::reconfigure(ir::OpId id, plan::OpConfig config) {
  State& s = *state_;
  if (id.value() >= s.num_ops)
    return Error(ErrorCode::invalid_argument,
                 "op " + std::to_string(id.value()) + " is not in the graph");
  CLEAVE_TRY(auto bound, s.registry.bind(s.graph, id));
  CLEAVE_CHECK_OK(plan::validate_op(config, s.graph.op(id), *bound, s.plan.num_devices));
  CLEAVE_TRY(auto infos, s.analyze(id, config));
  Replaced& r = s.replaced;
  r.valid = true;
  r.op = id;
  r.config = std::exchange(s.plan.ops[id.value()], std::move(config));
  r.scheduled = !s.plan.order.empty();
  r.order = std::exchange(s.plan.order, {});
  r.swaps = std::exchange(s.plan.swaps, {});
  r.pieces = std::move(s.pieces[id.value()]);
  ir::Op const& op = s.graph.op(id);
  r.layouts.clear();
  r.layouts.emplace_back(op.outputs[0], s.layout[op.outputs[0].value()]);
  if (auto placed = s.places[id.value()])
    r.layouts.emplace_back(*placed, s.layout[placed->value()]);
  r.rebuilt.assign(s.offset.size(), false);
  r.rebuilt[id.value()] = true;
  std::vector<ir::TensorId> touched;
  auto touch = [&](ir::TensorId t) {
    if (r.rebuilt[s.part_id(t, early_pass)]) return;
    touched.push_back(t);
    for (Pass pass : {early_pass, late_pass})
      r.rebuilt[s.part_id(t, pass)] = true;
  };
  for (auto t : op.inputs)
    touch(t);
  touch(op.outputs[0]);
  if (auto placed = s.places[id.value()]) touch(*placed);
  // Late parts that wait for this op's output (its writers may have changed).
  for (auto t : s.gates[id.value()])
    touch(t);
  // The parts the assembly emits anew are compared with their old tasks, whose lists must be
  // current: they are brought up to date while the old part data is still in place.
  auto emit = s.emitted(r.rebuilt);
  s.resolve_stale(&emit);
  r.op_part = std::move(s.op_parts[id.value()]);
  s.build_op_part(id, std::move(infos));
  r.tensor_parts.clear();
  for (auto t : touched) {
    for (Pass pass : {early_pass, late_pass})
      r.tensor_parts.emplace_back(s.part_id(t, pass), std::move(s.tensor_part(t, pass)));
    s.build_tensor_part(t);
  }
  if (!r.scheduled) {
    s.assemble(&r.rebuilt);
    return Status::ok();
  }
  // The program had the schedule's edges and swap tasks, which the parts do not know: it is
  // assembled anew, and no task keeps its old id.
  s.program.ordering.clear();
  s.assemble(nullptr);
  s.previous.assign(s.program.tasks.size(), std::nullopt);
  return Status::ok();
}

void Lowering::undo() {
  State& s = *state_;
  Replaced& r = s.replaced;
  CLEAVE_ASSERT(r.valid, "undo without a reconfigure to undo");
  r.valid = false;
  std::swap(s.plan.ops[r.op.value()], r.config);
  std::swap(s.pieces[r.op.value()], r.pieces);
  std::swap(s.op_parts[r.op.value()], r.op_part);
  for (auto& [t, held] : r.layouts)
    std::swap(s.layout[t.value()], held);
  for (auto& [id, part] : r.tensor_parts)
    std::swap(s.tensor_parts[id - s.num_ops], part);
  if (!r.scheduled) {
    s.assemble(&r.rebuilt);
    return;
  }
  // The schedule the reconfigure dropped comes back with the program it applied to.
  s.plan.order = std::move(r.order);
  s.plan.swaps = std::move(r.swaps);
  s.program.ordering.clear();
  s.assemble(nullptr);
  Status applied = apply_schedule(s.graph, s.plan, s.program);
  CLEAVE_ASSERT(applied.is_ok(), "the schedule applied before the reconfigure applies again");
  s.previous.assign(s.program.tasks.size(), std::nullopt);
}

Program const& Lowering::program() const {
  state_->resolve_stale();
  return state_->program;
}
Program const& Lowering::program_in_flux() const {
  return state_->program;
}
std::vector<TaskId> const& Lowering::current_deps(TaskId task) const {
  return state_->current_deps(task);
}
plan::Plan const& Lowering::plan() const {
  return state_->plan;
}
std::vector<std::optional<TaskId>> const& Lowering::previous_ids() const {
  return state_->previous;
}

Expected<Program> lower(ir::Graph const& graph, plan::Plan const& plan,
                        ops::OpRegistry const& registry, CollectiveForm form) {
  CLEAVE_CHECK_OK(plan::validate(plan, graph, registry));
  Lowering::State state(graph, plan, registry);
  state.form = form;
  state.once = true;
  CLEAVE_CHECK_OK(state.lower_all());
  return std::move(state.program);
}

}  // namespace cleave::lower
