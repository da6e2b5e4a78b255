// Every op type of the zoo's training graphs has a kernel for its whole-op piece: none falls back
// to the interpreter (docs/runtime_kernels.md); which kernel takes each type is printed. The dense
// ops (matmuls, convolutions and their gradients) must all run on oneDNN.
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <set>

#include "autodiff/training_graph.h"
#include "models/model_zoo.h"
#include "runtime/kernels/kernel.h"

namespace cleave::runtime {
namespace {

std::set<std::string> const must_have_kernel = {"matmul",
                                                "batch_matmul",
                                                "linear",
                                                "linear_grad_input",
                                                "linear_grad_weight",
                                                "batch_matmul_grad_shared",
                                                "conv2d",
                                                "conv2d_grad_input",
                                                "conv2d_grad_weight",
                                                "conv3d",
                                                "conv3d_grad_input",
                                                "conv3d_grad_weight"};

TEST(ZooCoverage, WholeOpsOfTrainingGraphsHaveKernels) {
  auto ops = ops::OpRegistry::with_builtins();
  auto kernels = KernelRegistry::with_builtins();
  auto zoo = models::ModelZoo::with_builtins();
  // type -> (model, kernel or "" for the interpreter) -> count
  std::map<std::string, std::map<std::string, int>> by_type;
  std::map<std::string, std::set<std::string>> models_of;
  for (std::string spec :
       {"mlp:batch=4", "alexnet:batch=2", "vgg:batch=2", "resnet:depth=18,batch=2",
        "inception:batch=2", "nasnet:cells=1,filters=96,stem=8,image=19,batch=2",
        "rnn:steps=3,batch=2", "nmt:steps=3,batch=2", "gpt:layers=2,batch=2",
        "bert:layers=2,batch=2", "e3d:layers=2,hidden=4,steps=2,batch=2,size=4"}) {
    auto forward = zoo.build(spec, *ops);
    ASSERT_TRUE(forward.has_value()) << spec << ": " << forward.error().to_string();
    autodiff::TrainingOptions options;
    if (spec.starts_with("gpt") || spec.starts_with("bert"))
      options.optimizer = autodiff::Optimizer::adam;
    auto train = autodiff::build_training_graph(*forward, *ops, options);
    ASSERT_TRUE(train.has_value()) << spec << ": " << train.error().to_string();
    for (auto const& op : train->ops()) {
      auto bound = ops->bind(*train, op.id);
      ASSERT_TRUE(bound.has_value()) << bound.error().to_string();
      auto piece = tdl::analyze_piece(**bound, tdl::full_box(**bound));
      ASSERT_TRUE(piece.has_value()) << piece.error().to_string();
      KernelCall call{&*train, &op, bound->get(), &*piece, {}, {nullptr, piece->output}};
      for (auto const& region : piece->inputs)
        call.inputs.push_back({nullptr, region.box});
      Kernel const* k = kernels->find(call);
      std::string name = k ? std::string(k->name()) : "";
      ++by_type[op.type][name];
      models_of[op.type].insert(spec.substr(0, spec.find(':')));
      EXPECT_FALSE(name.empty()) << spec << ": no kernel takes the whole of " << op.name << " ("
                                 << op.type << ") " << op.attrs.to_string();
      if (must_have_kernel.contains(op.type)) {
        std::string want = op.type.starts_with("conv") ? "onednn_conv" : "onednn_matmul";
        EXPECT_EQ(name, want) << spec << ": " << op.name << " (" << op.type << ") "
                              << op.attrs.to_string();
      }
    }
  }
  std::cout << "[zoo] op type: kernel=count (\"interpreter\" = no kernel)\n";
  for (auto const& [type, counts] : by_type) {
    std::string line;
    for (auto const& [kernel, n] : counts)
      line +=
          " " + (kernel.empty() ? std::string("interpreter") : kernel) + "=" + std::to_string(n);
    std::string models;
    for (auto const& m : models_of[type])
      models += (models.empty() ? "" : ",") + m;
    std::cout << "[zoo] " << type << ":" << line << " (" << models << ")\n";
  }
}

}  // namespace
}  // namespace cleave::runtime
