// The lowering's state (lowering.h's Lowering::State), internal to src/lower: the parts a program
// is assembled from and the functions that build them (lowering.cc) and assemble them
// (assemble.cc).
#pragma once

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "lower/lowering.h"

namespace cleave::lower {

inline std::int64_t tensor_bytes(ir::Tensor const& t, tdl::Box const& region) {
  return tdl::box_volume(region) * ir::dtype_bytes(t.type.dtype);
}

struct BoxLess {
  bool operator()(tdl::Box const& a, tdl::Box const& b) const { return box_less(a, b); }
};

// A transfer of a tensor part: (source device, destination device, region).
using MoveKey = std::tuple<int, int, tdl::Box>;
struct MoveKeyLess {
  bool operator()(MoveKey const& a, MoveKey const& b) const {
    if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) < std::get<0>(b);
    if (std::get<1>(a) != std::get<1>(b)) return std::get<1>(a) < std::get<1>(b);
    return box_less(std::get<2>(a), std::get<2>(b));
  }
};
using Moves = std::map<MoveKey, std::uint32_t, MoveKeyLess>;

// A task of a part: parts are numbered ops first (part = op id), then tensors' early parts
// (num_ops + id), then their late parts (num_ops + num_tensors + id; see Pass).
struct Ref {
  std::uint32_t part = 0;
  std::uint32_t index = 0;
};

// A full (not partial) block of a tensor on a device, and the task that wrote it (none for a
// block held before the step).
struct Held {
  tdl::Box region;
  int device = 0;
  std::optional<Ref> task;
};

// Lists of references, one per item (a part's tasks, a read's pieces), in one array: a list on
// the heap each was a tenth of the lowering's peak (issue 21).
struct RefLists {
  std::vector<std::uint32_t> first{0};  // item i's are refs[first[i]] .. refs[first[i + 1]]
  std::vector<Ref> refs;
  std::size_t size() const { return first.size() - 1; }
  std::span<Ref const> operator[](std::size_t i) const {
    return {refs.data() + first[i], refs.data() + first[i + 1]};
  }
  // Ends the last item's list (the next refs are the next item's).
  void close() { first.push_back(static_cast<std::uint32_t>(refs.size())); }
};

// Tasks before assembly: dependencies as references, a member's `collective` as an index into
// the part's collectives, whose members are indices into the part's tasks.
struct Part {
  std::vector<Task> tasks;
  RefLists deps;  // per task; compute tasks take theirs from tensor parts
  std::vector<Collective> collectives;
  std::uint32_t add(Task task, std::vector<Ref> const& deps_of_task) {
    tasks.push_back(std::move(task));
    deps.refs.insert(deps.refs.end(), deps_of_task.begin(), deps_of_task.end());
    deps.close();
    return static_cast<std::uint32_t>(tasks.size() - 1);
  }
};

// What one input of one consumer waits for, per piece of the consumer.
struct Read {
  ir::OpId op;
  std::size_t input = 0;
  RefLists pieces;
};

// A tensor has two parts, one per pass of its readers. Under FetchPolicy::per_pass (the tensor's
// policy, plan::fetch_policy; under `shared` every read is in the early part) its late part holds
// what backward and optimizer ops (op.forward valid) read of a tensor that the forward pass made or
// that was held before the step (a forward activation, a weight); its early part everything else.
// Fetches are shared among the readers of one part only: the backward pass fetches again what the
// forward pass fetched, as each op's input conversion is its own communication in Tofu and ZeRO-3
// re-gathers weights for the backward pass, instead of keeping the forward copy alive for the
// whole step (a block lives until its last reader ends, lifetime.h; issue 5). The late part's
// transfers also wait for the gate: the tasks that wrote the output of the op that produces its
// first reader's gradient input, so that they run in the backward pass, just before that reader,
// and not as soon as their source exists.
enum Pass : std::uint32_t { early_pass, late_pass };

struct TensorPart : Part {
  std::vector<Read> reads;
  std::vector<InitialBlock> initial;
  // Set when this part's all-gather (collectives[0]) completes reduce-scatter `completes` of the
  // producer's part: the assembly merges the two into one all-reduce (early parts only).
  std::optional<std::uint32_t> completes;
};

// The element at `at` of `list`, appended where the list ends there: assembly writes over the
// old program's collectives and blocks, reusing their lists' storage.
template <typename T> T& slot(std::vector<T>& list, std::size_t at) {
  if (at == list.size()) list.emplace_back();
  return list[at];
}

// What the lowering keeps of an op's pieces once its part is built (its compute tasks have the
// rest of their analysis): the region each piece reads of each input, for the tensor parts'
// fetches. Issue 21: the whole analysis of every piece of every op, held until the program was
// assembled, was half of the lowering's memory; the reads, a box on the heap each, were still a
// tenth of its peak: they are one list of intervals per op.
struct PieceReads {
  std::size_t count = 0;                 // pieces
  std::vector<std::uint32_t> first;      // per input, where its box starts in a piece's run; then
                                         // the run's length (the inputs' ranks summed)
  std::vector<tdl::Interval> intervals;  // piece k's run at k * first.back()
  std::size_t size() const { return count; }
  std::span<tdl::Interval const> box(std::size_t piece, std::size_t input) const {
    auto const* run = intervals.data() + piece * first.back();
    return {run + first[input], run + first[input + 1]};
  }
  // Whether the piece reads nothing of the input (as tdl::Region::empty).
  bool none(std::size_t piece, std::size_t input) const {
    auto b = box(piece, input);
    return std::any_of(b.begin(), b.end(), [](tdl::Interval i) { return i.empty(); });
  }
  tdl::Box region(std::size_t piece, std::size_t input) const {
    auto b = box(piece, input);
    return tdl::Box(b.begin(), b.end());
  }
};

// What reconfigure() replaced, for undo(): the op's configuration, pieces and part, the layouts its
// part wrote, the tensor parts rebuilt and which parts were.
struct Replaced {
  bool valid = false;
  ir::OpId op;
  plan::OpConfig config;
  PieceReads pieces;
  Part op_part;
  std::vector<std::pair<ir::TensorId, std::vector<Held>>> layouts;
  std::vector<std::pair<std::uint32_t, TensorPart>> tensor_parts;  // by part id
  std::vector<bool> rebuilt;
  // The plan's schedule, which a reconfigure drops (the program is then assembled anew).
  bool scheduled = false;
  std::vector<std::vector<plan::PieceRef>> order;
  std::vector<plan::Swap> swaps;
};

struct Lowering::State {
  ir::Graph const& graph;
  ops::OpRegistry const& registry;
  plan::Plan plan;
  std::uint32_t num_ops = 0;
  std::vector<PieceReads> pieces;         // per op
  std::vector<std::vector<Held>> layout;  // per tensor
  std::vector<bool> from_readers;         // sources delivered where they are read (inputs)
  // Per tensor: its fetch policy (plan::fetch_policy), set by build().
  std::vector<plan::FetchPolicy> fetch;
  std::vector<std::optional<ir::TensorId>> places;  // per op: the source its update places
  std::vector<Part> op_parts;
  std::vector<TensorPart> tensor_parts;  // early parts by tensor id, then late parts
  std::uint32_t num_tensors = 0;
  std::vector<std::optional<ir::OpId>> gate;     // per tensor: whose output its late part waits for
  std::vector<std::vector<ir::TensorId>> gates;  // per op: the tensors whose late part it gates
  std::vector<std::uint32_t> order;              // parts in assembly order
  std::vector<TaskId> offset;                    // per part, in `program`
  std::vector<CollectiveId> first_collective;    // per part, in `program`
  std::vector<std::size_t> first_initial;        // per part, in `program`
  Program program;
  // Per part: its tasks moved in an assembly after a reconfigure without their dependency lists
  // being renumbered (assemble()); resolve_stale() brings them up to date.
  std::vector<bool> stale;
  bool any_stale = false;
  std::vector<std::optional<TaskId>> previous;
  Replaced replaced;
  CollectiveForm form = CollectiveForm::explicit_transfers;
  // Set by lower(), whose state serves once: the pieces' reads are dropped once the tensor parts
  // are built (issue 21: a tenth of the lowering's peak), and the parts' tasks move into the
  // program (assemble_once). A Lowering keeps both for reconfigure().
  bool once = false;

  State(ir::Graph const& g, plan::Plan p, ops::OpRegistry const& r)
      : graph(g), registry(r), plan(std::move(p)), num_ops(static_cast<std::uint32_t>(g.num_ops())),
        pieces(g.num_ops()), layout(g.num_tensors()), from_readers(g.num_tensors(), false),
        places(g.num_ops()), op_parts(g.num_ops()), tensor_parts(2 * g.num_tensors()),
        num_tensors(static_cast<std::uint32_t>(g.num_tensors())), gate(g.num_tensors()),
        gates(g.num_ops()) {}

  std::uint32_t part_id(ir::TensorId t, Pass pass) const {
    return num_ops + (pass == late_pass ? num_tensors : 0) + t.value();
  }
  ir::TensorId tensor_of(std::uint32_t part) const {
    return ir::TensorId((part - num_ops) % num_tensors);
  }
  TensorPart& tensor_part(ir::TensorId t, Pass pass) {
    return tensor_parts[part_id(t, pass) - num_ops];
  }
  Part const& part_of(std::uint32_t id) const {
    return id < num_ops ? op_parts[id] : static_cast<Part const&>(tensor_parts[id - num_ops]);
  }
  Part& part_of(std::uint32_t id) {
    return id < num_ops ? op_parts[id] : static_cast<Part&>(tensor_parts[id - num_ops]);
  }
  // A part's task's id in `program` (its part placed at offset).
  TaskId resolve(Ref r) const { return offset[r.part] + r.index; }

  // Which part of t op c's read belongs to (see Pass). Inputs are delivered where they are read
  // and have one part.
  Pass pass_of(ir::TensorId t, ir::OpId c) const;

  Expected<std::vector<tdl::PieceInfo>> analyze(ir::OpId id, plan::OpConfig const& config);

  Status build();

  // The whole program of the plan, its schedule applied.
  Status lower_all();

  // Builds op `id`'s part from its pieces' analysis (analyze()), keeping what they read.
  void build_op_part(ir::OpId id, std::vector<tdl::PieceInfo> infos);

  // A transfer of the partial results of `sources` pieces for `region` to device `target` (its
  // source device, where there is one, is the caller's to set); `piece` is the op's piece sent.
  Task partial_move(ir::OpId id, std::uint32_t piece, int target, tdl::Box const& region,
                    std::size_t sources) const;

  // Reduce-scatter: the region is cut into one part per distinct device of the group (along
  // scatter_dimension) and each device combines one part, so the partial results cross the links
  // once each, as in a ring reduce-scatter, instead of converging on one device. It is recorded as
  // a collective when it is one: at least two members, one per device, and a part per device.
  void reduce_scatter(ir::OpId id, Part& part, std::vector<tdl::PieceInfo> const& infos,
                      std::vector<std::uint32_t> const& members);

  // Builds both parts of tensor t (see Pass).
  void build_tensor_part(ir::TensorId t);

  // An all-gather among t's blocks `members` (on distinct devices, at least two), whose union is
  // `region`: when the part's transfers carry each of those blocks whole to every other one's
  // device, they become its members. Other transfers stay point to point. When the members are
  // every block and each is a part of one reduce-scatter, the two are one all-reduce (early parts
  // only: the late part runs in the backward pass, long after the reduce-scatter).
  void all_gather(ir::TensorId t, TensorPart& part, Moves const& transfers,
                  std::span<std::uint32_t const> members, tdl::Box const& region,
                  bool may_complete);

  // The reduce-scatter of t's producer whose parts are all of t's blocks, if one is: an
  // all-gather of the blocks completes it into an all-reduce.
  std::optional<CollectiveId> completed_reduce_scatter(ir::TensorId t) const;

  // A group of t's blocks gathered among their devices: `region` is exactly their union, and
  // each of their devices reads it (issue 21: Tofu's pieces gather each weight region from the
  // devices of the other pieces that read it). The whole-tensor all-gather is one group.
  struct GatherGroup {
    tdl::Box region;
    std::vector<std::uint32_t> blocks;  // ascending
  };
  // Which passes of t fetch only through gathers within disjoint groups of its blocks: t's blocks
  // lie on distinct devices (at least two), and every piece of the pass that reads more than its
  // own device's block reads the whole of its device's group's region and nothing else. The
  // explicit form's transfers of the pass are then every pair of each group's blocks, and every
  // reading piece waits for all its device receives.
  struct Gathers {
    std::array<bool, 2> regular{};
    std::array<std::vector<GatherGroup>, 2> groups;  // per pass, where regular
    std::vector<int> block_on;                       // per device: the index of its block, or -1
  };
  Gathers gather_groups(ir::TensorId t) const;

  // The explicit form's all-gathers of a pass of t: one per group where the pass is regular
  // (gather_groups), else one of the whole tensor where its transfers amount to one.
  void gather_explicitly(ir::TensorId t, Pass pass, TensorPart& part, Moves const& transfers,
                         Gathers const& gathers);

  // The groups of a regular pass of t (gather_groups) lowered per device: per group an all-gather
  // with one member per block, in the blocks' order, on the block's device, receiving the group's
  // other blocks. A member waits for its own block's writer; a late part's members also for the
  // gate's writers on their device (those on no member's device, the group's first member), so
  // that each collective waits for all of them as the explicit form's transfers do. Returns per
  // block its member's index in the part (blocks in no group: none).
  std::vector<std::uint32_t> gather_per_device(ir::TensorId t, Pass pass, TensorPart& part,
                                               std::vector<Ref> const& gate_tasks,
                                               Gathers const& gathers);

  // Assembles `program` from the parts. With `rebuilt` (per part, after a reconfigure), the
  // program is updated in place: parts before the first one that changed keep their tasks and
  // ids; parts after it that did not change move their tasks along (their dependencies shifted),
  // without copying them; and previous_ids is recorded.
  void assemble(std::vector<bool> const* rebuilt);

  // The parts that assemble(&rebuilt) emits from their part data: the rebuilt ones, the ops whose
  // inputs' parts were rebuilt (their compute tasks wait for other tasks), the producers of
  // rebuilt tensor parts (their reduce-scatter may now be, or no longer be, an all-reduce).
  std::vector<bool> emitted(std::vector<bool> const& rebuilt) const;

  // Writes part `id`'s tasks' dependency lists (in `program`, at its offset) from its part data:
  // its own, then (an op part's compute tasks) what they wait for of each input. Returns whether
  // one of the inputs' parts was rebuilt.
  bool resolve_deps(std::uint32_t id, std::vector<bool> const* rebuilt);

  // A task's dependency list, its part's brought up to date first if stale (unscheduled
  // programs: the parts hold every task).
  std::vector<TaskId> const& current_deps(TaskId task);

  // Brings the stale parts' lists up to date (of the parts `only` names, or all).
  void resolve_stale(std::vector<bool> const* only = nullptr);

  // lower()'s assembly (`once`): the same program as assemble(nullptr), but each part's tasks
  // move into it (their boxes with them) and the part's tasks are freed as soon as they have
  // (issue 21: copying them held every task twice at the lowering's peak). The program's list is
  // reserved, not filled, up front, so that its pages are touched only as the parts' are freed,
  // and each dependency list is allocated once at its size.
  void assemble_once();

  // Whether an emitted task is what an old one was (same content, dependencies mapped to its old
  // ones), so that it keeps its timing and place in the old run.
  bool unchanged(Task const& t, Task const& before) const;

  // Emits a part's collectives (its tasks already in p); a tensor part's all-gather that
  // completes its producer's reduce-scatter turns that into an all-reduce.
  void add_collectives(std::uint32_t id, Part const& part, Program& p, CollectiveId& written);

  // Gives op `id`'s compute tasks (already in p) what they wait for, from the tensor parts of its
  // inputs; returns whether one of those parts was rebuilt.
  bool add_compute_deps(ir::OpId id, Program& p, std::vector<bool> const* rebuilt);

  // What op `id`'s pieces wait for of its input `input` (in that input's part of its pass).
  Read const& read_of(ir::OpId id, std::size_t input) const;
};

}  // namespace cleave::lower
