// The simulator's memory accounting (predict.cc, computed inline for speed) follows the one rule
// lower::output_lifetimes states and the runtime's arenas apply: evaluate() accounts memory block
// by block from output_lifetimes (sim/memory_use.h), and every device's peak there must equal the
// prediction's, on plans of every shape of program (collectives, partial sums, halos, model
// parallel chains); what is live at the peak by role adds up to it.
#include <algorithm>
#include <gtest/gtest.h>
#include <numeric>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "models/model_zoo.h"
#include "search/search.h"
#include "sim/evaluate.h"

namespace cleave::sim {
namespace {

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
    auto e = evaluate({*graph, *registry, *plan, cost, c.batch});
    ASSERT_TRUE(e.has_value()) << e.error().to_string();
    std::vector<std::int64_t> peaks;
    for (auto const& d : e->devices) {
      auto const& m = d.memory;
      peaks.push_back(m.peak_bytes);
      EXPECT_EQ(std::accumulate(m.peak_by_role.begin(), m.peak_by_role.end(), std::int64_t{0}),
                m.peak_bytes);
      for (auto bytes : m.peak_by_role)
        EXPECT_GE(bytes, 0);
      std::int64_t highest = 0;
      for (auto const& point : m.timeline)
        highest = std::max(highest, point.bytes);
      EXPECT_EQ(highest, m.peak_bytes);
      for (std::size_t i = 1; i < m.timeline.size(); ++i)
        EXPECT_LT(m.timeline[i - 1].time_s, m.timeline[i].time_s);
      for (std::size_t i = 1; i < m.largest_at_peak.size(); ++i)
        EXPECT_GE(m.largest_at_peak[i - 1].bytes, m.largest_at_peak[i].bytes);
      auto const& t = d.time;
      EXPECT_NEAR(t.compute_s + t.exposed_comm_s + t.exposed_swap_s + t.idle_s,
                  e->prediction.step_time_s, 1e-9);
    }
    EXPECT_EQ(e->prediction.peak_memory_bytes, peaks);
    EXPECT_GT(*std::max_element(peaks.begin(), peaks.end()), 0);
  }
}

}  // namespace
}  // namespace cleave::sim
