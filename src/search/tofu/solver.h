// The DP as plain data (XLA auto-sharding style, STYLE.md): a request of nodes (each with a number
// of strategies), cost factors over small sets of nodes (a node's own cost, an edge's cost table,
// or a table over a producer and all consumers of one tensor), and a limit on table size; solve()
// returns a strategy per node. It knows nothing of graphs or plans, so tests build requests by
// hand and compare with exhaustive search.
//
// solve() is OptCNN's node and edge elimination (ICML'18, PAPERS.md §1) in its general form,
// bucket (variable) elimination: eliminating a node sums every factor that mentions it and
// minimises the node out, leaving one factor over its neighbours. On a chain this is exactly
// OptCNN's node elimination (a node with two neighbours becomes an edge between them); factors
// with the same scope are merged as in edge elimination. Exact whenever no intermediate table
// exceeds `max_table_entries`; past it, the bucket is split into mini-buckets (each minimised on
// its own, a lower bound) and the node is chosen afterwards by the sum of all its factors given
// its already chosen neighbours: a documented approximation, reported in Result::exact.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cleave::search::tofu {

// A cost table over `scope` (distinct node ids, any order); entry index is mixed radix with the
// first scope node most significant: index = ((s0 * n1) + s1) * n2 + s2 ...
struct Factor {
  std::vector<int> scope;
  std::vector<std::int64_t> table;  // communication bytes
};

struct Request {
  std::vector<int> num_strategies;  // per node, >= 1
  std::vector<Factor> factors;
  // The largest table (over a bucket's whole scope) built exactly; larger buckets are split.
  std::int64_t max_table_entries = std::int64_t{1} << 22;
  // Asked after every elimination (a search's budget and progress, search/common/progress.h);
  // once it says false, every later bucket is split into single factors: the rest of the
  // elimination is fast and approximate (Result::exact false) and still chooses every node.
  // Empty: exact to the end.
  std::function<bool()> keep_going;
};

struct Result {
  std::vector<int> strategy;     // per node
  std::int64_t cost = 0;         // evaluate(request, strategy)
  std::int64_t lower_bound = 0;  // == cost when exact
  bool exact = true;             // false when some bucket was split (mini-buckets)
  int largest_scope = 0;         // the widest bucket eliminated (nodes), for reports
};

// Checks sizes and strategy ranges; an error message says which factor or node is wrong.
std::string check_request(Request const& request);
// Total cost of one strategy per node.
std::int64_t evaluate(Request const& request, std::vector<int> const& strategy);
// Deterministic: the elimination order and every tie break depend only on the request (and on
// when keep_going first says false).
Result solve(Request const& request);
// Exhaustive search (for tests); the first minimum in mixed-radix order of the nodes.
Result solve_exhaustive(Request const& request);

}  // namespace cleave::search::tofu
