// A plan evaluated on a loaded model (sim::evaluate with the model's training graph and samples
// per step), and the ideal step time that plan tables measure efficiency against.
#pragma once

#include "api/model_input.h"
#include "sim/evaluate.h"

namespace cleave::api {

// `collectives`: explicit_transfers for a program to run (sim::EvaluationContext).
Expected<sim::Evaluation>
evaluate(ModelInput const& model, plan::Plan const& plan, cost::CostModel const& cost,
         ops::OpRegistry const& registry,
         lower::CollectiveForm collectives = lower::CollectiveForm::per_device);

// The single-device step on the cluster's first device, divided by the cluster's devices.
Expected<double> ideal_step_time(ModelInput const& model, cost::CostModel const& cost,
                                 ops::OpRegistry const& registry);

}  // namespace cleave::api
