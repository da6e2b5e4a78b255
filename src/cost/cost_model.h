// The cost model (DESIGN.md "Cost model and simulator"): the time of a piece of an op on a device
// by roofline, max(flops / (peak * efficiency), bytes / memory bandwidth) + launch overhead, and
// the time of a transfer by alpha-beta over its route (latency + bytes / bottleneck bandwidth), and
// the time of a host copy by alpha-beta over the device's host route.
// Efficiencies per op kind are documented defaults (docs/cost_model.md); a measured profile table
// will override them (issue: runtime calibration).
#pragma once

#include <map>
#include <string>

#include "cluster/cluster.h"
#include "tdl/piece.h"

namespace cleave::cost {

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
                                                           {"batch_matmul_grad_shared", 0.6}};
  double default_efficiency = 0.5;
  // Fraction of memory bandwidth streaming ops reach.
  double memory_efficiency = 0.8;
  Seconds launch{5e-6};  // per kernel (piece); GPUs
};

class CostModel {
 public:
  CostModel(cluster::Cluster const& cluster, CostOptions options = {})
      : cluster_(&cluster), options_(std::move(options)) {}

  // A piece of an op of type `op_type` computing in `dtype` on `device`.
  Seconds compute(std::string_view op_type, ir::DType dtype, Flops flops, Bytes bytes,
                  cluster::DeviceId device) const;
  // Moving `bytes` from one device to another along the cluster's route.
  Seconds transfer(Bytes bytes, cluster::DeviceId from, cluster::DeviceId to) const;
  // Copying `bytes` between a device and its node's host (either way) along its host route.
  Seconds host_transfer(Bytes bytes, cluster::DeviceId device) const;

  cluster::Cluster const& cluster() const { return *cluster_; }
  CostOptions const& options() const { return options_; }

 private:
  cluster::Cluster const* cluster_;
  CostOptions options_;
};

}  // namespace cleave::cost
