// A plan's schedule (plan.h: per-device orders, swaps) is what both the simulator and the
// executor run: each device's compute pieces start in the plan's order, swaps free device memory
// where the plan says, and the result still matches the unpartitioned graph.
#include <algorithm>
#include <queue>

#include "autodiff/training_graph.h"
#include "runtime_test_util.h"
#include "sim/predict.h"

namespace cleave::runtime {
namespace {

using testing::training_graph;

// Per device, its compute pieces in the order of their spans' starts.
template <typename Span, typename Start>
std::vector<std::vector<plan::PieceRef>>
started(lower::Program const& p, std::vector<Span> const& spans, Start const& start) {
  std::vector<std::vector<lower::TaskId>> ids(static_cast<std::size_t>(p.num_devices));
  for (lower::TaskId i = 0; i < p.tasks.size(); ++i)
    if (p.tasks[i].kind == lower::TaskKind::compute)
      ids[static_cast<std::size_t>(p.tasks[i].device)].push_back(i);
  std::vector<std::vector<plan::PieceRef>> out;
  for (auto& list : ids) {
    std::stable_sort(list.begin(), list.end(), [&](lower::TaskId a, lower::TaskId b) {
      return start(spans[a]) < start(spans[b]);
    });
    out.emplace_back();
    for (auto i : list)
      out.back().push_back({p.tasks[i].op.value(), p.tasks[i].piece});
  }
  return out;
}

// Per device, its compute pieces in a topological order of the whole program's units (tasks, and
// collectives as one, as the simulator takes them) that takes, among the ready units, the last in
// the task list first: far from the simulator's default (first ready, ties by content), and
// consistent across devices since it is one global order.
std::vector<std::vector<plan::PieceRef>> latest_first(lower::Program const& p) {
  std::size_t n = p.tasks.size();
  std::vector<std::uint32_t> unit(n);
  for (lower::TaskId i = 0; i < n; ++i)
    unit[i] = i;
  for (std::size_t c = 0; c < p.collectives.size(); ++c)
    for (auto m : p.collectives[c].members)
      unit[m] = static_cast<std::uint32_t>(n + c);
  std::vector<std::vector<std::uint32_t>> dependents(n + p.collectives.size());
  std::vector<std::size_t> waiting(n + p.collectives.size(), 0);
  for (lower::TaskId i = 0; i < n; ++i)
    for (auto d : p.tasks[i].deps)
      if (unit[d] != unit[i]) {
        dependents[unit[d]].push_back(unit[i]);
        ++waiting[unit[i]];
      }
  auto key = [&](std::uint32_t u) { return u < n ? u : p.collectives[u - n].members.front(); };
  std::priority_queue<std::pair<lower::TaskId, std::uint32_t>> ready;
  for (std::uint32_t u = 0; u < waiting.size(); ++u)
    if (waiting[u] == 0 && (u >= n || unit[u] == u)) ready.push({key(u), u});
  std::vector<std::vector<plan::PieceRef>> order(static_cast<std::size_t>(p.num_devices));
  while (!ready.empty()) {
    auto u = ready.top().second;
    ready.pop();
    if (u < n && p.tasks[u].kind == lower::TaskKind::compute)
      order[static_cast<std::size_t>(p.tasks[u].device)].push_back(
          {p.tasks[u].op.value(), p.tasks[u].piece});
    for (auto v : dependents[u])
      if (--waiting[v] == 0) ready.push({key(v), v});
  }
  return order;
}

struct OrderCase {
  char const* name;
  char const* cluster;
  char const* algo;
};
void PrintTo(OrderCase const& c, std::ostream* os) {
  *os << c.cluster << ' ' << c.algo;
}

class PlanOrder : public ::testing::TestWithParam<OrderCase> {};

TEST_P(PlanOrder, SimulatedAndExecutedOrdersAreThePlans) {
  auto registry = ops::OpRegistry::with_builtins();
  std::string spec = "mlp:layers=2,hidden=32,input=24,classes=4,batch=8";
  ir::Graph g = training_graph(spec, *registry);
  auto cluster = *cluster::load_cluster(GetParam().cluster);
  cost::CostModel cost(cluster);
  auto p = testing::make_plan(g, *registry, cluster, spec, GetParam().algo, 8);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  auto plain = lower::lower(g, *p, *registry);
  ASSERT_TRUE(plain.has_value());
  auto by_default = sim::predict(g, *plain, cost, 8);
  p->order = latest_first(*plain);
  auto default_order = started(*plain, by_default.sim.spans, [](auto s) { return s.start; });
  EXPECT_NE(default_order, p->order) << "the test's order is the default one";

  auto program = lower::lower(g, *p, *registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  EXPECT_FALSE(program->ordering.empty());
  auto predicted = sim::predict(g, *program, cost, 8);
  EXPECT_EQ(started(*program, predicted.sim.spans, [](auto s) { return s.start; }), p->order);

  auto exec = Executor::create(g, *program, *registry, testing::devices_of(cluster));
  ASSERT_TRUE(exec.has_value()) << exec.error().to_string();
  TrainingConfig config;
  InProcessBackend backend;
  config.exec.backend = &backend;
  config.exec.capture = checked_tensors(g, "loss");
  auto run = run_training(*exec, config);
  ASSERT_TRUE(run.has_value()) << run.error().to_string();
  EXPECT_EQ(started(*program, run->steps[0].spans, [](auto s) { return s.start; }), p->order);
  auto report = check_against_reference(g, *registry, *run, config, "loss", default_tolerance);
  ASSERT_TRUE(report.has_value()) << report.error().to_string();
  EXPECT_TRUE(report->passed) << report->worst << " " << report->max_relative_error;
}

INSTANTIATE_TEST_SUITE_P(Devices, PlanOrder,
                         ::testing::Values(OrderCase{"one_single", "cpu:devices=1", "single"},
                                           OrderCase{"two_data_parallel", "cpu:devices=2",
                                                     "data-parallel"},
                                           OrderCase{"two_tofu", "cpu:devices=2", "tofu"}),
                         [](auto const& info) { return std::string(info.param.name); });

TEST(PlanOrder, AnOrderAgainstTheDataIsAnErrorNamingTwoPieces) {
  auto registry = ops::OpRegistry::with_builtins();
  std::string spec = "mlp:layers=1,hidden=8,input=6,classes=3,batch=4";
  ir::Graph g = training_graph(spec, *registry);
  plan::Plan p = plan::single_device_plan(g, *registry);
  std::vector<plan::PieceRef> order;
  for (ir::OpId op : g.topo_order())
    order.push_back({op.value(), 0});
  std::swap(order[0], order[1]);  // the first op reads nothing the second writes; the reverse?
  p.order = {order};
  auto program = lower::lower(g, p, *registry);
  ir::Op const& first = g.op(g.topo_order()[0]);
  ir::Op const& second = g.op(g.topo_order()[1]);
  bool reads = std::find(second.inputs.begin(), second.inputs.end(), first.outputs[0]) !=
               second.inputs.end();
  ASSERT_TRUE(reads) << "the test needs the second op to read the first's output";
  ASSERT_FALSE(program.has_value());
  std::string message = program.error().message();
  EXPECT_NE(message.find("contradicts the data dependencies"), std::string::npos) << message;
  EXPECT_NE(message.find("op '" + first.name + "' piece 0"), std::string::npos) << message;
  EXPECT_NE(message.find("op '" + second.name + "' piece 0"), std::string::npos) << message;
}

}  // namespace
}  // namespace cleave::runtime
