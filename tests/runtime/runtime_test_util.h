// Shared by the runtime tests: a zoo model's training graph, a plan by any algorithm on a cpu
// cluster, and its run checked against the unpartitioned reference.
#pragma once

#include <gtest/gtest.h>

#include "autodiff/training_graph.h"
#include "cluster/presets.h"
#include "lower/program.h"
#include "models/model_zoo.h"
#include "runtime/check.h"
#include "runtime/comm_backend.h"
#include "search/search.h"

namespace cleave::runtime::testing {

inline ir::Graph training_graph(std::string const& spec, ops::OpRegistry const& registry) {
  auto forward = models::ModelZoo::with_builtins().build(spec, registry);
  CLEAVE_ASSERT(forward.has_value(), "a test model does not build");
  auto g = autodiff::build_training_graph(*forward, registry);
  CLEAVE_ASSERT(g.has_value(), "a test model has no training graph");
  return std::move(*g);
}

inline std::vector<DeviceInfo> devices_of(cluster::Cluster const& c) {
  std::vector<DeviceInfo> out;
  for (auto const& d : c.devices())
    out.push_back({d.name, d.memory});
  return out;
}

inline Expected<plan::Plan> make_plan(ir::Graph const& g, ops::OpRegistry const& registry,
                                      cluster::Cluster const& cluster, std::string const& spec,
                                      std::string const& algo, std::int64_t batch) {
  cost::CostModel cost(cluster);
  search::SearchContext ctx{g, registry, cost, spec, "test", batch, 0};
  // flexflow's default budget (3000 proposals) on every model and cluster would pass the test's
  // time; a shorter chain still leaves the irregular configurations the runtime has to check.
  if (algo == "flexflow") ctx.budget.iterations = 300;
  return search::make_plan(algo, ctx);
}

// The same, on the cluster `spec` names.
inline Expected<plan::Plan> make_plan(ir::Graph const& g, ops::OpRegistry const& registry,
                                      std::string const& spec, std::string const& algo,
                                      std::int64_t batch) {
  CLEAVE_TRY(auto cluster, cluster::load_cluster(spec));
  return make_plan(g, registry, cluster, spec, algo, batch);
}

inline Expected<Executor> executor_for(ir::Graph const& g, plan::Plan const& p,
                                       ops::OpRegistry const& registry,
                                       cluster::Cluster const& cluster) {
  CLEAVE_TRY(lower::Program program, lower::lower(g, p, registry));
  return Executor::create(g, std::move(program), registry, devices_of(cluster));
}

// A small mlp (batch 8) and its data-parallel plan on cpu:devices=2, ready to run: what the fault
// and communication tests break one way each.
constexpr char const* small_mlp = "mlp:layers=2,hidden=6,input=5,classes=3,batch=8";
inline Expected<Executor> data_parallel_executor(ir::Graph const& g,
                                                 ops::OpRegistry const& registry) {
  auto cluster = *cluster::load_cluster("cpu:devices=2");
  CLEAVE_TRY(plan::Plan p, make_plan(g, registry, cluster, "cpu:devices=2", "data-parallel", 8));
  return executor_for(g, p, registry, cluster);
}

// One step with a backend of its own.
inline Expected<StepResult> run_one_step(Executor const& exec, Values const& sources,
                                         ExecOptions options = {}) {
  InProcessBackend backend;
  options.backend = &backend;
  return exec.run_step(sources, options);
}

// Runs the plan `steps` steps with `backend` (null: an in-process one) and checks it against the
// reference.
inline Expected<CheckReport> run_and_check(ir::Graph const& g, plan::Plan const& p,
                                           ops::OpRegistry const& registry,
                                           cluster::Cluster const& cluster, int steps = 1,
                                           CommBackend* backend = nullptr) {
  CLEAVE_TRY(Executor exec, executor_for(g, p, registry, cluster));
  InProcessBackend in_process;
  TrainingConfig config;
  config.exec.backend = backend ? backend : &in_process;
  config.steps = steps;
  config.exec.capture = checked_tensors(g, "loss");
  CLEAVE_TRY(TrainingRun run, run_training(exec, config));
  return check_against_reference(g, registry, run, config, "loss", default_tolerance);
}

}  // namespace cleave::runtime::testing
