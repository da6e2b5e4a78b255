// What every command that takes a MODEL accepts: a zoo spec "NAME[:key=value,...]", a graph
// file (.json, forward or training graph) or an ONNX model (.onnx, docs/import.md).
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "autodiff/precision.h"
#include "autodiff/training_graph.h"
#include "cluster/cluster.h"
#include "import/onnx_import.h"
#include "models/model_zoo.h"

namespace cleave::api {

// How a forward graph becomes a training graph (autodiff), as the commands' flags say.
struct TrainingFlags {
  std::string optimizer = "sgd";  // sgd (with momentum) or adam
  std::optional<double> learning_rate;
  std::string loss = "loss";
  // .onnx models: import ops cleave has no mapping for as opaque ops instead of failing.
  bool allow_opaque = false;
  // --precision (autodiff/precision.h): empty for the zoo spec's `precision` key, else fp32.
  std::string precision;
  // A progress line here while an .onnx or graph file loads, when it is a terminal (the shells
  // give stderr); null: none.
  std::FILE* progress = nullptr;
};
Expected<autodiff::TrainingOptions> training_options(TrainingFlags const& flags);

struct ModelInput {
  std::string label;                 // the canonical zoo spec or the file path
  std::optional<ir::Graph> forward;  // absent when the file held a training graph
  ir::Graph training;
  // Samples per step: the zoo model's `batch`, or the first dimension of a graph file's first
  // input tensor.
  std::int64_t batch = 1;
  autodiff::Precision precision = autodiff::Precision::fp32;
};

// An .onnx file's forward graph with the flags' import options (--loss names an ONNX tensor
// unless it is the default, --allow-opaque).
Expected<importer::ImportResult>
import_onnx(std::string const& path, ops::OpRegistry const& registry, TrainingFlags const& flags);

Expected<ModelInput> load_model(std::string const& spec, ops::OpRegistry const& registry,
                                TrainingFlags const& flags);

// The precision a model trains in by default on `cluster`, as users run it (issue 24): amp-bf16
// for the zoo's transformers (gpt, bert) when every device is an A100 or H100 and neither the spec
// nor --precision names one; else empty (the model's own default, fp32).
std::string default_precision(std::string const& spec, TrainingFlags const& flags,
                              cluster::Cluster const& cluster);

}  // namespace cleave::api
