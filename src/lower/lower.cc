#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "lower/program.h"
#include "support/assert.h"

namespace cleave::lower {
namespace {

tdl::Box intersect(tdl::Box const& a, tdl::Box const& b) {
  tdl::Box out(a.size());
  for (std::size_t d = 0; d < a.size(); ++d)
    out[d] = {std::max(a[d].lo, b[d].lo), std::min(a[d].hi, b[d].hi)};
  return out;
}

bool empty(tdl::Box const& b) {
  for (auto const& i : b)
    if (i.empty()) return true;
  return false;
}

std::int64_t tensor_bytes(ir::Tensor const& t, tdl::Box const& region) {
  return tdl::box_volume(region) * ir::dtype_bytes(t.type.dtype);
}

class Lowering {
 public:
  Lowering(ir::Graph const& g, plan::Plan const& p, ops::OpRegistry const& r)
      : graph_(g), plan_(p), registry_(r), layout_(g.num_tensors()),
        from_readers_(g.num_tensors(), false) {}

  Expected<Program> run() {
    CLEAVE_CHECK_OK(plan::validate(plan_, graph_, registry_));
    program_.num_devices = plan_.num_devices;
    CLEAVE_CHECK_OK(place_sources());
    for (ir::OpId id : graph_.topo_order())
      CLEAVE_CHECK_OK(lower_op(id));
    return std::move(program_);
  }

 private:
  // A full (not partial) block of a tensor on a device, and the task that wrote it (none for a
  // block held before the step).
  struct Held {
    tdl::Box region;
    int device;
    std::optional<TaskId> task;
  };

  struct Pieces {
    std::vector<tdl::PieceInfo> infos;
  };

  Expected<Pieces> pieces_of(ir::OpId id) {
    CLEAVE_TRY(auto bound, registry_.bind(graph_, id));
    Pieces p;
    for (auto const& box : plan::piece_boxes(*bound, plan_.ops[id.value()])) {
      CLEAVE_TRY(tdl::PieceInfo info, tdl::analyze_piece(*bound, box));
      if (!info.output_exact)
        return Error(ErrorCode::invalid_argument,
                     "plan for op '" + graph_.op(id).name + "': piece " + tdl::box_to_string(box) +
                         " writes a non-rectangular region; split that dimension evenly with "
                         "another degree or not at all");
      p.infos.push_back(std::move(info));
    }
    return p;
  }

  // The op that writes a weight's or optimizer state's next value (its update), if any.
  std::optional<ir::OpId> update_of(ir::TensorId t) const {
    for (ir::OpId c : graph_.consumers(t)) {
      ir::Op const& op = graph_.op(c);
      auto role = graph_.tensor(op.outputs[0]).role;
      bool update = op.forward.valid() && !op.inputs.empty() && op.inputs[0] == t &&
                    (role == ir::TensorRole::weight || role == ir::TensorRole::optimizer_state);
      if (update) return c;
    }
    return std::nullopt;
  }

  Status place_sources() {
    for (auto const& t : graph_.tensors()) {
      if (graph_.producer(t.id).valid()) continue;
      auto update = update_of(t.id);
      if (!update) {
        from_readers_[t.id.value()] = true;
        continue;
      }
      CLEAVE_TRY(Pieces p, pieces_of(*update));
      auto const& devices = plan_.ops[update->value()].devices;
      for (std::size_t k = 0; k < p.infos.size(); ++k) {
        int dev = devices[k];
        program_.initial.push_back({t.id, p.infos[k].output, dev});
        layout_[t.id.value()].push_back({p.infos[k].output, dev, std::nullopt});
      }
    }
    return Status::ok();
  }

  TaskId add(Task task) {
    program_.tasks.push_back(std::move(task));
    return static_cast<TaskId>(program_.tasks.size() - 1);
  }

  TaskId transfer(ir::TensorId t, tdl::Box const& region, int from, int to,
                  std::optional<TaskId> after, bool partial = false) {
    Task task;
    task.kind = TaskKind::transfer;
    task.device = to;
    task.source_device = from;
    task.tensor = t;
    task.region = region;
    task.partial = partial;
    if (after) task.deps.push_back(*after);
    task.bytes = Bytes(tensor_bytes(graph_.tensor(t), region));
    return add(std::move(task));
  }

  // Makes `region` of tensor t available on device d; returns the tasks a reader must wait for.
  std::vector<TaskId> deliver(ir::TensorId t, tdl::Box const& region, int d) {
    std::vector<TaskId> deps;
    if (from_readers_[t.value()]) {
      auto key = std::make_tuple(t.value(), d, tdl::box_to_string(region));
      if (delivered_.insert(key).second) program_.initial.push_back({t, region, d});
      return deps;
    }
    std::int64_t covered = 0;
    for (auto const& held : layout_[t.value()]) {
      tdl::Box part = intersect(region, held.region);
      if (empty(part)) continue;
      covered += tdl::box_volume(part);
      if (held.device == d) {
        if (held.task) deps.push_back(*held.task);
        continue;
      }
      auto key = std::make_tuple(t.value(), held.device, d, tdl::box_to_string(part));
      auto it = transfers_.find(key);
      if (it == transfers_.end())
        it = transfers_.emplace(key, transfer(t, part, held.device, d, held.task)).first;
      deps.push_back(it->second);
    }
    CLEAVE_ASSERT(covered == tdl::box_volume(region),
                  "a tensor's blocks do not cover a read region");
    return deps;
  }

  // The dimension along which reduced partial results of tensor t (over `region`) are cut: the
  // first dimension along which a consumer's pieces read t in parts, so that the parts land
  // where they are read next (Megatron's reduce-scatter onto the sequence-parallel layout,
  // ZeRO's onto the optimizer's shards); else the longest dimension.
  Expected<std::size_t> cut_dimension(ir::TensorId t, tdl::Box const& region) {
    for (ir::OpId c : graph_.consumers(t)) {
      ir::Op const& op = graph_.op(c);
      CLEAVE_TRY(Pieces p, pieces_of(c));
      for (std::size_t d = 0; d < region.size(); ++d) {
        if (region[d].size() < 2) continue;
        for (auto const& info : p.infos)
          for (std::size_t i = 0; i < op.inputs.size(); ++i) {
            if (op.inputs[i] != t || info.inputs[i].empty()) continue;
            tdl::Box part = intersect(info.inputs[i].box, region);
            if (!empty(part) && part[d] != region[d]) return d;
          }
      }
    }
    std::size_t longest = 0;
    for (std::size_t d = 1; d < region.size(); ++d)
      if (region[d].size() > region[longest].size()) longest = d;
    return longest;
  }

  Status lower_op(ir::OpId id) {
    ir::Op const& op = graph_.op(id);
    CLEAVE_TRY(Pieces p, pieces_of(id));
    auto const& devices = plan_.ops[id.value()].devices;
    ir::TensorId out = op.outputs[0];
    std::vector<TaskId> computes;
    for (std::size_t k = 0; k < p.infos.size(); ++k) {
      auto const& info = p.infos[k];
      Task task;
      task.kind = TaskKind::compute;
      task.device = devices[k];
      task.op = id;
      task.piece = static_cast<std::uint32_t>(k);
      task.iteration = info.iter_box;
      task.tensor = out;
      task.region = info.output;
      task.partial = info.partial;
      task.reducer = info.reducer;
      for (std::size_t i = 0; i < op.inputs.size(); ++i) {
        if (info.inputs[i].empty()) continue;
        for (TaskId dep : deliver(op.inputs[i], info.inputs[i].box, task.device))
          task.deps.push_back(dep);
      }
      task.flops = info.flops;
      task.bytes = Bytes(info.bytes_read.value() + info.bytes_written.value());
      computes.push_back(add(std::move(task)));
    }
    // Pieces that differ only in reduction dimensions write the same region: their partial
    // results are combined where the group's devices are (below).
    std::map<std::string, std::vector<std::size_t>> groups;
    std::vector<std::string> group_order;
    for (std::size_t k = 0; k < p.infos.size(); ++k) {
      std::string key = tdl::box_to_string(p.infos[k].output);
      if (!groups.count(key)) group_order.push_back(key);
      groups[key].push_back(k);
    }
    for (auto const& key : group_order) {
      auto const& members = groups[key];
      auto const& first = p.infos[members[0]];
      if (!first.partial) {
        layout_[out.value()].push_back({first.output, devices[members[0]], computes[members[0]]});
        continue;
      }
      // Reduce-scatter: the region is cut into one part per distinct device of the group (along
      // cut_dimension) and each device combines one part, so the partial results cross the links
      // once each, as in a ring reduce-scatter, instead of converging on one device.
      std::vector<int> targets;
      for (std::size_t k : members)
        if (std::find(targets.begin(), targets.end(), devices[k]) == targets.end())
          targets.push_back(devices[k]);
      CLEAVE_TRY(std::size_t longest, cut_dimension(out, first.output));
      std::int64_t cuts = first.output.empty()
                              ? 1
                              : std::min<std::int64_t>(static_cast<std::int64_t>(targets.size()),
                                                       first.output[longest].size());
      auto parts = first.output.empty()
                       ? std::vector<tdl::Box>{first.output}
                       : tdl::split_evenly(first.output, static_cast<int>(longest), cuts);
      for (std::size_t j = 0; j < parts.size(); ++j) {
        int target = targets[j];
        Task reduce;
        reduce.kind = TaskKind::reduce;
        reduce.device = target;
        reduce.op = id;
        reduce.tensor = out;
        reduce.region = parts[j];
        reduce.reducer = first.reducer;
        for (std::size_t k : members) {
          int dev = devices[k];
          reduce.deps.push_back(dev == target ? computes[k]
                                              : transfer(out, parts[j], dev, target, computes[k],
                                                         /*partial=*/true));
        }
        reduce.flops =
            Flops(tdl::box_volume(parts[j]) * static_cast<std::int64_t>(members.size() - 1));
        layout_[out.value()].push_back({parts[j], target, add(std::move(reduce))});
      }
    }
    return Status::ok();
  }

  ir::Graph const& graph_;
  plan::Plan const& plan_;
  ops::OpRegistry const& registry_;
  Program program_;
  std::vector<std::vector<Held>> layout_;
  std::vector<bool> from_readers_;  // sources delivered where they are read (inputs)
  std::set<std::tuple<std::uint32_t, int, std::string>> delivered_;
  std::map<std::tuple<std::uint32_t, int, int, std::string>, TaskId> transfers_;
};

}  // namespace

Expected<Program> lower(ir::Graph const& graph, plan::Plan const& plan,
                        ops::OpRegistry const& registry) {
  return Lowering(graph, plan, registry).run();
}

}  // namespace cleave::lower
