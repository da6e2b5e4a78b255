// `--measure FILE` on plan, compare and simulate (issue 15 item 3, FlexFlow's op times measured
// on demand): pieces the file does not time yet are timed once with this machine's CPU kernels
// (runtime::PieceTimer, injected into the cost model) while plans are priced, and the file gains
// them, so later runs reuse them. Without --measure, --profile's table (or none) as before.
#pragma once

#include <memory>
#include <string>

#include "api/piece_list.h"
#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "ops/op_registry.h"
#include "runtime/kernels/kernel.h"
#include "runtime/piece_timer.h"

namespace cleave::cli {

// An error unless every device of `cluster` is one of this machine's CPU cores (the cpu preset):
// what `what` measures runs here.
Status require_cpu_cluster(cluster::Cluster const& cluster, std::string const& spec,
                           std::string const& what);

// A command's cost model and, with --measure, what measures for it.
struct Pricing {
  std::unique_ptr<cost::CostModel> cost;  // stable address: searches keep a reference
  std::string measure_path;               // empty: no --measure
  std::unique_ptr<runtime::KernelRegistry> kernels;
  std::shared_ptr<runtime::PieceTimer> timer;
  cost::ProfileTable loaded;  // what the --measure file held before this run
  // --list-pieces FILE: the pieces priced, noted by `lister`, which prices them with `roofline`.
  std::string pieces_path;  // empty: no --list-pieces
  std::unique_ptr<cost::CostModel> roofline;
  std::shared_ptr<api::PieceLister> lister;
};

Expected<Pricing> load_pricing(cluster::Cluster const& cluster, std::string const& cluster_spec,
                               std::string const& profile, std::string const& measure,
                               ops::OpRegistry const& registry);

// `--list-pieces FILE` (issue 24 item 4): notes every compute piece that pricing asks for, to
// write as cleave.pieces/1 (api/piece_list.h) for a script that times them elsewhere.
Status list_pieces(Pricing& pricing, std::string const& path, ops::OpRegistry const& registry);

// With --measure: writes the file's entries and the pieces timed in this run (atomically), and
// says on stderr how many pieces were timed. Nothing without --measure.
Status save_measured(Pricing const& pricing);
// With --list-pieces: writes the pieces noted (atomically) and says how many on stderr.
Status save_pieces(Pricing const& pricing);

}  // namespace cleave::cli
