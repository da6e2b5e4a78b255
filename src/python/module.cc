// `import cleave` (docs/python.md): the module, its registry and its exception.
#include "import/opaque_op.h"
#include "python/bindings.h"

namespace cleave::python {

namespace {

std::unique_ptr<ops::OpRegistry> make_registry() {
  auto r = ops::OpRegistry::with_builtins();
  importer::add_import_ops(*r);
  return r;
}

}  // namespace

// What raise() throws; only this becomes cleave.Error (pybind11's own errors keep their types).
struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

ops::OpRegistry& registry() {
  static auto const r = make_registry();
  return *r;
}

void raise(Error const& error) {
  // Thrown while the GIL may be released (a long search): the translator below turns it into
  // cleave.Error once the call is back in Python.
  throw UserError(error.to_string());
}

py::object from_json(std::string const& text) {
  return py::module_::import("json").attr("loads")(text);
}

}  // namespace cleave::python

PYBIND11_MODULE(cleave, m) {
  namespace py = pybind11;
  using namespace cleave::python;
  m.doc() = "cleave: split, place, order and swap the training of networks too large for one "
            "accelerator (docs/python.md)";
  py::register_exception<UserError>(m, "Error", PyExc_RuntimeError);
  bind_types(m);
  bind_functions(m);
}
