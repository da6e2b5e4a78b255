// The model zoo: parameterised models from the papers (PAPERS.md), named NAME[:key=value,...]
// wherever a model is accepted. Each model is written as primitive ops (an LSTM cell is matmuls
// and element-wise ops), as fine-grained as a framework's dataflow graph, and ends in a scalar
// loss tensor named "loss".
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op_builder.h"
#include "support/named_spec.h"

namespace cleave::models {

enum class KeyKind { integer, real, choice };

struct ModelKey {
  std::string name;
  KeyKind kind = KeyKind::integer;
  std::string fallback;  // the documented default, as text
  std::string doc;
  std::int64_t min = 1;              // integer keys: smallest accepted value
  std::vector<std::string> choices;  // choice keys: the accepted values
};

// Validated values of a model's keys (defaults filled in).
class ModelArgs {
 public:
  std::int64_t integer(std::string_view key) const;
  double real(std::string_view key) const;
  std::string const& text(std::string_view key) const;
  // The "dtype" key every model has.
  ir::DType dtype() const;
  // The "precision" key every model has ("fp32", "tf32", "amp-fp16", "amp-bf16").
  std::string const& precision() const { return text("precision"); }
  // "resnet:depth=50,width=1,batch=32,dtype=fp32": the full spec, every key spelled out.
  std::string const& canonical() const { return canonical_; }

 private:
  friend class ModelZoo;
  std::map<std::string, std::string, std::less<>> values_;
  std::string canonical_;
};

struct ModelDef {
  std::string name;
  std::string summary;
  std::vector<ModelKey> keys;  // "dtype" and "precision" are added to every model
  // Keys whose default depends on other keys (GPT's heads = hidden/64): computes the default from
  // the spec as given; the key's `fallback` documents the rule.
  std::map<std::string, std::function<std::string(NamedSpec const& spec)>, std::less<>>
      derived_defaults;
  // Builds the forward graph; reports bad combinations of values with b.fail().
  std::function<void(ops::OpBuilder& b, ModelArgs const& args)> build;
};

// "NAME[:key=value,...]".
using ModelSpec = NamedSpec;
Expected<ModelSpec> parse_model_spec(std::string_view text);

class ModelZoo {
 public:
  // Every built-in model (explicit registration, STYLE.md #7).
  static ModelZoo with_builtins();

  Status add(ModelDef def);
  ModelDef const* find(std::string_view name) const;
  std::vector<std::string> names() const;  // sorted

  // Keys checked (unknown keys, malformed or out-of-range values: errors that list what is
  // accepted) and defaults filled in.
  Expected<ModelArgs> resolve(ModelSpec const& spec) const;
  // The forward graph of "NAME[:key=value,...]".
  Expected<ir::Graph> build(std::string_view spec, ops::OpRegistry const& registry) const;

 private:
  std::map<std::string, ModelDef, std::less<>> defs_;
};

// Registration of the built-in model families (one file each).
void add_mlp(ModelZoo& zoo);
void add_cnns(ModelZoo& zoo);          // alexnet, vgg
void add_resnet(ModelZoo& zoo);        // resnet (and WResNet via width), wrn (CIFAR WRN)
void add_inception(ModelZoo& zoo);     // inception v3 and v4
void add_nasnet(ModelZoo& zoo);        // nasnet (NASNet-A, SwapAdvisor's NasNet-25)
void add_rnns(ModelZoo& zoo);          // rnn (stacked LSTM), nmt, crn (Char-CRN)
void add_transformers(ModelZoo& zoo);  // gpt, bert
void add_e3d(ModelZoo& zoo);           // e3d (Eidetic 3D LSTM)

}  // namespace cleave::models
