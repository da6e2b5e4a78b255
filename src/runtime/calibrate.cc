#include "runtime/calibrate.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <map>
#include <thread>
#include <tuple>

#include "runtime/check.h"
#include "runtime/whole_op.h"
#include "tdl/piece.h"

namespace cleave::runtime {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename Work> double timed_median(int repeats, Work const& work) {
  for (int i = 0; i < 2; ++i)
    work();  // warm-up: primitive creation, first touch of the buffers
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    work();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return median(std::move(seconds));
}

struct KeyLess {
  bool operator()(cost::ProfileKey const& a, cost::ProfileKey const& b) const {
    return std::tie(a.op, a.attrs, a.extents, a.dtype) <
           std::tie(b.op, b.attrs, b.extents, b.dtype);
  }
};

}  // namespace

Expected<double> seconds_per_call(PieceRun const& piece, int repeats) {
  Status failed = Status::ok();
  double s = timed_median(repeats, [&] {
    if (failed) failed = piece.run();
  });
  if (!failed) return std::move(failed).error();
  return s;
}

int threads_per_device(CalibrateOptions const& options) {
  if (options.threads_per_device > 0) return options.threads_per_device;
  int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, options.devices));
}

Expected<MachineRates> measure_machine(KernelRegistry const& kernels,
                                       ops::OpRegistry const& registry,
                                       CalibrateOptions const& options) {
  MachineRates rates;
  rates.threads_per_device = threads_per_device(options);
  // Measured on one thread of this process, as one device worker runs, with its thread count.
  Expected<MachineRates> out = rates;
  std::thread worker([&] {
    omp_set_num_threads(rates.threads_per_device);
    double best = 0;
    for (std::int64_t n : {256, 512, 1024}) {
      auto mm = whole_op(registry, kernels, "matmul", {{n, n}, {n, n}});
      if (!mm) {
        out = std::move(mm).error();
        return;
      }
      auto s = seconds_per_call(*(*mm)->piece, options.repeats);
      if (!s) {
        out = std::move(s).error();
        return;
      }
      best = std::max(best, (*mm)->piece->piece.flops.value() / *s);
    }
    rates.peak = FlopsPerSecond(best);
    std::int64_t elements = std::int64_t{1} << 23;  // 32 MiB per fp32 operand: past the caches
    auto add = whole_op(registry, kernels, "add", {{elements}, {elements}});
    auto tiny = whole_op(registry, kernels, "relu", {{1}});
    if (!add || !tiny) {
      out = !add ? std::move(add).error() : std::move(tiny).error();
      return;
    }
    auto add_s = seconds_per_call(*(*add)->piece, options.repeats);
    auto tiny_s = seconds_per_call(*(*tiny)->piece, options.repeats * 10);
    if (!add_s || !tiny_s) {
      out = !add_s ? std::move(add_s).error() : std::move(tiny_s).error();
      return;
    }
    double add_bytes = static_cast<double>((*add)->piece->piece.bytes_read.value() +
                                           (*add)->piece->piece.bytes_written.value());
    rates.memory_bandwidth = BytesPerSecond(add_bytes / *add_s);
    rates.launch = Seconds(*tiny_s);
    std::vector<char> from(std::size_t{1} << 26, 1), to(from.size(), 0);
    double copy_s =
        timed_median(options.repeats, [&] { std::memcpy(to.data(), from.data(), from.size()); });
    rates.copy_bandwidth = BytesPerSecond(static_cast<double>(from.size()) / copy_s);
    out = rates;
  });
  worker.join();
  return out;
}

std::string calibrated_cluster_spec(MachineRates const& rates, int devices) {
  // Three significant digits in the preset's units (GFLOP/s, GB/s).
  auto g = [](double v) { return fmt::format("{:.3g}", v / 1e9); };
  return "cpu:devices=" + std::to_string(devices) + ",peak=" + g(rates.peak.value()) +
         "GFLOP/s,memory_bandwidth=" + g(rates.memory_bandwidth.value()) +
         "GB/s,link=" + g(rates.copy_bandwidth.value()) +
         "GB/s,latency=" + fmt::format("{:.3g}", rates.hop_latency.value() * 1e6) + "us";
}

Expected<MeasuredSteps> measure_steps(Executor const& executor, KernelRegistry const& kernels,
                                      CommBackend& backend, int steps) {
  TrainingConfig config;
  config.steps = steps + warmup_steps;
  config.exec.kernels = &kernels;
  config.exec.backend = &backend;
  CLEAVE_TRY(TrainingRun run, run_training(executor, config));
  MeasuredSteps m;
  m.graph = &executor.graph();
  m.program = &executor.program();
  for (std::size_t s = warmup_steps; s < run.steps.size(); ++s) {
    m.spans.push_back(std::move(run.steps[s].spans));
    m.step_seconds.push_back(run.steps[s].step_s);
  }
  return m;
}

void fit_transfers(MachineRates& rates, std::vector<MeasuredSteps> const& measured) {
  std::vector<double> small, handoff, bandwidth;
  std::vector<std::pair<double, double>> large;  // bytes, seconds
  for (auto const& m : measured) {
    auto const& tasks = m.program->tasks;
    for (auto const& spans : m.spans) {
      std::vector<double> device_free(static_cast<std::size_t>(m.program->num_devices), 0.0);
      for (std::size_t i = 0; i < tasks.size(); ++i) {
        auto const& t = tasks[i];
        auto& free = device_free[static_cast<std::size_t>(t.device)];
        double previous_end = free;
        free = spans[i].end;
        // A collective's members share their device's part in it: not one copy each.
        if (t.kind != lower::TaskKind::transfer || t.collective != lower::no_collective) continue;
        double seconds = spans[i].end - spans[i].start;
        double bytes = static_cast<double>(t.bytes.value());
        if (bytes < 64 * 1024) small.push_back(seconds);
        if (bytes >= 1024 * 1024) large.push_back({bytes, seconds});
        double source = 0;
        for (auto d : t.deps)
          source = std::max(source, spans[d].end);
        if (previous_end < source) handoff.push_back(spans[i].start - source);
      }
    }
  }
  double copy_latency = small.empty() ? 0 : median(small);
  for (auto [bytes, seconds] : large)
    if (seconds > copy_latency) bandwidth.push_back(bytes / (seconds - copy_latency));
  if (!bandwidth.empty()) rates.copy_bandwidth = BytesPerSecond(median(bandwidth));
  if (!small.empty() || !handoff.empty())
    rates.hop_latency = Seconds((copy_latency + (handoff.empty() ? 0 : median(handoff))) / 2);
}

Status add_measurements(cost::ProfileTable& table, std::vector<MeasuredSteps> const& measured,
                        MachineRates const& rates, std::string const& device_kind) {
  // Per distinct key, every measured duration of every piece with it, in every program.
  std::map<cost::ProfileKey, std::pair<std::vector<double>, double>, KeyLess> pieces;
  for (auto const& m : measured) {
    auto const& tasks = m.program->tasks;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      auto const& t = tasks[i];
      if (t.kind != lower::TaskKind::compute && t.kind != lower::TaskKind::reduce) continue;
      if (t.collective != lower::no_collective) continue;  // timed as its device's whole part
      auto const& op = m.graph->op(t.op);
      cost::ProfileKey key;
      key.dtype = m.graph->tensor(t.tensor).type.dtype;
      key.device_kind = device_kind;
      tdl::Box const& box = t.kind == lower::TaskKind::reduce ? t.region : t.iteration;
      for (auto const& interval : box)
        key.extents.push_back(interval.size());
      if (t.kind == lower::TaskKind::reduce) {
        key.op = "reduce";
        ir::Attrs members;
        members.set("members", static_cast<std::int64_t>(t.deps.size()));
        key.attrs = members.to_string();
      } else {
        key.op = op.type;
        key.attrs = op.attrs.to_string();
      }
      auto& [seconds, flops] = pieces[key];
      flops = t.flops.value();
      for (auto const& step : m.spans)
        seconds.push_back(step.at(i).end - step.at(i).start);
    }
  }
  std::map<std::string, std::vector<double>> efficiencies;  // by op type
  for (auto& [key, data] : pieces) {
    if (table.find(key.view())) continue;  // the table's own measurement stays
    double s = median(data.first);
    if (!(s > 0)) s = 1e-9;  // below the clock's resolution
    if (key.op != "reduce" && data.second > 0 && rates.peak.value() > 0)
      efficiencies[key.op].push_back(data.second / (rates.peak.value() * s));
    CLEAVE_CHECK_OK(table.add({key, {Seconds(s), static_cast<std::int64_t>(data.first.size())}}));
  }
  cost::DeviceCalibration calibration;
  for (auto& [op, e] : efficiencies)
    calibration.efficiency[op] = std::clamp(median(e), 1e-6, 1.0);
  calibration.memory_efficiency = 1.0;  // the cluster's memory bandwidth is the measured one
  calibration.launch = rates.launch;
  return table.add_calibration(device_kind, std::move(calibration));
}

}  // namespace cleave::runtime
