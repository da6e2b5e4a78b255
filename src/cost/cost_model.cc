#include "cost/cost_model.h"

#include <algorithm>

namespace cleave::cost {

ComputeCost CostModel::compute(ComputeRequest const& r) const {
  auto const& dev = cluster_->device(r.device);
  DeviceCalibration const* calibration = nullptr;
  if ((profile_ && profile_->has_entries()) || measurer_) {
    std::string attrs = r.attrs ? r.attrs->to_string() : std::string();
    std::vector<std::int64_t> extents;
    extents.reserve(r.box.size());
    for (auto const& interval : r.box)
      extents.push_back(interval.size());
    ProfileKeyView key{r.op_type, attrs, extents, r.dtype, dev.kind};
    if (auto const* m = profile_ ? profile_->find(key) : nullptr)
      return {m->seconds, /*measured=*/true};
    if (auto m = measurer_ ? measurer_->measure(r, key) : std::nullopt)
      return {m->seconds, /*measured=*/true};
  }
  if (profile_) calibration = profile_->calibration(dev.kind);
  // Integer ops and dtypes a device lacks run at its fp32 rate (or its best rate).
  auto peak = dev.peak_for(r.dtype);
  if (!peak) peak = dev.peak_for(ir::DType::fp32);
  double rate = 0;
  if (peak) {
    rate = peak->value();
  } else {
    for (auto const& [d, p] : dev.peak)
      rate = std::max(rate, p.value());
  }
  // A calibration of the device's kind replaces the defaults: its op type's efficiency, else its
  // default, before the options' op type and default.
  double eff = options_.default_efficiency;
  if (auto it = options_.efficiency.find(r.op_type); it != options_.efficiency.end())
    eff = it->second;
  double memory_eff = options_.memory_efficiency;
  Seconds launch = options_.launch;
  if (calibration) {
    if (auto it = calibration->efficiency.find(r.op_type); it != calibration->efficiency.end())
      eff = it->second;
    else if (calibration->default_efficiency)
      eff = *calibration->default_efficiency;
    memory_eff = calibration->memory_efficiency.value_or(memory_eff);
    launch = calibration->launch.value_or(launch);
  }
  double compute_s = static_cast<double>(r.flops.value()) / (rate * eff);
  double memory_s =
      static_cast<double>(r.bytes.value()) / (dev.memory_bandwidth.value() * memory_eff);
  return {Seconds(std::max(compute_s, memory_s) + launch.value()), /*measured=*/false};
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
