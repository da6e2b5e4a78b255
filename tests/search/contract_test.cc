// The search contract (issue 14 part 3): typed options (an unknown key or a malformed value is an
// error listing the valid keys), the seeded engine, budgets (one iteration or a tiny time still
// leave a valid plan, and the provenance records them), progress reports, the cost model reaching
// tofu-ranked, and the table's --help text.
#include <fstream>
#include <gtest/gtest.h>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "lower/program.h"
#include "models/model_zoo.h"
#include "search/search.h"

namespace cleave::search {
namespace {

struct Planning {
  std::shared_ptr<ops::OpRegistry> registry = ops::OpRegistry::with_builtins();
  ir::Graph graph = *autodiff::build_training_graph(
      *models::ModelZoo::with_builtins().build("mlp:layers=2,hidden=8,input=4,classes=4,batch=8",
                                               *registry),
      *registry);
  cluster::Cluster cluster = *cluster::load_cluster("cpu:devices=8");
  cost::CostModel cost{cluster};

  SearchContext context() const { return {graph, *registry, cost, "cpu:devices=8", "mlp", 8, 0}; }
};

// A plan every later stage accepts: it validates and lowers.
void expect_usable(Planning const& s, plan::Plan const& p) {
  auto st = plan::validate(p, s.graph, *s.registry);
  EXPECT_TRUE(st.is_ok()) << st.error().to_string();
  EXPECT_TRUE(lower::lower(s.graph, p, *s.registry).has_value());
}

void expect_error(Expected<plan::Plan> const& p, std::string const& text) {
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.error().message().find(text), std::string::npos) << p.error().message();
}

TEST(SearchOptions, UnknownKeyOrMalformedValueListsTheValidKeys) {
  Planning s;
  SearchContext ctx = s.context();
  ctx.options = {{"max_tables", "4"}};
  auto unknown = make_plan("tofu", ctx);
  ASSERT_FALSE(unknown.has_value());
  std::string message = unknown.error().message();
  EXPECT_NE(message.find("unknown option 'max_tables'"), std::string::npos) << message;
  for (char const* key : {"ways (integers a,b,...)", "fetch (one of per-pass|shared)",
                          "max_table_entries (integer)", "max_factor_entries (integer)"})
    EXPECT_NE(message.find(key), std::string::npos) << key << " in " << message;

  ctx.options = {{"max_table_entries", "lots"}};
  expect_error(make_plan("optcnn", ctx), "max_table_entries=lots is not integer");
  ctx.options = {{"fetch", "lazy"}};
  expect_error(make_plan("tofu", ctx), "fetch=lazy is not one of per-pass|shared");
  ctx.options = {{"ways", "2,"}};
  expect_error(make_plan("tofu", ctx), "ways=2, is not integers a,b,...");
  ctx.options = {{"ways", "3,2"}};  // 6 is not the 8 devices
  expect_error(make_plan("tofu", ctx), "their product the 8 devices");
  ctx.options = {{"ways", "4"}};
  expect_error(make_plan("single", ctx), "single has no options");
}

TEST(SearchOptions, SetValuesAndDefaultsReachTheSearchAndItsProvenance) {
  Planning s;
  SearchContext ctx = s.context();
  ctx.options = {{"ways", "4,2"}, {"fetch", "shared"}};
  auto p = make_plan("tofu", ctx);
  ASSERT_TRUE(p.has_value()) << p.error().to_string();
  expect_usable(s, *p);
  EXPECT_NE(p->provenance.config.find("ways=4,2 fetch=shared"), std::string::npos)
      << p->provenance.config;
  EXPECT_EQ(p->fetch, plan::FetchPolicy::shared);
  OptionSettings expected = {{"ways", "4,2"},
                             {"fetch", "shared"},
                             {"max_table_entries", "4194304"},
                             {"max_factor_entries", "65536"}};
  EXPECT_EQ(p->provenance.options, expected);
  EXPECT_FALSE(p->provenance.budget_time_s.has_value());
  EXPECT_FALSE(p->provenance.budget_iterations.has_value());
  EXPECT_FALSE(p->provenance.budget_exhausted);
}

// `cleave compare`: one setting serves every compared algorithm that declares it.
TEST(SearchOptions, CompareSettingsGoToTheAlgorithmsThatDeclareThem) {
  std::vector<std::string> compared = {"single", "tofu", "optcnn"};
  OptionSettings set = {{"fetch", "shared"}, {"max_table_entries", "64"}};
  EXPECT_EQ(*settings_for("tofu", compared, set), set);
  EXPECT_EQ(*settings_for("optcnn", compared, set), (OptionSettings{{"max_table_entries", "64"}}));
  EXPECT_TRUE(settings_for("single", compared, set)->empty());
  auto none = settings_for("single", {"single", "optcnn"}, set);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("optcnn: max_table_entries (integer)"), std::string::npos)
      << none.error().message();
}

TEST(SearchSeed, SameSeedSameEngineAndSamePlan) {
  Planning s;
  SearchContext ctx = s.context();
  ctx.seed = 42;
  auto a = ctx.rng(), b = ctx.rng();
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(a(), b());
  SearchContext other = s.context();
  other.seed = 43;
  EXPECT_NE(ctx.rng()(), other.rng()());
  for (char const* algo : {"tofu", "tofu-ranked", "optcnn"}) {
    auto p = make_plan(algo, ctx), q = make_plan(algo, ctx);
    ASSERT_TRUE(p.has_value() && q.has_value()) << algo;
    EXPECT_EQ(p->provenance.seed, 42u);
    EXPECT_EQ(p->provenance.config, q->provenance.config) << algo;
    ASSERT_EQ(p->ops.size(), q->ops.size());
    for (std::size_t op = 0; op < p->ops.size(); ++op) {
      EXPECT_EQ(p->ops[op].degrees, q->ops[op].degrees) << algo << " op " << op;
      EXPECT_EQ(p->ops[op].devices, q->ops[op].devices) << algo << " op " << op;
    }
  }
}

// One iteration (tofu: one of its 3 steps; tofu-ranked: one of its candidates; optcnn: one
// elimination) or a time already spent: still a usable plan, the budget recorded.
TEST(SearchBudget, OneIterationOrATinyTimeStillLeavesAUsablePlan) {
  Planning s;
  for (char const* algo : {"tofu", "tofu-ranked", "optcnn"}) {
    SearchContext ctx = s.context();
    ctx.budget.iterations = 1;
    auto p = make_plan(algo, ctx);
    ASSERT_TRUE(p.has_value()) << algo << ": " << p.error().to_string();
    expect_usable(s, *p);
    EXPECT_EQ(p->provenance.budget_iterations, std::optional<std::int64_t>(1)) << algo;
    EXPECT_TRUE(p->provenance.budget_exhausted) << algo;

    ctx.budget = {Seconds(1e-9), std::nullopt};
    auto q = make_plan(algo, ctx);
    ASSERT_TRUE(q.has_value()) << algo << ": " << q.error().to_string();
    expect_usable(s, *q);
    EXPECT_EQ(q->provenance.budget_time_s, std::optional<double>(1e-9)) << algo;
    EXPECT_TRUE(q->provenance.budget_exhausted) << algo;
  }
  SearchContext ctx = s.context();
  ctx.budget.iterations = 1;
  // tofu stops after its first 2-way cut: every op on devices 0 and 1.
  auto tofu = make_plan("tofu", ctx);
  EXPECT_NE(tofu->provenance.config.find("ways=2 "), std::string::npos) << tofu->provenance.config;
  for (auto const& op : tofu->ops)
    for (int d : op.devices)
      EXPECT_LT(d, 2);
  // tofu-ranked ranked one candidate of its eight.
  auto ranked = make_plan("tofu-ranked", ctx);
  EXPECT_EQ(ranked->provenance.config.find(';'), std::string::npos) << ranked->provenance.config;
  EXPECT_NE(make_plan("optcnn", ctx)->provenance.config.find("approximate"), std::string::npos);

  // A budget the whole search fits in is not exhausted.
  ctx.budget.iterations = 3;
  EXPECT_FALSE(make_plan("tofu", ctx)->provenance.budget_exhausted);
  ctx.budget.iterations = 0;
  expect_error(make_plan("tofu", ctx), "at least 1 iteration");
}

TEST(SearchProgress, IterationsAndTheBestSoFarAreReportedThenDone) {
  Planning s;
  SearchContext ctx = s.context();
  std::vector<Progress> seen;
  ctx.progress = [&](Progress const& p) { seen.push_back(p); };
  ASSERT_TRUE(make_plan("tofu-ranked", ctx).has_value());
  ASSERT_GE(seen.size(), 2u);
  EXPECT_TRUE(seen.back().done);
  std::int64_t last = 0;
  std::optional<Seconds> best;
  for (std::size_t i = 0; i + 1 < seen.size(); ++i) {
    EXPECT_GE(seen[i].iterations, last);
    last = seen[i].iterations;
    if (!seen[i].best_step_time) continue;
    if (best) {
      EXPECT_LE(*seen[i].best_step_time, *best);
    }
    best = seen[i].best_step_time;
  }
  EXPECT_EQ(last, 8);  // 4 step sequences of 8 devices, 2 fetch policies
  EXPECT_TRUE(best.has_value());

  seen.clear();
  ASSERT_TRUE(make_plan("tofu", ctx).has_value());
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen[seen.size() - 2].iterations, 3);  // 8 = 2 * 2 * 2
  EXPECT_TRUE(seen[seen.size() - 2].best_comm.has_value());
}

// The context's cost model prices tofu-ranked's candidates: a profile that makes linear layers
// 10^6 times slower changes every candidate's simulated step time.
TEST(SearchCost, AProfileReachesTofuRanked) {
  Planning s;
  cost::ProfileTable slow;
  cost::DeviceCalibration linear;
  linear.efficiency = {{"linear", 1e-6}, {"linear_grad_input", 1e-6}, {"linear_grad_weight", 1e-6}};
  ASSERT_TRUE(slow.add_calibration(s.cluster.device(cluster::DeviceId(0)).kind, linear).is_ok());
  cost::CostModel profiled(s.cluster, {}, slow);
  SearchContext plain = s.context();
  SearchContext measured{s.graph, *s.registry, profiled, "cpu:devices=8", "mlp", 8, 0};
  auto a = make_plan("tofu-ranked", plain), b = make_plan("tofu-ranked", measured);
  ASSERT_TRUE(a.has_value() && b.has_value());
  // "candidates=WAYS/FETCH:SECONDSs;...": the first candidate's simulated step time.
  auto first_time = [](plan::Plan const& p) {
    auto const& c = p.provenance.config;
    auto at = c.find(':', c.find("candidates="));
    return std::stod(c.substr(at + 1));
  };
  EXPECT_GT(first_time(*b), 10 * first_time(*a)) << a->provenance.config << "\n"
                                                 << b->provenance.config;
}

TEST(SearchTable, HelpNamesEveryAlgorithmWithItsOptions) {
  std::string help = algorithms_help();
  auto infos = algorithm_infos();
  EXPECT_EQ(infos.size(), 17u);
  for (auto const& info : infos) {
    EXPECT_NE(help.find("  " + info.name + ": " + info.summary), std::string::npos) << info.name;
    for (auto const& o : info.options)
      EXPECT_NE(help.find("--option " + o.name + "=<" + type_text(o) + ">"), std::string::npos)
          << info.name << " " << o.name;
  }
}

// docs/search.md quotes the list; a change to the table must update it.
TEST(SearchTable, DocsListEveryAlgorithmAsHelpDoes) {
  std::ifstream in(std::string(CLEAVE_DOCS_DIR) + "/search.md");
  std::string doc{std::istreambuf_iterator<char>(in), {}};
  auto begin = doc.find("<!-- algorithms_help begin -->\n```\n");
  auto end = doc.find("```\n<!-- algorithms_help end -->");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  begin += std::string("<!-- algorithms_help begin -->\n```\n").size();
  EXPECT_EQ(doc.substr(begin, end - begin), algorithms_help());
}

}  // namespace
}  // namespace cleave::search
