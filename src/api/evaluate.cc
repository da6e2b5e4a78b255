#include "api/evaluate.h"

namespace cleave::api {

Expected<sim::Evaluation> evaluate(ModelInput const& model, plan::Plan const& plan,
                                   cost::CostModel const& cost, ops::OpRegistry const& registry,
                                   lower::CollectiveForm collectives) {
  sim::EvaluationContext ctx{model.training, registry, plan, cost, model.batch};
  ctx.collectives = collectives;
  return sim::evaluate(ctx);
}

Expected<double> ideal_step_time(ModelInput const& model, cost::CostModel const& cost,
                                 ops::OpRegistry const& registry) {
  plan::Plan single = plan::single_device_plan(model.training, registry);
  auto devices = cost.cluster().num_devices();
  single.num_devices = static_cast<int>(devices);
  CLEAVE_TRY(sim::Evaluation e, evaluate(model, single, cost, registry));
  return e.prediction.step_time_s / static_cast<double>(devices);
}

}  // namespace cleave::api
