#include "runtime/kernels/kernel.h"

namespace cleave::runtime {

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

std::unique_ptr<KernelRegistry> KernelRegistry::with_builtins() {
  auto registry = std::make_unique<KernelRegistry>();
  return registry;
}

}  // namespace cleave::runtime
