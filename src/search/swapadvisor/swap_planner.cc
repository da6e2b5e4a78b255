#include "search/swapadvisor/swap_planner.h"

#include <algorithm>
#include <limits>

#include "lower/lowering.h"
#include "lower/schedule.h"
#include "sim/predict.h"
#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::search::swapadvisor {
namespace {

using lower::TaskId;

std::int64_t block_bytes(ir::Graph const& graph, ir::TensorId tensor, tdl::Box const& region) {
  return tdl::box_volume(region) * ir::dtype_bytes(graph.tensor(tensor).type.dtype);
}

// The walk's state: what each block occupies, per resource (its size's class of a pool, never
// another: memory/allocation.h; or the one budget of bytes), and the intervals of positions each
// block holds it.
class Walk {
 public:
  explicit Walk(SwapRequest const& r) : r_(r), model_(r.model) {
    std::size_t n = r.schedule.size();
    CLEAVE_ASSERT(n == model_.task_of_op.size(), "a schedule that is not every op once");
    CLEAVE_ASSERT(!model_.held_on_host || model_.to_host.size() == n,
                  "blocks held on the host without the updates' outputs marked");
    std::size_t blocks = model_.bytes.size();
    order_.resize(n);
    pos_.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      order_[k] = model_.task_of_op[r.schedule[k].value()];
      pos_[order_[k]] = static_cast<int>(k);
    }
    uses_.resize(blocks);
    for (TaskId t = 0; t < n; ++t)
      for (auto d : model_.reads[t])
        uses_[d].push_back(pos_[t]);
    for (auto& u : uses_)
      std::sort(u.begin(), u.end());
    home_.assign(blocks, 0);
    if (r.allocation) {
      for (auto objects : r.allocation->objects)
        limit_.push_back(objects);
      for (std::size_t b = 0; b < blocks; ++b)
        home_[b] = r.allocation->size_class[model_.size_index[b]];
    } else {
      limit_ = {r.room_bytes};
    }
    used_.assign(limit_.size(), 0);
    held_.resize(blocks);
    last_access_.assign(blocks, -1);
    swapped_.assign(blocks, false);
    resident_.assign(blocks, false);
    leaving_.resize(n);
    brought_for_.assign(blocks, -1);
    for (auto c : model_.copy_s)
      longest_copy_s_ = std::max(longest_copy_s_, c);
  }

  Expected<std::vector<plan::Swap>> run() {
    int n = static_cast<int>(order_.size());
    if (model_.held_on_host) {
      // The first op's blocks held before the step are brought when the step starts.
      for (auto d : model_.reads[order_[0]])
        if (!resident_[d]) CLEAVE_CHECK_OK(copy_in(d, -1, 0));
    } else {
      // The blocks held before the step are there when it starts.
      for (auto b = static_cast<std::uint32_t>(n); b < model_.bytes.size(); ++b) {
        if (!has_room(b)) return no_room(b, 0);
        hold(b, 0);
      }
    }
    for (int k = 0; k < n; ++k) {
      release_dead(k);
      TaskId t = order_[static_cast<std::size_t>(k)];
      CLEAVE_CHECK_OK(allocate(t, k));
      // Accessed at k before the copies back issued after k look for blocks to evict.
      for (auto d : model_.reads[t])
        last_access_[d] = k;
      last_access_[t] = k;
      send_home(t, k);
      if (k + 1 < n)
        for (auto d : model_.reads[order_[static_cast<std::size_t>(k) + 1]])
          if (!resident_[d]) CLEAVE_CHECK_OK(copy_in(d, k, k + 1));
      if (model_.held_on_host && r_.early_host_copies) bring_ahead(k);
    }
    for (std::uint32_t b = 0; b < held_.size(); ++b) {
      if (!resident_[b]) continue;
      held_[b].back().to = n - 1;
      if (swapped_[b]) continue;  // on its way to the host
      // An update's output still here leaves for the host once written: the step ends there.
      if (ends_on_host(b)) swaps_.push_back({b, last_access_[b], -1, -1, -1});
    }
    if (r_.early_copy_in) copy_in_early();
    copies_out_in_need_order();
    std::vector<plan::Swap> out;
    for (auto const& s : swaps_)
      out.push_back(to_plan(s));
    return out;
  }

 private:
  // -1: none (a block brought from the host has no swap-out; an update's output left there, no
  // swap-in; in_after -1: issued at the step's start).
  struct PendingSwap {
    std::uint32_t block;
    int out_after, out_before, in_after, in_before;
  };

  struct Hold {
    int from = 0, to = -1;  // positions, inclusive
  };

  std::int64_t units(std::uint32_t b) const { return r_.allocation ? 1 : model_.bytes[b]; }
  bool held_before_step(std::uint32_t b) const { return b >= order_.size(); }
  // Held before the step and starting it on the host: brought for its uses, dropped when evicted.
  bool from_host(std::uint32_t b) const { return model_.held_on_host && held_before_step(b); }
  bool ends_on_host(std::uint32_t b) const {
    return model_.held_on_host && !held_before_step(b) && model_.to_host[b];
  }
  // Whether b's size class has a free object (never a larger class's: memory/allocation.h), or
  // the one budget of bytes room for it.
  bool has_room(std::uint32_t b) const { return used_[home_[b]] + units(b) <= limit_[home_[b]]; }

  // Blocks whose last reader ran at k - 1 leave (a block no one reads lives to the end; one held
  // before the step stays unless it is a copy swapped back or brought from the host; an update's
  // output that ends the step on the host stays until it is copied there).
  void release_dead(int k) {
    if (k == 0) return;
    for (auto b : leaving_[static_cast<std::size_t>(k)])
      free(b, k - 1);
    for (auto d : model_.reads[order_[static_cast<std::size_t>(k) - 1]])
      if (resident_[d] && uses_[d].back() == k - 1 &&
          (!held_before_step(d) || swapped_[d] || from_host(d)) && !ends_on_host(d))
        free(d, k - 1);
  }

  // The updates' outputs that end the step on the host and that nothing reads after k leave once
  // written (or read), their room free from the first op that starts once the ops between have
  // run for as long as the copy out takes (that op waits for it). Kept until their room was
  // needed, they filled the device in the backward pass once updates run there (genetic.h's
  // eager updates): WResNet-152-10's walk held 12 to 14 GiB of them for most of its backward
  // pass, leaving no room to bring activations back early; freed two ops after their writer, the
  // ops waited 3.9 s of a 38.7 s step for their copies.
  void send_home(TaskId t, int k) {
    if (!r_.early_host_copies) return;
    auto leave = [&](std::uint32_t b) {
      if (!ends_on_host(b) || !resident_[b] || swapped_[b] || next_use(b, k)) return;
      int before = k + 1;
      for (double ran = 0; ran < model_.copy_s[b] && before < static_cast<int>(order_.size());
           ++before)
        ran += model_.compute_s[order_[static_cast<std::size_t>(before)]];
      if (before >= static_cast<int>(order_.size())) return;  // at the step's end (run())
      swapped_[b] = true;
      leaving_[static_cast<std::size_t>(before)].push_back(b);
      swaps_.push_back({b, k, before, -1, -1});
    };
    leave(t);
    for (auto d : model_.reads[t])
      leave(d);
  }

  void hold(std::uint32_t b, int from) {
    resident_[b] = true;
    used_[home_[b]] += units(b);
    held_[b].push_back({from, -1});
  }
  void free(std::uint32_t b, int last) {
    resident_[b] = false;
    used_[home_[b]] -= units(b);
    held_[b].back().to = last;
  }

  // The first use of b after position k, if any.
  std::optional<int> next_use(std::uint32_t b, int k) const {
    auto it = std::upper_bound(uses_[b].begin(), uses_[b].end(), k);
    if (it == uses_[b].end()) return std::nullopt;
    return *it;
  }

  // Whether b is read at k or k + 1: it must stay.
  bool pinned(std::uint32_t b, int k) const {
    auto next = next_use(b, k - 1);
    return next && *next <= k + 1;
  }

  // The position the swap-out of b follows: its last use, or the first op for a block held
  // before the step and not read yet.
  int out_after(std::uint32_t b) const { return std::max(last_access_[b], 0); }

  // How much Belady's (or LRU's) rule would rather evict b to make room at k; none: b stays. An
  // update's output that ends the step on the host goes, once nothing reads it again, first when
  // idle, else last (the op at k waits for its copy out); a block brought from the host is dropped
  // without a copy out, so it need not be idle.
  std::optional<std::int64_t> eviction_score(std::uint32_t b, int k, int idle_threshold) const {
    constexpr std::int64_t first = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t last = std::numeric_limits<std::int64_t>::min();
    bool idle = last_access_[b] < 0 ? k >= 1 : last_access_[b] <= k - idle_threshold;
    if (ends_on_host(b)) {
      // Its swap-out follows its last use, before the op at k that waits for it.
      bool done = !swapped_[b] && !next_use(b, k - 1) && last_access_[b] < k;
      return done ? std::optional(idle ? first : last) : std::nullopt;
    }
    if (swapped_[b] || pinned(b, k) || (!idle && !from_host(b))) return std::nullopt;
    if (from_host(b) && brought_for_[b] > k) return std::nullopt;  // not yet read
    auto next = next_use(b, k);
    if (!next) return std::nullopt;  // stays to the end of the step: nothing reads it again
    return r_.eviction == Eviction::belady ? *next : -last_access_[b];
  }

  // Whether evicting b copies it out for a copy back later (the op waiting for it).
  bool copied_back(std::uint32_t b) const { return !from_host(b) && !ends_on_host(b); }

  // The block Belady's (or LRU's) rule evicts to make room for t at k among those idle for at
  // least `idle_threshold` positions, if any. Belady's rule takes only blocks that make the room
  // alone where one can (in a pool every block frees the one object needed): in bytes its
  // furthest next use is most often a bias's or a norm's few KiB, read again only by the update
  // at the step's end, whose copy out the op waits for behind every copy out the copy engine's
  // queue holds (activations copied out from their last use on, needed later). On
  // WResNet-152-2 that stalled one op 0.28 s of a 1.80 s step; evicting among the blocks that
  // make the room, the step takes 1.64 s (1.635 s with copies out in the order their room is
  // needed, below), against LRU's 1.66 s.
  std::optional<std::uint32_t> victim_for(std::uint32_t t, int k, int idle_threshold) const {
    std::int64_t need = used_[home_[t]] + units(t) - limit_[home_[t]];
    auto candidate = [&](std::uint32_t b) {
      return resident_[b] && home_[b] == home_[t] && b != t;
    };
    bool whole = false;  // some block copied out and back makes the room alone
    for (std::uint32_t b = 0; b < model_.bytes.size() && r_.eviction == Eviction::belady && !whole;
         ++b)
      whole = candidate(b) && copied_back(b) && units(b) >= need &&
              eviction_score(b, k, idle_threshold);
    std::optional<std::uint32_t> victim;
    std::int64_t best = 0;
    for (std::uint32_t b = 0; b < model_.bytes.size(); ++b) {
      if (!candidate(b) || (whole && copied_back(b) && units(b) < need)) continue;
      auto score = eviction_score(b, k, idle_threshold);
      if (score && (!victim || *score > best)) {
        victim = b;
        best = *score;
      }
    }
    return victim;
  }

  // Room for block t, evicting blocks of its class as needed; t is held from k
  // on (from 0 when k is -1, the step's start). Where no block has been idle for the threshold,
  // one idle for a single op goes: the threshold only gives copies out time to run (the op at k
  // waits for its copy out either way), so it must not leave a step without a plan.
  Status allocate(std::uint32_t t, int k) {
    int at = std::max(k, 0);
    while (!has_room(t)) {
      auto victim = victim_for(t, at, r_.idle_threshold);
      if (!victim && r_.idle_threshold > 1) victim = victim_for(t, at, 1);
      if (!victim) {
        if (!model_.held_on_host && drop_dead(home_[t], at)) continue;
        if (model_.held_on_host && (hurry_home(home_[t], at) || unbring(home_[t], at))) continue;
        return no_room(t, at);
      }
      free(*victim, at - 1);
      if (from_host(*victim)) continue;  // dropped: brought again for its next use
      swapped_[*victim] = true;
      int back = ends_on_host(*victim) ? -1 : *next_use(*victim, at);
      swaps_.push_back({*victim, out_after(*victim), at, -1, back});
    }
    hold(t, at);
    return Status::ok();
  }

  // A block held before the step stays to its end, even once nothing reads it again (lifetime.h),
  // unless it is swapped: its copy swapped back is freed after its last reader. When no block
  // can be evicted, one such block (of class `home`) is swapped
  // after the fact: out after its use before the last one (or the first op) and back before the
  // last, its hold in between taken back. That frees room only at positions already walked, so
  // every decision made there still holds; the second pass may issue copies back into it.
  bool drop_dead(std::uint32_t home, int k) {
    for (auto b = static_cast<std::uint32_t>(order_.size()); b < model_.bytes.size(); ++b) {
      auto const& u = uses_[b];
      if (!resident_[b] || swapped_[b] || home_[b] != home || u.empty() || u.back() >= k) continue;
      int last = u.back();
      int prev = u.size() >= 2 ? u[u.size() - 2] : 0;
      int out_before = prev + r_.idle_threshold;  // the swap-out has idle ops to run
      if (out_before >= last) continue;
      swapped_[b] = true;
      free(b, out_before - 1);
      held_[b].push_back({last - 1, last});
      swaps_.push_back({b, prev, out_before, last - 1, last});
      return true;
    }
    return false;
  }

  // The copy back of d, issued after the op at k (-1: at the step's start), for its use at `use`
  // (k + 1 but for bring_ahead's); a block held on the host is brought by a swap of its own each
  // time, and stays until that use.
  Status copy_in(std::uint32_t d, int k, int use) {
    CLEAVE_CHECK_OK(allocate(d, k));
    if (from_host(d)) {
      brought_for_[d] = use;
      swaps_.push_back({d, -1, -1, k, use});
      return Status::ok();
    }
    auto s = std::find_if(swaps_.begin(), swaps_.end(),
                          [&](PendingSwap const& p) { return p.block == d; });
    CLEAVE_ASSERT(s != swaps_.end() && s->in_before == use, "a block read after it left");
    s->in_after = k;
    return Status::ok();
  }

  // Blocks on the host that an op after the next reads are brought after the op at k where
  // waiting one op more would leave the ops before their reader less time than their copy takes
  // (the paper's prefetch by the schedule). Brought one op ahead, the weights of
  // WResNet-152-10's forward pass arrived late: the walk fills the device with activations and
  // evicts them only when room is needed, so the second pass found no room to issue the copies
  // earlier, and the forward pass waited 1.7 s on them with the link idle four fifths of the time.
  void bring_ahead(int k) {
    int n = static_cast<int>(order_.size());
    double ahead = 0;  // the ops from k + 2 to j - 1
    for (int j = k + 2; j < n && ahead < longest_copy_s_; ++j) {
      for (auto d : model_.reads[order_[static_cast<std::size_t>(j)]])
        // Not for a later read of a block this loop took back (unbring) for an earlier one.
        if (from_host(d) && !resident_[d] && ahead < model_.copy_s[d] && next_use(d, k) == j &&
            !copy_in(d, k, j).ok())
          return;  // no room: brought one op ahead
      ahead += model_.compute_s[order_[static_cast<std::size_t>(j)]];
    }
  }

  // Where no block can be evicted, the update's output on its way home (send_home) that leaves
  // soonest leaves before the op at k instead, which waits for its copy out.
  bool hurry_home(std::uint32_t home, int k) {
    for (auto p = static_cast<std::size_t>(k) + 1; p < leaving_.size(); ++p)
      for (auto& b : leaving_[p]) {
        if (home_[b] != home) continue;
        auto s = std::find_if(swaps_.begin(), swaps_.end(), [&](PendingSwap const& w) {
          return w.block == b && w.in_before < 0;
        });
        CLEAVE_ASSERT(s != swaps_.end(), "a block leaving without its swap");
        if (s->out_after >= k) continue;  // written at k: the op at k cannot wait for it
        s->out_before = k;
        free(b, k - 1);
        b = leaving_[p].back();
        leaving_[p].pop_back();
        return true;
      }
    return false;
  }

  // Where no block can be evicted, a block bring_ahead brought for an op after the next goes
  // back to being brought one op before it: its hold and its swap are taken back. The walk
  // decided with less room at the positions it held, so every decision made there still holds.
  bool unbring(std::uint32_t home, int k) {
    for (std::uint32_t b = 0; b < brought_for_.size(); ++b) {
      if (!resident_[b] || home_[b] != home || brought_for_[b] <= k + 1) continue;
      auto s = std::find_if(swaps_.begin(), swaps_.end(), [&](PendingSwap const& p) {
        return p.block == b && p.in_before == brought_for_[b];
      });
      CLEAVE_ASSERT(s != swaps_.end(), "a block brought ahead without its swap");
      swaps_.erase(s);
      resident_[b] = false;
      used_[home] -= units(b);
      held_[b].pop_back();
      brought_for_[b] = -1;
      return true;
    }
    return false;
  }

  // The tensor and region of block b.
  std::pair<ir::TensorId, tdl::Box> block(std::uint32_t b) const {
    auto const& p = model_.program;
    if (!held_before_step(b)) return {p.tasks[b].tensor, p.tasks[b].region};
    auto const& h = p.initial[b - order_.size()];
    return {h.tensor, h.region};
  }

  Error no_room(std::uint32_t t, int k) const {
    std::string what = "the device's " + format_bytes(Bytes(r_.room_bytes)) + " are full";
    if (r_.allocation) {
      std::int64_t object = 0;  // the largest size of t's class
      for (std::size_t s = 0; s < model_.allocation.sizes.size(); ++s)
        if (r_.allocation->size_class[s] == home_[t])
          object = std::max(object, model_.allocation.sizes[s]);
      what = "its size class (" + std::to_string(limit_[home_[t]]) + " objects of " +
             format_bytes(Bytes(object)) + ") is full";
    }
    std::string whose = held_before_step(t)
                            ? "held before the step"
                            : "of op id " + std::to_string(model_.program.tasks[t].op.value());
    return Error(ErrorCode::invalid_argument,
                 "no room at position " + std::to_string(k) + " of the schedule for a block of " +
                     format_bytes(Bytes(model_.bytes[t])) + " " + whose + ": " + what +
                     " with blocks read by this op or the next, brought back already (a block "
                     "is swapped once) or kept to the step's end");
  }

  // The second pass: each copy back issued at the earliest position from its swap-out's on where
  // its resource has room over every position up to the one it was issued at, taken in the order
  // they are needed, so that those needed first take the room first. The copy engine runs copies
  // in in the order they become ready: taken in the order of their evictions, a copy needed late
  // in the backward pass found room first and went ahead of copies needed sooner, and the
  // computation waited on the link while it was idle a third of the time (WResNet-152-10: 38.7 s
  // against 33.8 s a step in need order).
  void copy_in_early() {
    std::vector<std::vector<std::int64_t>> occupied(limit_.size(),
                                                    std::vector<std::int64_t>(order_.size(), 0));
    for (std::uint32_t b = 0; b < held_.size(); ++b)
      for (Hold const& h : held_[b])
        for (int p = h.from; p <= h.to; ++p)
          occupied[home_[b]][static_cast<std::size_t>(p)] += units(b);
    std::vector<PendingSwap*> ins;
    for (auto& s : swaps_)
      // Not a copy back, or one issued at the step's start.
      if (s.in_before >= 0 && s.in_after >= 0) ins.push_back(&s);
    std::stable_sort(ins.begin(), ins.end(), [](PendingSwap const* a, PendingSwap const* b) {
      return a->in_before < b->in_before;
    });
    for (PendingSwap* s : ins) {
      auto& occ = occupied[home_[s->block]];
      std::int64_t u = units(s->block);
      int j = s->in_after;
      // A block from the host may come from the first op on.
      int earliest = s->out_after < 0 ? 0 : s->out_before;
      while (j - 1 >= earliest &&
             occ[static_cast<std::size_t>(j) - 1] + u <= limit_[home_[s->block]])
        --j;
      for (int p = j; p < s->in_after; ++p)
        occ[static_cast<std::size_t>(p)] += u;
      s->in_after = j;
    }
  }

  // The copy engine runs copies out in the order they become ready, each after the op its
  // swap-out follows. A copy out issued after its block's last use may be ready long before its
  // room is needed (a block idle since the forward pass's start, evicted late in it), and the
  // copies out needed sooner then wait behind it: each copy out follows the op the copy out
  // needed before it follows, if later, so that the engine runs them in the order the walk
  // needs their room, each as early as that order allows.
  void copies_out_in_need_order() {
    std::vector<PendingSwap*> outs;
    for (auto& s : swaps_)
      if (s.out_after >= 0 && s.out_before >= 0) outs.push_back(&s);
    std::stable_sort(outs.begin(), outs.end(), [](PendingSwap const* a, PendingSwap const* b) {
      return a->out_before < b->out_before;
    });
    int ready = 0;
    for (PendingSwap* s : outs) {
      // The one before it was freed no later than s's room is needed, and followed an op before.
      CLEAVE_ASSERT(ready < s->out_before, "a copy out issued after its room is needed");
      s->out_after = std::max(s->out_after, ready);
      ready = s->out_after;
    }
  }

  plan::Swap to_plan(PendingSwap const& s) const {
    auto piece = [&](int k) {
      return plan::PieceRef{model_.program.tasks[order_[static_cast<std::size_t>(k)]].op.value(),
                            0};
    };
    auto maybe = [&](int k) { return k < 0 ? std::nullopt : std::optional(piece(k)); };
    auto [tensor, region] = block(s.block);
    return {tensor,
            region,
            0,
            maybe(s.out_after),
            maybe(s.in_before),
            maybe(s.in_after),
            maybe(s.out_before)};
  }

  SwapRequest const& r_;
  StepModel const& model_;
  std::vector<TaskId> order_;               // per position
  std::vector<int> pos_;                    // per task
  std::vector<std::vector<int>> uses_;      // per block: its readers' positions
  std::vector<std::uint32_t> home_;         // per block: its size's class (0: bytes)
  std::vector<std::int64_t> limit_, used_;  // per resource
  std::vector<std::vector<Hold>> held_;     // per block
  std::vector<int> last_access_;            // per block; -1: none yet
  std::vector<bool> swapped_, resident_;    // per block
  std::vector<PendingSwap> swaps_;
  std::vector<std::vector<std::uint32_t>> leaving_;  // per position: blocks freed before it
  std::vector<int> brought_for_;  // per block on the host: the use its copy on the device is for
  double longest_copy_s_ = 0;
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
  std::size_t blocks = n + program.initial.size();
  CLEAVE_ASSERT(n == graph.num_ops(), "a single-device lowering with other tasks than ops");
  m.task_of_op.resize(n);
  m.bytes.resize(blocks);
  m.reads.resize(n);
  // The blocks held before the step, by tensor: the ops reading a tensor read its blocks.
  std::vector<std::vector<std::uint32_t>> initial_of(graph.num_tensors());
  for (std::size_t b = 0; b < program.initial.size(); ++b) {
    auto const& h = program.initial[b];
    m.bytes[n + b] = block_bytes(graph, h.tensor, h.region);
    m.held_before_step += m.bytes[n + b];
    initial_of[h.tensor.value()].push_back(static_cast<std::uint32_t>(n + b));
  }
  for (TaskId i = 0; i < n; ++i) {
    lower::Task const& t = program.tasks[i];
    CLEAVE_ASSERT(t.kind == lower::TaskKind::compute && !t.partial,
                  "a single-device lowering with other tasks than whole ops");
    m.task_of_op[t.op.value()] = i;
    m.bytes[i] = block_bytes(graph, t.tensor, t.region);
    m.reads[i].assign(t.deps.begin(), t.deps.end());
    for (auto input : graph.op(t.op).inputs)
      for (auto b : initial_of[input.value()])
        m.reads[i].push_back(b);
    std::sort(m.reads[i].begin(), m.reads[i].end());
    m.reads[i].erase(std::unique(m.reads[i].begin(), m.reads[i].end()), m.reads[i].end());
  }
  m.held_on_host = 2 * m.held_before_step > capacity;
  if (m.held_on_host) {
    m.to_host.resize(n);
    for (TaskId i = 0; i < n; ++i) {
      ir::Op const& op = graph.op(program.tasks[i].op);
      m.to_host[i] = !op.inputs.empty() && lower::update_of(graph, op.inputs[0]) == op.id;
      m.compute_s.push_back(sim::timing_of(program.tasks[i], graph, ctx.cost).seconds);
    }
    for (auto b : m.bytes)
      m.copy_s.push_back(ctx.cost.host_transfer(Bytes(b), cluster::DeviceId(0)).value());
  }
  auto& a = m.allocation;
  a.sizes = m.bytes;
  std::sort(a.sizes.begin(), a.sizes.end());
  a.sizes.erase(std::unique(a.sizes.begin(), a.sizes.end()), a.sizes.end());
  m.size_index.resize(blocks);
  for (std::size_t b = 0; b < blocks; ++b)
    m.size_index[b] = static_cast<std::uint32_t>(
        std::lower_bound(a.sizes.begin(), a.sizes.end(), m.bytes[b]) - a.sizes.begin());
  for (TaskId i = 0; i < n; ++i) {
    std::vector<std::uint32_t> set{m.size_index[i]};
    for (auto d : m.reads[i])
      set.push_back(m.size_index[d]);
    a.together.push_back(std::move(set));
  }
  // Held at once: the blocks held before the step, when it starts on the device.
  std::vector<std::uint32_t> at_start;
  for (std::size_t b = n; b < blocks && !m.held_on_host; ++b)
    at_start.push_back(m.size_index[b]);
  // Nothing can be evicted before the first op has run: with the output of each op that may run
  // first (it reads only blocks held before the step).
  for (TaskId i = 0; i < n && !m.held_on_host; ++i) {
    if (!program.tasks[i].deps.empty()) continue;
    auto set = at_start;
    set.push_back(m.size_index[i]);
    a.together.push_back(std::move(set));
  }
  std::vector<bool> read(n, false);
  for (TaskId i = 0; i < n; ++i)
    for (auto d : m.reads[i])
      if (d < n) read[d] = true;
  auto leaves = [&](TaskId i) { return m.held_on_host && m.to_host[i]; };
  // The blocks no task reads live from their writer, wherever the schedule puts it, to the
  // step's end: beside every set (an update's output, the loss), never evicted.
  for (TaskId i = 0; i < n; ++i)
    if (!read[i] && !leaves(i)) a.always.push_back(m.size_index[i]);
  // An op writing one of them holds its inputs beside them (an update holds the weight, its state
  // and gradient beside every updated weight).
  for (TaskId i = 0; i < n; ++i) {
    if (read[i]) continue;
    std::vector<std::uint32_t> set;
    if (leaves(i)) set.push_back(m.size_index[i]);
    for (auto d : m.reads[i])
      set.push_back(m.size_index[d]);
    a.together.push_back(std::move(set));
  }
  a.capacity = capacity;
  a.least_classes = memory::least_classes(a);
  m.program = std::move(program);
  return m;
}

Expected<std::vector<plan::Swap>> plan_swaps(SwapRequest const& request) {
  CLEAVE_ASSERT(request.idle_threshold >= 1, "an idle threshold below one op");
  return Walk(request).run();
}

}  // namespace cleave::search::swapadvisor
