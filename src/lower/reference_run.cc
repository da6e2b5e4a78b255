#include "lower/reference_run.h"

#include <algorithm>
#include <queue>

#include "support/assert.h"

namespace cleave::lower {
namespace {

constexpr TaskId initial_task = ~TaskId{0};

struct Block {
  ir::TensorId tensor;
  tdl::TensorData data;
  bool partial = false;
  TaskId task = initial_task;  // the task that wrote it
};

bool contains(tdl::Box const& outer, tdl::Box const& inner) {
  for (std::size_t d = 0; d < outer.size(); ++d)
    if (inner[d].lo < outer[d].lo || inner[d].hi > outer[d].hi) return false;
  return true;
}

// Copies into `out` every element of `from` inside out.region; marks them in `covered`.
void copy_into(tdl::TensorData& out, std::vector<bool>& covered, tdl::TensorData const& from) {
  tdl::Box part = tdl::intersect(out.region, from.region);
  for (auto const& i : part)
    if (i.empty()) return;
  tdl::TensorData piece = tdl::extract(from, part);
  tdl::write_region(out, piece);
  // Mark coverage by writing ones into a parallel buffer.
  tdl::TensorData ones = piece;
  std::fill(ones.values.begin(), ones.values.end(), 1.0);
  tdl::TensorData mask{out.shape, out.region, std::vector<double>(out.values.size(), 0.0)};
  tdl::write_region(mask, ones);
  for (std::size_t k = 0; k < mask.values.size(); ++k)
    if (mask.values[k] != 0) covered[k] = true;
}

class Runner {
 public:
  Runner(ir::Graph const& g, Program const& p, ops::OpRegistry const& r)
      : graph_(g), program_(p), registry_(r), held_(static_cast<std::size_t>(p.num_devices)) {}

  Expected<std::vector<tdl::TensorData>>
  run(std::map<std::string, tdl::TensorData, std::less<>> const& sources) {
    for (auto const& b : program_.initial) {
      ir::Tensor const& t = graph_.tensor(b.tensor);
      auto it = sources.find(t.name);
      if (it == sources.end())
        return Error(ErrorCode::not_found, "no value given for source tensor '" + t.name + "'");
      (b.on_host ? host_ : on(b.device)).push_back({b.tensor, tdl::extract(it->second, b.region)});
    }
    for (TaskId id : run_order()) {
      Task const& task = program_.tasks[id];
      Status st = task.kind == TaskKind::compute    ? compute(id, task)
                  : task.kind == TaskKind::transfer ? move(id, task)
                  : task.kind == TaskKind::reduce   ? reduce(id, task)
                  : task.kind == TaskKind::swap_out ? swap_out(id, task)
                                                    : swap_in(id, task);
      if (!st) return std::move(st).error().with_context("in task " + std::to_string(id));
    }
    return assemble();
  }

 private:
  // The task list's order where it has no ordering edges; else the first task in it whose
  // dependencies and ordering edges are done, each time (a swap-out must wait for the readers the
  // device's order runs before it).
  std::vector<TaskId> run_order() const {
    auto const& tasks = program_.tasks;
    std::vector<TaskId> order(tasks.size());
    if (program_.ordering.empty()) {
      for (TaskId i = 0; i < tasks.size(); ++i)
        order[i] = i;
      return order;
    }
    std::vector<std::vector<TaskId>> dependents(tasks.size());
    std::vector<std::size_t> waiting(tasks.size(), 0);
    for (TaskId i = 0; i < tasks.size(); ++i)
      for (TaskId d : tasks[i].deps) {
        dependents[d].push_back(i);
        ++waiting[i];
      }
    for (auto const& e : program_.ordering) {
      dependents[e.after].push_back(e.task);
      ++waiting[e.task];
    }
    std::priority_queue<TaskId, std::vector<TaskId>, std::greater<>> ready;
    for (TaskId i = 0; i < tasks.size(); ++i)
      if (waiting[i] == 0) ready.push(i);
    order.clear();
    while (!ready.empty()) {
      TaskId id = ready.top();
      ready.pop();
      order.push_back(id);
      for (TaskId u : dependents[id])
        if (--waiting[u] == 0) ready.push(u);
    }
    CLEAVE_ASSERT(order.size() == tasks.size(), "the program's dependencies form a cycle");
    return order;
  }

  std::vector<Block>& on(int device) { return held_[static_cast<std::size_t>(device)]; }

  // The whole-valued region of tensor t on device d, from the blocks the device holds.
  Expected<tdl::TensorData> gather(ir::TensorId t, tdl::Box const& region, int d) {
    tdl::TensorData out = tdl::TensorData::zeros(graph_.tensor(t).type.shape, region);
    std::vector<bool> covered(out.values.size(), false);
    for (auto const& b : on(d))
      if (b.tensor == t && !b.partial) copy_into(out, covered, b.data);
    for (bool c : covered)
      if (!c)
        return Error(ErrorCode::invalid_argument,
                     "device " + std::to_string(d) + " lacks part of " + graph_.tensor(t).name +
                         tdl::box_to_string(region) + " that a task reads");
    return out;
  }

  Status compute(TaskId id, Task const& task) {
    ir::Op const& op = graph_.op(task.op);
    CLEAVE_TRY(auto bound, registry_.bind(graph_, task.op));
    CLEAVE_TRY(tdl::PieceInfo info, tdl::analyze_piece(*bound, task.iteration));
    std::vector<tdl::TensorData> inputs;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      if (info.inputs[i].empty()) {
        inputs.push_back(tdl::TensorData::zeros(graph_.tensor(op.inputs[i]).type.shape,
                                                tdl::Box(info.inputs[i].box.size())));
        continue;
      }
      CLEAVE_TRY(tdl::TensorData in, gather(op.inputs[i], info.inputs[i].box, task.device));
      inputs.push_back(std::move(in));
    }
    CLEAVE_TRY(tdl::TensorData out, tdl::evaluate(*bound, task.iteration, inputs));
    on(task.device).push_back({task.tensor, std::move(out), task.partial, id});
    return Status::ok();
  }

  Status move(TaskId id, Task const& task) {
    if (task.partial) {
      // A part of a partial result, from the task that computed it.
      for (auto const& b : on(task.source_device)) {
        if (b.task == task.deps.at(0)) {
          on(task.device).push_back({task.tensor, tdl::extract(b.data, task.region), true, id});
          return Status::ok();
        }
      }
      return Error(ErrorCode::invalid_argument, "the partial result to move is not on its device");
    }
    CLEAVE_TRY(tdl::TensorData part, gather(task.tensor, task.region, task.source_device));
    on(task.device).push_back({task.tensor, std::move(part), false, id});
    return Status::ok();
  }

  Status reduce(TaskId id, Task const& task) {
    tdl::TensorData out =
        tdl::TensorData::zeros(graph_.tensor(task.tensor).type.shape, task.region);
    std::fill(out.values.begin(), out.values.end(), tdl::reducer_identity(task.reducer));
    for (TaskId dep : task.deps) {
      bool found = false;
      for (auto const& b : on(task.device)) {
        if (b.task != dep) continue;
        CLEAVE_ASSERT(contains(b.data.region, task.region) && b.partial, "reduce input mismatch");
        tdl::reduce_into(out, tdl::extract(b.data, task.region), task.reducer);
        found = true;
      }
      if (!found)
        return Error(ErrorCode::invalid_argument,
                     "a partial result to reduce is not on device " + std::to_string(task.device));
    }
    on(task.device).push_back({task.tensor, std::move(out), false, id});
    return Status::ok();
  }

  // Copies the region to the host store, in place of the copy an earlier swap-out of it left
  // there, and frees the device's blocks of the tensor inside it.
  Status swap_out(TaskId id, Task const& task) {
    CLEAVE_TRY(tdl::TensorData part, gather(task.tensor, task.region, task.device));
    auto inside = [&](Block const& b) {
      return b.tensor == task.tensor && !b.partial && contains(task.region, b.data.region);
    };
    std::erase_if(host_, inside);
    host_.push_back({task.tensor, std::move(part), false, id});
    std::erase_if(on(task.device), inside);
    return Status::ok();
  }

  Status swap_in(TaskId id, Task const& task) {
    tdl::TensorData out =
        tdl::TensorData::zeros(graph_.tensor(task.tensor).type.shape, task.region);
    std::vector<bool> covered(out.values.size(), false);
    for (auto const& b : host_)
      if (b.tensor == task.tensor) copy_into(out, covered, b.data);
    if (!std::all_of(covered.begin(), covered.end(), [](bool c) { return c; }))
      return Error(ErrorCode::invalid_argument,
                   "the host holds no copy of " + graph_.tensor(task.tensor).name +
                       tdl::box_to_string(task.region) + " to swap in");
    on(task.device).push_back({task.tensor, std::move(out), false, id});
    return Status::ok();
  }

  Expected<std::vector<tdl::TensorData>> assemble() {
    std::vector<tdl::TensorData> values(graph_.num_tensors());
    for (auto const& t : graph_.tensors()) {
      tdl::Box all = tdl::whole_box(t.type.shape);
      tdl::TensorData out = tdl::TensorData::zeros(t.type.shape, all);
      std::vector<bool> covered(out.values.size(), false);
      for (auto const& device : held_)
        for (auto const& b : device)
          if (b.tensor == t.id && !b.partial) copy_into(out, covered, b.data);
      for (auto const& b : host_)
        if (b.tensor == t.id) copy_into(out, covered, b.data);
      bool whole = std::all_of(covered.begin(), covered.end(), [](bool c) { return c; });
      if (!whole && graph_.producer(t.id).valid())
        return Error(ErrorCode::invalid_argument,
                     "no device holds all of " + t.name + " at the end");
      values[t.id.value()] = std::move(out);
    }
    return values;
  }

  ir::Graph const& graph_;
  Program const& program_;
  ops::OpRegistry const& registry_;
  std::vector<std::vector<Block>> held_;
  std::vector<Block> host_;  // host copies (one store: the reference run does not know nodes)
};

}  // namespace

Expected<std::vector<tdl::TensorData>>
run_reference(ir::Graph const& graph, Program const& program, ops::OpRegistry const& registry,
              std::map<std::string, tdl::TensorData, std::less<>> const& sources) {
  return Runner(graph, program, registry).run(sources);
}

}  // namespace cleave::lower
