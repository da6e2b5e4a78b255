// The Plan: how a graph is computed (DESIGN.md "what vs. how"). Per op, a partition of its TDL
// iteration space (a degree per dimension: the pieces are the cells of that grid) and a device per
// piece; per device, optionally, the order of its pieces and the regions it swaps to its host and
// back; per tensor, optionally, how its fetched copies are shared; and what the plan was made for
// and by.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "memory/pool.h"
#include "ops/op_registry.h"
#include "tdl/piece.h"

namespace cleave::plan {

struct OpConfig {
  // One degree per dimension of the op's iteration space (BoundOp::dims()), parallel and
  // reduction alike; 1 = not split. A dimension of extent E split d ways gives pieces of
  // ceil(E/d) and floor(E/d) (tdl::split_evenly).
  std::vector<std::int64_t> degrees;
  // The device of each piece; pieces are numbered row-major over the degree grid.
  std::vector<int> devices;
};

struct PieceRef {
  std::uint32_t op = 0;
  std::uint32_t piece = 0;
  bool operator==(PieceRef const&) const = default;
};

// Whether a region fetched from another device serves every reader of the step (`shared`: the
// fetched copy stays until its last reader, the backward pass included: what data parallelism
// and Megatron do with their gathered weights and activations), or the backward and optimizer ops
// fetch again, just before they need it, what the forward pass fetched of a forward or source
// tensor (`per_pass`: each op's input conversion is its own communication, as in Tofu, and
// ZeRO-3 re-gathers weights for the backward pass): more bytes, fewer copies held at once
// (lower/lowering.cc, Pass; docs/cost_model.md).
enum class FetchPolicy : std::uint8_t { shared, per_pass };

// How an iterative search went (FlexFlow's MCMC): its iterations, the moves it accepted, and the
// best step time each time it improved, against the seconds since the search began.
struct SearchCourse {
  std::int64_t iterations = 0;
  std::int64_t accepted = 0;
  std::vector<std::pair<double, double>> best;  // (elapsed s, best step time s), improving
};

// A tensor whose fetch policy is not the plan's.
struct TensorFetch {
  ir::TensorId tensor;
  FetchPolicy policy = FetchPolicy::shared;
  bool operator==(TensorFetch const&) const = default;
};

// A region that a device copies to its node's host once it is no longer needed and back before it
// is needed again (SwapAdvisor, PAPERS.md): the swap-out runs once piece `out_after` of the device
// has ended and frees the region there; the swap-in runs once piece `in_after` has ended (default:
// the piece before `in_before` in the device's order, so that the copy overlaps that piece) and
// `in_before` does not start before it. The region is one block the device holds: the whole output
// of one of its pieces or of a reduce task combining partial results there, or a block it holds
// before the step (a weight, optimizer state or input; lower/schedule.h).
// The device's pieces up to `out_after` read the block, those from `in_before` on read the copy
// swapped in; none between them may read it, and no other device may. `out_before`, if given, is a
// piece after `out_after` that does not start before the swap-out has ended: the piece that needs
// the memory the swap-out frees (SwapAdvisor's control edge swap-out -> consumer), so that a plan
// that fits by its swaps fits however the copies and the computation interleave. Needs the
// device's order. A copy swapped in may be swapped out again: several swaps of one block, each
// with its `out_after` at or after the previous one's `in_before` (they strictly alternate), the
// pieces from each `in_before` to the next `out_after` reading that swap's copy.
//
// A block can also start or end the step on the host (SwapAdvisor keeps parameters there between
// iterations). Without `out_after`, the block is one the device holds before the step that starts
// it on the host: there is no swap-out, and the swap-in brings it for `in_before` (issued after
// `in_after`; absent, after the piece before `in_before`, or at the step's start for the first);
// several such swaps of one block may bring it again, each for the pieces from its `in_before` to
// the next one's (the copies are dropped after their last reader, as the host keeps the block).
// Without `in_before`, the block ends the step on the host: there is no swap-in, and no piece
// after `out_after` may read it. A weight or optimizer state starts on the host exactly where its
// update's output ends there, so that every step starts alike (lower/schedule.h).
struct Swap {
  ir::TensorId tensor;
  tdl::Box region;
  int device = 0;
  std::optional<PieceRef> out_after;  // absent: the block starts the step on the host
  std::optional<PieceRef> in_before;  // absent: the block ends the step on the host
  std::optional<PieceRef> in_after;
  std::optional<PieceRef> out_before;
  bool operator==(Swap const&) const = default;
};

struct Provenance {
  std::string algorithm;  // "single", "data-parallel", "tofu", ...
  std::string config;     // what the algorithm found, as text (e.g. "ways=4,2 comm_bytes=...")
  std::uint64_t seed = 0;
  double search_time_s = 0;
  // The algorithm's options as the search ran with them (key, value), defaults included, in the
  // order the algorithm declares them (search/common/options.h).
  std::vector<std::pair<std::string, std::string>> options;
  // The search budget (search_context.h); absent: unlimited.
  std::optional<double> budget_time_s;
  std::optional<std::int64_t> budget_iterations;
  bool budget_exhausted = false;  // the search stopped at its budget with the best plan so far
  // The course of a search that records one (flexflow); absent for the others.
  std::optional<SearchCourse> course;
  bool interrupted = false;  // stopped from outside (Ctrl-C) with the best plan so far
};

struct Plan {
  std::string graph_fingerprint;  // ir fingerprint of the graph it was made for
  std::string cluster;            // the cluster spec or file it was made for
  // cluster::fingerprint_hex of that cluster, so that a plan is not applied to a cluster file
  // edited since; empty in plans that predate it (then unchecked).
  std::string cluster_fingerprint;
  std::string model;  // the model spec or graph file it was made for
  int num_devices = 1;
  std::vector<OpConfig> ops;  // indexed by op id
  // Per device, the order in which it runs its compute pieces; empty: the policy of the
  // simulator and the runtime (first ready first, ties by lower::canonical_less).
  std::vector<std::vector<PieceRef>> order;
  std::vector<Swap> swaps;  // need `order`
  // Per device, the memory pool that every block held there takes an object of (SwapAdvisor's
  // allocation, memory/pool.h), those held before the step included; the runtime's arena and
  // evaluate() both hold the blocks in it. Empty: no pools; a pool without classes: none on that
  // device.
  std::vector<memory::Pool> pools;
  FetchPolicy fetch = FetchPolicy::shared;
  std::vector<TensorFetch> tensor_fetch;  // overrides `fetch` per tensor; one entry per tensor
  Provenance provenance;
};

// The fetch policy of tensor t: its entry in tensor_fetch, else the plan's.
FetchPolicy fetch_policy(Plan const& plan, ir::TensorId t);

// The pieces of an op under a configuration, in piece order: the cells of the degree grid.
std::vector<tdl::Box> piece_boxes(tdl::BoundOp const& op, OpConfig const& config);

// Every op on device 0, unsplit.
Plan single_device_plan(ir::Graph const& graph, ops::OpRegistry const& registry);

// Checks a plan against a graph: fingerprint, one config per op, one degree per iteration
// dimension, degrees within [1, extent], only splittable dimensions split (the error names the op,
// the dimension and why it cannot be split), a device in range for every piece, if given,
// per-device orders that list every piece exactly once on its own device, per-tensor fetch
// policies of tensors of the graph (one each), and swaps of a region inside their tensor, on a
// device with an order that lists `out_after` before `in_before` (and `in_after`, if given, at or
// after `out_after` and before `in_before`; `out_before`, if given, after `out_after`; the swaps
// of one block that copy it out alternating, each bringing it back before the next takes it
// out), and pools, if given, one per device with classes in ascending object size, each with
// objects. Whether a
// swap's region is a block its device holds, and whether an order agrees with the data
// dependencies, the lowering checks (it knows both).
Status validate(Plan const& plan, ir::Graph const& graph, ops::OpRegistry const& registry);
// The per-op part of `validate`: degrees and devices of one op's configuration.
Status validate_op(OpConfig const& config, ir::Op const& op, tdl::BoundOp const& bound,
                   int num_devices);

}  // namespace cleave::plan
