#include "search/swapadvisor/swap_planner.h"

#include <algorithm>

#include "lower/lowering.h"
#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::search::swapadvisor {
namespace {

using lower::TaskId;

std::int64_t block_bytes(ir::Graph const& graph, ir::TensorId tensor, tdl::Box const& region) {
  return tdl::box_volume(region) * ir::dtype_bytes(graph.tensor(tensor).type.dtype);
}

// The walk's state: what each block occupies, per resource (a pool's size class, or the one
// budget of bytes), and the intervals of positions each block holds it.
class Walk {
 public:
  explicit Walk(SwapRequest const& r) : r_(r), model_(r.model) {
    std::size_t n = r.schedule.size();
    CLEAVE_ASSERT(n == model_.task_of_op.size(), "a schedule that is not every op once");
    order_.resize(n);
    pos_.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      order_[k] = model_.task_of_op[r.schedule[k].value()];
      pos_[order_[k]] = static_cast<int>(k);
    }
    uses_.resize(n);
    for (TaskId t = 0; t < n; ++t)
      for (TaskId d : model_.reads[t])
        uses_[d].push_back(pos_[t]);
    for (auto& u : uses_)
      std::sort(u.begin(), u.end());
    home_.assign(n, 0);
    if (r.allocation) {
      for (auto objects : r.allocation->objects)
        limit_.push_back(objects);
      for (TaskId t = 0; t < n; ++t)
        home_[t] = r.allocation->size_class[model_.size_index[t]];
    } else {
      limit_ = {r.room_bytes};
    }
    resource_ = home_;
    used_.assign(limit_.size(), 0);
    held_.resize(n);
    last_access_.assign(n, -1);
    swapped_.assign(n, false);
    resident_.assign(n, false);
  }

  Expected<std::vector<plan::Swap>> run() {
    int n = static_cast<int>(order_.size());
    for (int k = 0; k < n; ++k) {
      release_dead(k);
      TaskId t = order_[static_cast<std::size_t>(k)];
      CLEAVE_CHECK_OK(allocate(t, k));
      // Accessed at k before the copies back issued after k look for blocks to evict.
      for (TaskId d : model_.reads[t])
        last_access_[d] = k;
      last_access_[t] = k;
      if (k + 1 < n)
        for (TaskId d : model_.reads[order_[static_cast<std::size_t>(k) + 1]])
          if (!resident_[d]) CLEAVE_CHECK_OK(copy_in(d, k));
    }
    for (TaskId t = 0; t < order_.size(); ++t)
      if (resident_[t]) held_[t].back().to = n - 1;
    if (r_.early_copy_in) copy_in_early();
    std::vector<plan::Swap> out;
    for (auto const& s : swaps_)
      out.push_back(to_plan(s));
    return out;
  }

 private:
  struct PendingSwap {
    TaskId task;
    int out_after, out_before, in_after, in_before;
  };

  struct Hold {
    int from = 0, to = -1;  // positions, inclusive
    std::uint32_t resource = 0;
  };

  std::int64_t units(TaskId t) const { return r_.allocation ? 1 : model_.bytes[t]; }
  std::uint32_t resource(TaskId t) const { return resource_[t]; }
  // Where t may go: its size's class or a larger one with a free object (the pool's rule,
  // memory::PoolAllocator), or the one budget of bytes.
  std::optional<std::uint32_t> room_for(TaskId t) const {
    for (std::uint32_t c = home_[t]; c < limit_.size(); ++c)
      if (used_[c] + units(t) <= limit_[c]) return c;
    return std::nullopt;
  }

  // Blocks whose last reader ran at k - 1 leave (a block no one reads lives to the end).
  void release_dead(int k) {
    if (k == 0) return;
    for (TaskId d : model_.reads[order_[static_cast<std::size_t>(k) - 1]])
      if (resident_[d] && uses_[d].back() == k - 1) free(d, k - 1);
  }

  void hold(TaskId t, int from, std::uint32_t resource) {
    resident_[t] = true;
    resource_[t] = resource;
    used_[resource] += units(t);
    held_[t].push_back({from, -1, resource});
  }
  void free(TaskId t, int last) {
    resident_[t] = false;
    used_[resource(t)] -= units(t);
    held_[t].back().to = last;
  }

  // The first use of t after position k, if any.
  std::optional<int> next_use(TaskId t, int k) const {
    auto it = std::upper_bound(uses_[t].begin(), uses_[t].end(), k);
    if (it == uses_[t].end()) return std::nullopt;
    return *it;
  }

  // Whether t is read at k or k + 1: it must stay.
  bool pinned(TaskId t, int k) const {
    auto next = next_use(t, k - 1);
    return next && *next <= k + 1;
  }

  // Room for t, evicting blocks (of its class or larger ones) as needed; t is held from k on.
  Status allocate(TaskId t, int k) {
    for (auto c = room_for(t); !c; c = room_for(t)) {
      std::optional<TaskId> victim;
      int best = 0;
      for (TaskId b = 0; b < order_.size(); ++b) {
        if (!resident_[b] || swapped_[b] || resource(b) < home_[t] || b == t || pinned(b, k))
          continue;
        if (last_access_[b] > k - r_.idle_threshold) continue;
        auto next = next_use(b, k);
        if (!next) continue;  // lives to the end of the step: nothing reads it again
        int score = r_.eviction == Eviction::belady ? *next : -last_access_[b];
        if (!victim || score > best) {
          victim = b;
          best = score;
        }
      }
      if (!victim) return no_room(t, k);
      swapped_[*victim] = true;
      free(*victim, k - 1);
      swaps_.push_back({*victim, last_access_[*victim], k, -1, *next_use(*victim, k)});
    }
    hold(t, k, *room_for(t));
    return Status::ok();
  }

  // The copy back of d, issued after the op at k, for its use at k + 1.
  Status copy_in(TaskId d, int k) {
    CLEAVE_CHECK_OK(allocate(d, k));
    auto s = std::find_if(swaps_.begin(), swaps_.end(),
                          [&](PendingSwap const& p) { return p.task == d; });
    CLEAVE_ASSERT(s != swaps_.end() && s->in_before == k + 1, "a block read after it left");
    s->in_after = k;
    return Status::ok();
  }

  Status no_room(TaskId t, int k) const {
    std::string what =
        r_.allocation ? "its size class (objects of " +
                            format_bytes(Bytes(model_.allocation.sizes[model_.size_index[t]])) +
                            " and up) is full"
                      : "the device's " + format_bytes(Bytes(r_.room_bytes)) +
                            " beside the blocks held before the step are full";
    return Error(ErrorCode::invalid_argument,
                 "no room at position " + std::to_string(k) + " of the schedule (op id " +
                     std::to_string(model_.program.tasks[t].op.value()) + ") for a block of " +
                     format_bytes(Bytes(model_.bytes[t])) + ": " + what +
                     " with blocks in use or idle for fewer than " +
                     std::to_string(r_.idle_threshold) + " ops");
  }

  // The second pass: each copy back issued at the earliest position from its swap-out's on where
  // its resource has room over every position up to the one it was issued at.
  void copy_in_early() {
    std::vector<std::vector<std::int64_t>> occupied(limit_.size(),
                                                    std::vector<std::int64_t>(order_.size(), 0));
    for (TaskId t = 0; t < order_.size(); ++t)
      for (Hold const& h : held_[t])
        for (int p = h.from; p <= h.to; ++p)
          occupied[h.resource][static_cast<std::size_t>(p)] += units(t);
    for (auto& s : swaps_) {
      std::uint32_t c = held_[s.task].back().resource;  // where the copy back goes
      auto& occ = occupied[c];
      std::int64_t u = units(s.task);
      int j = s.in_after;
      while (j - 1 >= s.out_before && occ[static_cast<std::size_t>(j) - 1] + u <= limit_[c])
        --j;
      for (int p = j; p < s.in_after; ++p)
        occ[static_cast<std::size_t>(p)] += u;
      s.in_after = j;
    }
  }

  plan::Swap to_plan(PendingSwap const& s) const {
    auto piece = [&](int k) {
      return plan::PieceRef{model_.program.tasks[order_[static_cast<std::size_t>(k)]].op.value(),
                            0};
    };
    lower::Task const& w = model_.program.tasks[s.task];
    return {w.tensor,          w.region,           0, piece(s.out_after), piece(s.in_before),
            piece(s.in_after), piece(s.out_before)};
  }

  SwapRequest const& r_;
  StepModel const& model_;
  std::vector<TaskId> order_;               // per position
  std::vector<int> pos_;                    // per task
  std::vector<std::vector<int>> uses_;      // per task: its readers' positions
  std::vector<std::uint32_t> home_;         // per task: its size's class (0: bytes)
  std::vector<std::uint32_t> resource_;     // per task: where it is held now or was last
  std::vector<std::int64_t> limit_, used_;  // per resource
  std::vector<std::vector<Hold>> held_;     // per task
  std::vector<int> last_access_;
  std::vector<bool> swapped_, resident_;
  std::vector<PendingSwap> swaps_;
};

}  // namespace

Expected<StepModel> step_model(SearchContext const& ctx) {
  ir::Graph const& graph = ctx.graph;
  std::int64_t capacity = ctx.cluster().device(cluster::DeviceId(0)).memory.value();
  plan::Plan single = plan::single_device_plan(graph, ctx.registry);
  single.num_devices = static_cast<int>(ctx.cluster().num_devices());
  CLEAVE_TRY(lower::Program program, lower::lower(graph, single, ctx.registry));
  StepModel m;
  std::size_t n = program.tasks.size();
  CLEAVE_ASSERT(n == graph.num_ops(), "a single-device lowering with other tasks than ops");
  m.task_of_op.resize(n);
  m.bytes.resize(n);
  m.reads.resize(n);
  for (TaskId i = 0; i < n; ++i) {
    lower::Task const& t = program.tasks[i];
    CLEAVE_ASSERT(t.kind == lower::TaskKind::compute && !t.partial,
                  "a single-device lowering with other tasks than whole ops");
    m.task_of_op[t.op.value()] = i;
    m.bytes[i] = block_bytes(graph, t.tensor, t.region);
    m.reads[i] = t.deps;
    std::sort(m.reads[i].begin(), m.reads[i].end());
    m.reads[i].erase(std::unique(m.reads[i].begin(), m.reads[i].end()), m.reads[i].end());
  }
  for (auto const& b : program.initial)
    m.held_before_step += block_bytes(graph, b.tensor, b.region);
  if (m.held_before_step > capacity)
    return Error(ErrorCode::invalid_argument,
                 "the blocks held before the step (weights, optimizer state, inputs) take " +
                     format_bytes(Bytes(m.held_before_step)) + ", over the device's " +
                     format_bytes(Bytes(capacity)) + "; swapping covers only what the step writes");
  auto& a = m.allocation;
  a.sizes = m.bytes;
  std::sort(a.sizes.begin(), a.sizes.end());
  a.sizes.erase(std::unique(a.sizes.begin(), a.sizes.end()), a.sizes.end());
  m.size_index.resize(n);
  for (TaskId i = 0; i < n; ++i)
    m.size_index[i] = static_cast<std::uint32_t>(
        std::lower_bound(a.sizes.begin(), a.sizes.end(), m.bytes[i]) - a.sizes.begin());
  for (TaskId i = 0; i < n; ++i) {
    std::vector<std::uint32_t> set{m.size_index[i]};
    for (TaskId d : m.reads[i])
      set.push_back(m.size_index[d]);
    a.together.push_back(std::move(set));
  }
  // The blocks no task reads live to the end of the step, all at once, and are never evicted.
  std::vector<bool> read(n, false);
  for (TaskId i = 0; i < n; ++i)
    for (TaskId d : m.reads[i])
      read[d] = true;
  std::vector<std::uint32_t> to_the_end;
  for (TaskId i = 0; i < n; ++i)
    if (!read[i]) to_the_end.push_back(m.size_index[i]);
  a.together.push_back(std::move(to_the_end));
  a.capacity = capacity - m.held_before_step;
  m.program = std::move(program);
  return m;
}

Expected<std::vector<plan::Swap>> plan_swaps(SwapRequest const& request) {
  CLEAVE_ASSERT(request.idle_threshold >= 1, "an idle threshold below one op");
  return Walk(request).run();
}

}  // namespace cleave::search::swapadvisor
