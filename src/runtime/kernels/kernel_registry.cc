#include <atomic>

#include "runtime/kernels/kernel.h"
#include "runtime/kernels/onednn_kernels.h"

namespace cleave::runtime {

KernelRegistry::KernelRegistry() {
  static std::atomic<std::uint64_t> next{1};
  id_ = next.fetch_add(1, std::memory_order_relaxed);
}

void KernelRegistry::add(std::unique_ptr<Kernel> kernel) {
  kernels_.push_back(std::move(kernel));
}

Kernel const* KernelRegistry::find(KernelCall const& call) const {
  for (auto const& k : kernels_)
    if (k->handles(call)) return k.get();
  return nullptr;
}

std::vector<Kernel const*> KernelRegistry::kernels() const {
  std::vector<Kernel const*> out;
  for (auto const& k : kernels_)
    out.push_back(k.get());
  return out;
}

std::unique_ptr<KernelRegistry> KernelRegistry::with_builtins(KernelChoice choice) {
  auto registry = std::make_unique<KernelRegistry>();
  // oneDNN first; the plain-loop expression kernel takes what they leave.
  registry->add(make_contraction_kernel());
  registry->add(make_conv_kernel(choice));
  registry->add(make_pool_kernel());
  registry->add(make_eltwise_kernel());
  registry->add(make_binary_kernel());
  registry->add(make_softmax_kernel());
  registry->add(make_layer_norm_kernel());
  registry->add(make_cross_entropy_kernel());
  registry->add(make_row_kernel());
  registry->add(make_embedding_grad_kernel());
  registry->add(make_max_pool_grad_kernel());
  registry->add(make_copy_kernel());
  registry->add(make_batch_norm_kernel());
  registry->add(make_update_kernel());
  registry->add(make_expression_kernel());
  return registry;
}

}  // namespace cleave::runtime
