// The classes of the Python module: Model (api::ModelInput), Cluster, Plan with its OpConfigs and
// PlanInput. Names follow the C++ ones (STYLE.md #2).
#include "cluster/cluster_json.h"
#include "plan/plan_json.h"
#include "python/bindings.h"

namespace cleave::python {

namespace {

ir::OpId op_named(api::ModelInput const& model, std::string const& name) {
  auto id = model.training.find_op(name);
  if (!id) raise(Error(ErrorCode::not_found, "the model has no op named '" + name + "'"));
  return *id;
}

// The op's iteration dimensions as dicts: name, extent, kind, splittable (why not, if not).
py::list op_dims(api::ModelInput const& model, std::string const& name) {
  auto bound = unwrap(registry().bind(model.training, op_named(model, name)));
  py::list out;
  for (auto const& d : bound->dims()) {
    py::dict dim;
    dim["name"] = d.name;
    dim["extent"] = d.extent;
    dim["kind"] = d.kind == tdl::DimKind::parallel ? "parallel" : "reduction";
    dim["splittable"] = d.splittable;
    if (!d.splittable) dim["unsplittable_reason"] = d.unsplittable_reason;
    out.append(dim);
  }
  return out;
}

void bind_model(py::module_& m) {
  py::class_<api::ModelInput, std::shared_ptr<api::ModelInput>>(
      m, "ModelInput", "a model's training graph (cleave.load_model)")
      .def_readonly("label", &api::ModelInput::label)
      .def_readonly("batch", &api::ModelInput::batch)
      .def_property_readonly("num_ops",
                             [](api::ModelInput const& x) { return x.training.num_ops(); })
      .def_property_readonly("num_tensors",
                             [](api::ModelInput const& x) { return x.training.num_tensors(); })
      .def(
          "op_names",
          [](api::ModelInput const& x) {
            std::vector<std::string> names;
            for (auto const& op : x.training.ops())
              names.push_back(op.name);
            return names;
          },
          "the training graph's ops, by id")
      .def(
          "find_op",
          [](api::ModelInput const& x, std::string const& name) {
            return op_named(x, name).value();
          },
          "the id of the op named NAME: its index in Plan.ops", py::arg("name"))
      .def("op_dims", &op_dims,
           "the op's iteration dimensions (name, extent, kind, splittable): what "
           "OpConfig.degrees lists, in order",
           py::arg("name"))
      .def("__repr__", [](api::ModelInput const& x) {
        return "<cleave.ModelInput " + x.label + ", " + std::to_string(x.training.num_ops()) +
               " ops>";
      });
}

void bind_cluster(py::module_& m) {
  py::class_<ClusterInput, std::shared_ptr<ClusterInput>>(m, "Cluster",
                                                          "a cluster (cleave.load_cluster)")
      .def_readonly("spec", &ClusterInput::spec)
      .def_property_readonly("num_devices",
                             [](ClusterInput const& c) { return c.cluster.num_devices(); })
      .def_property_readonly(
          "fingerprint", [](ClusterInput const& c) { return cluster::fingerprint_hex(c.cluster); })
      .def(
          "devices",
          [](ClusterInput const& c) {
            py::list out;
            for (auto const& d : c.cluster.devices()) {
              py::dict dev;
              dev["name"] = d.name;
              dev["kind"] = d.kind;
              dev["memory_bytes"] = d.memory.value();
              out.append(dev);
            }
            return out;
          },
          "the devices: name, kind, memory_bytes")
      .def("__repr__", [](ClusterInput const& c) { return "<cleave.Cluster " + c.spec + ">"; });
}

void bind_plan(py::module_& m) {
  py::class_<plan::OpConfig>(m, "OpConfig",
                             "one op's partition: a degree per iteration dimension (op_dims) and "
                             "a device per piece, pieces numbered row-major over the degrees")
      .def(py::init<>())
      .def(py::init([](std::vector<std::int64_t> degrees, std::vector<int> devices) {
             return plan::OpConfig{std::move(degrees), std::move(devices)};
           }),
           py::arg("degrees"), py::arg("devices"))
      .def_readwrite("degrees", &plan::OpConfig::degrees)
      .def_readwrite("devices", &plan::OpConfig::devices)
      .def("__repr__", [](plan::OpConfig const& c) {
        return "<cleave.OpConfig degrees=" + py::repr(py::cast(c.degrees)).cast<std::string>() +
               " devices=" + py::repr(py::cast(c.devices)).cast<std::string>() + ">";
      });
  py::bind_vector<std::vector<plan::OpConfig>>(m, "OpConfigs");

  py::class_<plan::Plan>(m, "Plan", "a plan (cleave.plan/2): per op its OpConfig, by op id")
      .def_readwrite("ops", &plan::Plan::ops)
      .def_readonly("model", &plan::Plan::model)
      .def_readonly("cluster", &plan::Plan::cluster)
      .def_readonly("num_devices", &plan::Plan::num_devices)
      .def_property_readonly("algorithm",
                             [](plan::Plan const& p) { return p.provenance.algorithm; })
      .def_property_readonly("config", [](plan::Plan const& p) { return p.provenance.config; })
      .def_property_readonly("interrupted",
                             [](plan::Plan const& p) { return p.provenance.interrupted; })
      .def_property_readonly("has_order", [](plan::Plan const& p) { return !p.order.empty(); })
      .def(
          "clear_order",
          [](plan::Plan& p) {
            p.order.clear();
            p.swaps.clear();
          },
          "drop the per-device orders and the swaps that need them (the simulator's and the "
          "runtime's first-ready-first order then applies): needed before an op's pieces change "
          "in a plan that fixes an order")
      .def("to_json", &plan::plan_to_json)
      .def(
          "save",
          [](plan::Plan const& p, std::string const& path) { unwrap(plan::save_plan(p, path)); },
          py::arg("path"))
      .def("__repr__", [](plan::Plan const& p) {
        return "<cleave.Plan " + p.provenance.algorithm + " for " + p.model + " on " + p.cluster +
               ">";
      });

  py::class_<PlanBundle, std::shared_ptr<PlanBundle>>(
      m, "PlanInput", "a plan with the model and cluster it is for (cleave.load_plan_input)")
      .def(py::init([](plan::Plan p, std::shared_ptr<api::ModelInput> model,
                       std::shared_ptr<ClusterInput> cluster) {
             return PlanBundle{std::move(p), std::move(model), std::move(cluster)};
           }),
           py::arg("plan"), py::arg("model"), py::arg("cluster"))
      .def_readwrite("plan", &PlanBundle::plan)
      .def_readonly("model", &PlanBundle::model)
      .def_readonly("cluster", &PlanBundle::cluster);
}

}  // namespace

void bind_types(py::module_& m) {
  bind_model(m);
  bind_cluster(m);
  bind_plan(m);
}

}  // namespace cleave::python
