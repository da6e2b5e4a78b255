// Plans written in an older format still load and lower to the program they lowered to when they
// were written (DESIGN.md STYLE 9). The files under golden/ were written by `cleave plan` in
// cleave.plan/1; each `.program.txt` beside one is the program that the lowering of that time made
// of it, one task per line (golden_plan_test.cc, dump()).
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

#include "autodiff/training_graph.h"
#include "lower/lowering.h"
#include "models/model_zoo.h"
#include "plan/plan_json.h"

namespace cleave::lower {
namespace {

std::string box_text(tdl::Box const& b) {
  return tdl::box_to_string(b);
}

// Everything a task is, dependencies included, as text.
std::string dump(Program const& p) {
  std::ostringstream out;
  for (auto const& b : p.initial)
    out << "initial " << b.tensor.value() << ' ' << box_text(b.region) << " @" << b.device << '\n';
  for (TaskId i = 0; i < p.tasks.size(); ++i) {
    Task const& t = p.tasks[i];
    out << i << ' ' << static_cast<int>(t.kind) << " @" << t.device << " from " << t.source_device
        << " op " << t.op.value() << '.' << t.piece << ' ' << box_text(t.iteration) << " t"
        << t.tensor.value() << ' ' << box_text(t.region) << (t.partial ? " partial" : "") << " r"
        << static_cast<int>(t.reducer) << " f" << t.flops.value() << " b" << t.bytes.value() << " c"
        << static_cast<std::int64_t>(t.collective == no_collective ? -1 : t.collective) << " deps";
    for (auto d : t.deps)
      out << ' ' << d;
    out << '\n';
  }
  for (auto const& c : p.collectives) {
    out << "collective " << static_cast<int>(c.kind) << " t" << c.tensor.value() << ' '
        << box_text(c.region) << " b" << c.bytes.value() << " members";
    for (auto m : c.members)
      out << ' ' << m;
    out << '\n';
  }
  return out.str();
}

std::string read_text(std::string const& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class GoldenPlan : public ::testing::TestWithParam<char const*> {};

TEST_P(GoldenPlan, LoadsAndLowersAsBefore) {
  std::string base = std::string(CLEAVE_PLAN_GOLDEN_DIR) + "/" + GetParam();
  auto plan = plan::load_plan(base + ".json");
  ASSERT_TRUE(plan.has_value()) << plan.error().to_string();
  auto registry = ops::OpRegistry::with_builtins();
  auto forward = models::ModelZoo::with_builtins().build(plan->model, *registry);
  ASSERT_TRUE(forward.has_value()) << forward.error().to_string();
  auto graph = autodiff::build_training_graph(*forward, *registry, {});
  ASSERT_TRUE(graph.has_value()) << graph.error().to_string();
  auto program = lower(*graph, *plan, *registry);
  ASSERT_TRUE(program.has_value()) << program.error().to_string();
  std::string expected_path = base + ".program.txt";
  std::string expected = read_text(expected_path);
  ASSERT_FALSE(expected.empty()) << "missing " << expected_path;
  EXPECT_EQ(dump(*program), expected);
}

INSTANTIATE_TEST_SUITE_P(V1, GoldenPlan,
                         ::testing::Values("plan_v1_mlp_data_parallel", "plan_v1_mlp_tofu"));

}  // namespace
}  // namespace cleave::lower
