#include "cost/cost_model.h"

#include <algorithm>

#include "cost/gpu_compute.h"

namespace cleave::cost {

namespace {

// The device's peak for `dtype`; integer ops and dtypes a device lacks run at its fp32 rate (or
// its best rate).
double peak_rate(cluster::Device const& dev, ir::DType dtype) {
  auto peak = dev.peak_for(dtype);
  if (!peak) peak = dev.peak_for(ir::DType::fp32);
  if (peak) return peak->value();
  double rate = 0;
  for (auto const& [d, p] : dev.peak)
    rate = std::max(rate, p.value());
  return rate;
}

// A calibration of the device's kind replaces the defaults: its op type's efficiency, else its
// default; its memory efficiency and launch time where it sets them.
void calibrate(DeviceCalibration const* calibration, std::string_view op_type, double& eff,
               double& memory_eff, Seconds& launch) {
  if (!calibration) return;
  if (auto it = calibration->efficiency.find(op_type); it != calibration->efficiency.end())
    eff = it->second;
  else if (calibration->default_efficiency)
    eff = *calibration->default_efficiency;
  memory_eff = calibration->memory_efficiency.value_or(memory_eff);
  launch = calibration->launch.value_or(launch);
}

}  // namespace

ComputeCost CostModel::compute(ComputeRequest const& r) const {
  auto const& dev = cluster_->device(r.device);
  auto const* gpu = gpu_compute(dev.kind);
  // An op that a GPU framework runs inside another op's kernel launches none of its own: no
  // measurement of it as a kernel alone applies (a profile times each piece alone).
  if (gpu && r.graph && !r.alone && fused_on_gpu(*r.graph, r.op)) return {Seconds(0), false};
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
  if (gpu) return {gpu_time(r, dev, *gpu, calibration), false};
  double rate = peak_rate(dev, r.dtype);
  // The options' op type's efficiency, else their default; a calibration replaces them.
  double eff = options_.default_efficiency;
  if (auto it = options_.efficiency.find(r.op_type); it != options_.efficiency.end())
    eff = it->second;
  double memory_eff = options_.memory_efficiency;
  Seconds launch = options_.launch;
  calibrate(calibration, r.op_type, eff, memory_eff, launch);
  double compute_s = static_cast<double>(r.flops.value()) / (rate * eff);
  double memory_s =
      static_cast<double>(r.bytes.value()) / (dev.memory_bandwidth.value() * memory_eff);
  return {Seconds(std::max(compute_s, memory_s) + launch.value()), /*measured=*/false};
}

Seconds CostModel::gpu_time(ComputeRequest const& r, cluster::Device const& dev,
                            GpuCompute const& gpu, DeviceCalibration const* calibration) const {
  bool gemm = is_gemm_class(r.op_type);
  // GEMMs run on tensor cores (TF32 for fp32 where the GPU has it: PyTorch's default for
  // convolutions, and NVIDIA's containers' for matmuls); other ops on the CUDA cores' fp32 rate.
  // A reshape is a view: no kernel.
  if (r.op_type == "reshape") return Seconds(0);
  bool conv = is_conv_class(r.op_type);
  double rate = peak_rate(dev, gemm ? r.dtype : ir::DType::fp32);
  double eff =
      gemm ? (conv ? gpu.conv_efficiency : gpu.gemm_efficiency) : options_.default_efficiency;
  if (gemm && r.dtype == ir::DType::fp32) {
    if (gpu.tf32_peak > 0) {
      rate = gpu.tf32_peak;
      if (conv) eff = gpu.tf32_conv_efficiency;
    } else {
      eff = gpu.cuda_core_efficiency;
      if (conv) rate *= gpu.fp32_conv_speedup;
    }
  }
  double memory_eff = gpu.memory_efficiency;
  Seconds launch_time(gpu.launch_s);
  calibrate(calibration, r.op_type, eff, memory_eff, launch_time);
  double launch = launch_time.value();
  double bytes = static_cast<double>(r.bytes.value());
  if (r.graph && !r.alone) {
    auto fusion = element_wise_fusion(*r.graph, r.op);
    bytes *= fusion.bytes_fraction;
    if (!fusion.launches) launch = 0;
  }
  // Tensor cores (half precision, or TF32) need aligned rows; CUDA cores' kernels do not.
  bool tensor_cores = r.dtype != ir::DType::fp32 || gpu.tf32_peak > 0;
  if (gemm && !conv && tensor_cores && r.graph) eff *= alignment_efficiency(*r.graph, r.op);
  if (gemm && r.output_elements > 0) {
    double reduction =
        static_cast<double>(r.flops.value()) / (2.0 * static_cast<double>(r.output_elements));
    eff *= wave_efficiency(r.output_elements, reduction, gpu.sms);
  }
  double compute_s = static_cast<double>(r.flops.value()) / (rate * eff);
  double memory_s = bytes / (dev.memory_bandwidth.value() * memory_eff);
  return Seconds(std::max(compute_s, memory_s) + launch);
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
