// The Python module's shared pieces (docs/python.md): the objects Python holds, the op registry
// every call uses, and the one way a cleave Error becomes a Python exception.
#pragma once

#include <memory>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl_bind.h>
#include <string>

#include "api/plan_input.h"

// Plan.ops is a list whose items Python edits in place (plan.ops[i].degrees = [...]).
PYBIND11_MAKE_OPAQUE(std::vector<cleave::plan::OpConfig>)

namespace cleave::python {

namespace py = pybind11;

// A cluster with the spec it was loaded from (what a plan records of it).
struct ClusterInput {
  std::string spec;
  cluster::Cluster cluster;
};

// A plan with the model and cluster it is for (api::PlanInput, shared with Python's objects).
struct PlanBundle {
  plan::Plan plan;
  std::shared_ptr<api::ModelInput> model;
  std::shared_ptr<ClusterInput> cluster;
};

// Every op cleave knows, the ONNX importer's included; created when the module is imported.
ops::OpRegistry& registry();

// The exception cleave.Error, raised with the error's text ("error[code]: ... in ...").
[[noreturn]] void raise(Error const& error);

template <typename T> T unwrap(Expected<T> value) {
  if (!value) raise(value.error());
  return std::move(value).value();
}
inline void unwrap(Status const& status) {
  if (!status) raise(status.error());
}

// nlohmann JSON text as Python objects (dicts, lists, numbers), so that Python sees exactly the
// figures the CLI's --json prints.
py::object from_json(std::string const& text);

void bind_types(py::module_& m);
void bind_functions(py::module_& m);

}  // namespace cleave::python
