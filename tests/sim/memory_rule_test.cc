// The simulator's memory accounting (predict.cc, computed inline for speed) follows the one rule
// lower::output_lifetimes states and the runtime's arenas apply: here the peak of every device is
// recomputed from output_lifetimes over the simulated spans and must equal the prediction's, on
// plans of every shape of program (collectives, partial sums, halos, model parallel chains).
#include <gtest/gtest.h>

#include <algorithm>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "lower/lifetime.h"
#include "models/model_zoo.h"
#include "search/search.h"
#include "sim/predict.h"

namespace cleave::sim {
namespace {

// Peak bytes per device by output_lifetimes: blocks held before the step from time 0; a task's
// output from its start to the end of its last reader (to the end of the step without readers;
// a swapped block until its swap-out, which frees when it ends). At equal times frees come first.
std::vector<std::int64_t> peaks_by_lifetimes(ir::Graph const& graph, lower::Program const& program,
                                             std::vector<TaskSpan> const& spans) {
  auto bytes = [&](ir::TensorId t, tdl::Box const& region) {
    return tdl::box_volume(region) * ir::dtype_bytes(graph.tensor(t).type.dtype);
  };
  struct Event {
    double time;
    bool alloc;
    std::int64_t bytes;
  };
  std::vector<std::vector<Event>> events(static_cast<std::size_t>(program.num_devices));
  for (auto const& b : program.initial)
    events[static_cast<std::size_t>(b.device)].push_back({0.0, true, bytes(b.tensor, b.region)});
  auto lifetimes = lower::output_lifetimes(program);
  for (lower::TaskId i = 0; i < program.tasks.size(); ++i) {
    auto const& t = program.tasks[i];
    auto& on = events[static_cast<std::size_t>(t.device)];
    std::int64_t size = bytes(t.tensor, t.region);
    if (!lifetimes[i].allocates) {
      on.push_back({spans[i].end, false, size});
      continue;
    }
    on.push_back({spans[i].start, true, size});
    if (lifetimes[i].readers.empty() || lifetimes[i].swapped) continue;
    double last = 0;
    for (auto r : lifetimes[i].readers)
      last = std::max(last, spans[r].end);
    on.push_back({last, false, size});
  }
  std::vector<std::int64_t> peaks;
  for (auto& on : events) {
    std::stable_sort(on.begin(), on.end(), [](Event const& a, Event const& b) {
      return a.time != b.time ? a.time < b.time : !a.alloc && b.alloc;
    });
    std::int64_t now = 0, peak = 0;
    for (auto const& e : on)
      peak = std::max(peak, now += e.alloc ? e.bytes : -e.bytes);
    peaks.push_back(peak);
  }
  return peaks;
}

struct Case {
  char const* model;
  char const* cluster;
  char const* algo;
  std::int64_t batch;
};

TEST(MemoryRule, PredictedPeaksFollowTheLifetimeRule) {
  auto registry = ops::OpRegistry::with_builtins();
  auto zoo = models::ModelZoo::with_builtins();
  Case const cases[] = {
      {"mlp:layers=3,hidden=64,input=32,classes=8,batch=16", "cpu:devices=4", "data-parallel", 16},
      {"mlp:layers=3,hidden=64,input=32,classes=8,batch=16", "cpu:devices=4", "tofu", 16},
      {"gpt:layers=2,hidden=64,heads=4,seq=16,batch=4,vocab=64", "dgx-a100", "expert", 4},
      {"gpt:layers=2,hidden=64,heads=4,seq=16,batch=4,vocab=64", "cpu:devices=2", "optcnn", 4},
      {"resnet:depth=18,image=32,batch=8,classes=10", "cpu:devices=2", "tofu", 8},
      {"rnn:layers=2,hidden=32,steps=3,batch=4,vocab=16", "cpu:devices=2", "expert", 4},
  };
  for (auto const& c : cases) {
    SCOPED_TRACE(std::string(c.model) + " " + c.cluster + " " + c.algo);
    auto graph = autodiff::build_training_graph(*zoo.build(c.model, *registry), *registry);
    ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
    auto cluster = cluster::load_cluster(c.cluster);
    ASSERT_TRUE(cluster.has_value());
    cost::CostModel cost(*cluster);
    search::SearchContext ctx{*graph, *registry, cost, c.cluster, c.model, c.batch, 0};
    auto plan = search::make_plan(c.algo, ctx);
    ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
    auto program = lower::lower(*graph, *plan, *registry);
    ASSERT_TRUE(program.has_value()) << program.error().to_string();
    Prediction p = predict(*graph, *program, cost::CostModel(*cluster), c.batch);
    auto expected = peaks_by_lifetimes(*graph, *program, p.sim.spans);
    EXPECT_EQ(p.peak_memory_bytes, expected);
    EXPECT_GT(*std::max_element(expected.begin(), expected.end()), 0);
  }
}

}  // namespace
}  // namespace cleave::sim
