#include "cost/cost_model.h"

#include <algorithm>

namespace cleave::cost {

Seconds CostModel::compute(std::string_view op_type, ir::DType dtype, Flops flops, Bytes bytes,
                           cluster::DeviceId device) const {
  auto const& dev = cluster_->device(device);
  // Integer ops and dtypes a device lacks run at its fp32 rate (or its best rate).
  auto peak = dev.peak_for(dtype);
  if (!peak) peak = dev.peak_for(ir::DType::fp32);
  double rate = 0;
  if (peak) {
    rate = peak->value();
  } else {
    for (auto const& [d, p] : dev.peak)
      rate = std::max(rate, p.value());
  }
  auto it = options_.efficiency.find(op_type);
  double eff = it == options_.efficiency.end() ? options_.default_efficiency : it->second;
  double compute_s = static_cast<double>(flops.value()) / (rate * eff);
  double memory_s = static_cast<double>(bytes.value()) /
                    (dev.memory_bandwidth.value() * options_.memory_efficiency);
  return Seconds(std::max(compute_s, memory_s) + options_.launch.value());
}

Seconds CostModel::transfer(Bytes bytes, cluster::DeviceId from, cluster::DeviceId to) const {
  if (from == to) return Seconds(0);
  auto route = cluster_->route(from, to);
  return Seconds(route.latency.value() +
                 static_cast<double>(bytes.value()) / route.bottleneck.value());
}

Seconds CostModel::host_transfer(Bytes bytes, cluster::DeviceId device) const {
  auto route = cluster_->host_route(device);
  return Seconds(route.latency.value() +
                 static_cast<double>(bytes.value()) / route.bottleneck.value());
}

}  // namespace cleave::cost
