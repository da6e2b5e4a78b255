#include "cli/measure.h"

#include <cstdio>
#include <filesystem>

#include "api/plan_input.h"
#include "runtime/calibrate.h"
#include "support/file_io.h"

namespace cleave::cli {

Status require_cpu_cluster(cluster::Cluster const& cluster, std::string const& spec,
                           std::string const& what) {
  for (auto const& d : cluster.devices())
    if (d.kind != "cpu-core")
      return Error(ErrorCode::invalid_argument,
                   what +
                       " this machine's CPU cores: --cluster must be the cpu preset "
                       "(cpu:devices=N), not '" +
                       spec + "'");
  return Status::ok();
}

Expected<Pricing> load_pricing(cluster::Cluster const& cluster, std::string const& cluster_spec,
                               std::string const& profile, std::string const& measure,
                               ops::OpRegistry const& registry) {
  Pricing out;
  if (measure.empty()) {
    CLEAVE_TRY(auto cost, api::load_cost_model(cluster, profile));
    out.cost = std::make_unique<cost::CostModel>(std::move(cost));
    return out;
  }
  if (!profile.empty())
    return Error(ErrorCode::invalid_argument,
                 "--profile and --measure both name a profile: give one (--measure FILE reads "
                 "FILE too, and adds the pieces it times)");
  CLEAVE_CHECK_OK(require_cpu_cluster(cluster, cluster_spec, "--measure times pieces on"));
  out.measure_path = measure;
  if (std::filesystem::exists(measure)) {
    CLEAVE_TRY(out.loaded, cost::load_profile(measure));
  }
  out.cost = std::make_unique<cost::CostModel>(cluster, cost::CostOptions{}, out.loaded);
  out.kernels = runtime::KernelRegistry::with_builtins();
  runtime::CalibrateOptions devices;
  devices.devices = static_cast<int>(cluster.num_devices());
  out.timer = std::make_shared<runtime::PieceTimer>(
      registry, *out.kernels,
      runtime::PieceTimerOptions{"cpu-core", runtime::threads_per_device(devices)});
  out.cost->set_measurer(out.timer);
  return out;
}

Status save_measured(Pricing const& pricing) {
  if (pricing.measure_path.empty()) return Status::ok();
  cost::ProfileTable table = pricing.loaded;
  auto timed = pricing.timer->measured().entries();
  for (auto& entry : timed)
    CLEAVE_CHECK_OK(table.add(std::move(entry)));
  if (table.source.empty())
    table.source = "cleave --measure: pieces timed on demand with this machine's CPU kernels";
  CLEAVE_CHECK_OK(cost::save_profile(table, pricing.measure_path));
  std::fprintf(stderr, "measured %zu new pieces; %s holds %zu\n", timed.size(),
               pricing.measure_path.c_str(), table.entries().size());
  return Status::ok();
}

Status list_pieces(Pricing& pricing, std::string const& path, ops::OpRegistry const& registry) {
  if (path.empty()) return Status::ok();
  if (pricing.timer)
    return Error(ErrorCode::invalid_argument,
                 "--list-pieces and --measure both watch the pieces priced: give one");
  pricing.pieces_path = path;
  pricing.roofline = std::make_unique<cost::CostModel>(*pricing.cost);
  pricing.lister = std::make_shared<api::PieceLister>(registry, *pricing.roofline);
  pricing.cost->set_measurer(pricing.lister);
  return Status::ok();
}

Status save_pieces(Pricing const& pricing) {
  if (pricing.pieces_path.empty()) return Status::ok();
  auto pieces = pricing.lister->pieces();
  CLEAVE_CHECK_OK(write_file_atomic(pricing.pieces_path, api::pieces_to_json(pieces)));
  std::fprintf(stderr, "listed %zu distinct pieces in %s\n", pieces.size(),
               pricing.pieces_path.c_str());
  return Status::ok();
}

}  // namespace cleave::cli
