// The runtime's kernel interface (DESIGN.md "Runtime"): a kernel computes one piece of one op on
// dense fp32 blocks of its inputs' regions, as the lowering's compute tasks ask. Kernels are found
// by asking each registered kernel whether it handles a call (op type, attributes, the piece's
// shape); a call no kernel handles runs on the TDL reference interpreter (runtime/executor), so
// every plan runs, only slower.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "tdl/piece.h"

namespace cleave::runtime {

// A dense row-major fp32 block holding `region` of a tensor (whose whole shape is in the graph).
// The runtime computes in fp32 whatever the tensor's dtype (fp16 and bf16 models run in fp32 on
// CPU devices); integer tensors (token ids, labels) hold exact integer values.
struct ConstBlock {
  float const* data = nullptr;
  tdl::Box region;
};
struct MutBlock {
  float* data = nullptr;
  tdl::Box region;
};

// One compute task: the piece `piece.iter_box` of `op`.
struct KernelCall {
  ir::Graph const* graph = nullptr;
  ir::Op const* op = nullptr;           // type and attributes
  tdl::BoundOp const* bound = nullptr;  // its TDL statement bound to the graph's shapes
  tdl::PieceInfo const* piece = nullptr;
  // inputs[i].region == piece->inputs[i].box: the clipped region the piece reads of input i (halos
  // included; padding beyond the tensor's bounds is not stored: piece->inputs[i].pad_lo/pad_hi
  // say how much the kernel must supply, with the op's pad value). An input the piece does not
  // read has an empty region and a null pointer.
  std::vector<ConstBlock> inputs;
  // output.region == piece->output. The kernel writes every element of it: the piece's result, or
  // its partial result (piece->partial: a sum over the piece's part of the reduction dimensions).
  MutBlock output;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual std::string_view name() const = 0;
  // Whether this kernel computes `call`; cheap, no allocation beyond small scratch.
  virtual bool handles(KernelCall const& call) const = 0;
  // Runs the call. Called concurrently from several device workers: thread-safe. A failure is a
  // Status error (the executor stops the run with it), never an exception or abort.
  virtual Status run(KernelCall const& call) const = 0;
};

// How a kernel with several implementations of one call picks among them.
enum class KernelChoice : std::uint8_t {
  // Each implementation timed on the first call of a shape; the faster runs from then on. Which
  // one wins can change from run to run, and with it the rounding of the results.
  fastest,
  // A fixed rule per shape, so that a run's numbers repeat exactly (`--check`, `--deterministic`).
  deterministic,
};

// Kernels by op type, in registration order; explicit registration (STYLE.md #7).
class KernelRegistry {
 public:
  KernelRegistry();
  void add(std::unique_ptr<Kernel> kernel);
  // The first kernel that handles the call, or nullptr (the interpreter runs it).
  Kernel const* find(KernelCall const& call) const;
  std::vector<Kernel const*> kernels() const;

  // Every built-in kernel (oneDNN and the plain-loop ones).
  static std::unique_ptr<KernelRegistry> with_builtins(KernelChoice choice = KernelChoice::fastest);

  // Unique to this registry among every registry the process creates (never reused, unlike an
  // address), so that a cache of its answers (the executor's kernel per task) knows whose they
  // are. Kernels must not be added once its answers are cached.
  std::uint64_t id() const { return id_; }

 private:
  std::vector<std::unique_ptr<Kernel>> kernels_;
  std::uint64_t id_;
};

}  // namespace cleave::runtime
