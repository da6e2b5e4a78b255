// mlp: a multi-layer perceptron classifier, the smallest zoo model (tests, examples).
#include "models/layers.h"
#include "models/model_zoo.h"
#include "support/assert.h"

namespace cleave::models {

void add_mlp(ModelZoo& zoo) {
  ModelDef def;
  def.name = "mlp";
  def.summary = "multi-layer perceptron: linear + relu layers, then a linear classifier";
  def.keys = {{"layers", KeyKind::integer, "3", "hidden layers", 0, {}},
              {"hidden", KeyKind::integer, "1024", "width of each hidden layer", 1, {}},
              {"input", KeyKind::integer, "784", "input features", 1, {}},
              {"classes", KeyKind::integer, "10", "output classes", 2, {}},
              {"batch", KeyKind::integer, "64", "samples per step", 1, {}}};
  def.build = [](ops::OpBuilder& b, ModelArgs const& a) {
    auto x = b.input("input", {a.integer("batch"), a.integer("input")}, a.dtype());
    for (std::int64_t l = 0; l < a.integer("layers"); ++l) {
      x = linear(b, x, a.integer("hidden"), "fc" + std::to_string(l));
      x = b.op("relu", {x}, {}, "relu" + std::to_string(l));
    }
    classification_loss(b, linear(b, x, a.integer("classes"), "classifier"));
  };
  auto st = zoo.add(std::move(def));
  CLEAVE_ASSERT(st.is_ok(), "duplicate model");
}

}  // namespace cleave::models
