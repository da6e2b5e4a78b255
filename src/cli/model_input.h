// What every command that takes a MODEL accepts: a zoo spec "NAME[:key=value,...]" or a graph
// file (.json, forward or training graph). Later: .onnx.
#pragma once

#include <optional>
#include <string>

#include "autodiff/training_graph.h"
#include "models/model_zoo.h"

namespace cleave::cli {

struct ModelInput {
  std::string label;                 // the canonical zoo spec or the file path
  std::optional<ir::Graph> forward;  // absent when the file held a training graph
  ir::Graph training;
};

Expected<ModelInput> load_model(std::string const& spec, ops::OpRegistry const& registry,
                                autodiff::TrainingOptions const& options);

}  // namespace cleave::cli
