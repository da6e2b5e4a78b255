// The cost model (DESIGN.md "Cost model and simulator"): the time of a piece of an op on a device
// by roofline, max(flops / (peak * efficiency), bytes / memory bandwidth) + launch overhead, and
// the time of a transfer by alpha-beta over its route (latency + bytes / bottleneck bandwidth), and
// the time of a host copy by alpha-beta over the device's host route.
// Efficiencies per op kind are documented defaults (docs/cost_model.md); a measured profile table
// (profile_table.h) overrides a piece's time with its measurement, or the defaults with its
// per-device calibration.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "cluster/cluster.h"
#include "cost/profile_table.h"
#include "ir/attrs.h"
#include "ir/graph.h"
#include "tdl/piece.h"

namespace cleave::cost {

struct GpuCompute;

struct CostOptions {
  // Fraction of peak FLOP/s an op kind reaches; op types not listed use `default_efficiency`.
  std::map<std::string, double, std::less<>> efficiency = {{"matmul", 0.7},
                                                           {"batch_matmul", 0.6},
                                                           {"linear", 0.7},
                                                           {"linear_grad_input", 0.7},
                                                           {"linear_grad_weight", 0.7},
                                                           {"conv2d", 0.6},
                                                           {"conv2d_grad_input", 0.5},
                                                           {"conv2d_grad_weight", 0.5},
                                                           {"conv3d", 0.6},
                                                           {"conv3d_grad_input", 0.5},
                                                           {"conv3d_grad_weight", 0.5},
                                                           {"batch_matmul_grad_shared", 0.6}};
  double default_efficiency = 0.5;
  // Fraction of memory bandwidth streaming ops reach.
  double memory_efficiency = 0.8;
  Seconds launch{5e-6};  // per kernel (piece); GPUs
};

// One piece of work to price: what a profile table is keyed by (op type, attributes, the piece's
// box, dtype, the device's kind) and what the roofline needs (FLOPs, bytes, the device).
struct ComputeRequest {
  std::string_view op_type;          // "conv2d"; "reduce" for a reduce task
  ir::Attrs const* attrs = nullptr;  // the op's attributes; null: none
  ir::DType dtype = ir::DType::fp32;
  std::span<tdl::Interval const> box;  // the piece's box of the iteration space
  Flops flops;
  Bytes bytes;  // read and written
  cluster::DeviceId device;
  // The op this is a piece of, for a PieceMeasurer; null for work that is not one op's piece (a
  // reduce task).
  ir::Graph const* graph = nullptr;
  ir::OpId op{};
  // Elements the piece writes (its output region), for the GPU model's tiles and waves
  // (gpu_compute.h); 0: unknown.
  std::int64_t output_elements = 0;
  // Priced as a kernel of its own, as a timing script runs it: not fused with its neighbours in
  // `graph` (gpu_compute.h's fusion rules).
  bool alone = false;
};

// Measures pieces on demand (issue 15, FlexFlow's "measure each configuration once"): the cost
// model asks it for a piece its profile table lacks, before falling back to the roofline. The
// runtime implements it with its kernels (runtime/piece_timer.h); cost never includes the runtime,
// the caller injects it. Called from the threads that price plans: implementations are
// thread-safe and keep what they measured.
class PieceMeasurer {
 public:
  virtual ~PieceMeasurer() = default;
  // The piece's time, or nothing where this measurer does not run it (another device kind, work
  // that is not an op's piece): the roofline prices it then.
  virtual std::optional<Measurement> measure(ComputeRequest const& request,
                                             ProfileKeyView const& key) = 0;
};

struct ComputeCost {
  Seconds time{0};
  bool measured = false;  // taken from the profile table rather than the roofline
};

class CostModel {
 public:
  explicit CostModel(cluster::Cluster const& cluster, CostOptions options = {},
                     std::optional<ProfileTable> profile = std::nullopt)
      : cluster_(&cluster), options_(std::move(options)), profile_(std::move(profile)) {}

  // Nothing for an op a GPU framework fuses into another's kernel (gpu_compute.h); else the
  // profile table's measurement of exactly this piece if it has one, else the measurer's
  // (set_measurer), else the roofline with the table's calibration of the device's kind where it
  // gives one, else with `options()`.
  ComputeCost compute(ComputeRequest const& request) const;
  // Moving `bytes` from one device to another along the cluster's route.
  Seconds transfer(Bytes bytes, cluster::DeviceId from, cluster::DeviceId to) const;
  // Copying `bytes` between a device and its node's host (either way) along its host route.
  Seconds host_transfer(Bytes bytes, cluster::DeviceId device) const;

  cluster::Cluster const& cluster() const { return *cluster_; }
  CostOptions const& options() const { return options_; }
  ProfileTable const* profile() const { return profile_ ? &*profile_ : nullptr; }
  void set_measurer(std::shared_ptr<PieceMeasurer> measurer) { measurer_ = std::move(measurer); }

 private:
  // A piece on a GPU with parameters (gpu_compute.h), the calibration's values replacing them.
  Seconds gpu_time(ComputeRequest const& r, cluster::Device const& dev, GpuCompute const& gpu,
                   DeviceCalibration const* calibration) const;

  cluster::Cluster const* cluster_;
  CostOptions options_;
  std::optional<ProfileTable> profile_;
  std::shared_ptr<PieceMeasurer> measurer_;
};

}  // namespace cleave::cost
