#include "runtime/collective_part.h"

#include <algorithm>

#include "support/assert.h"

namespace cleave::runtime {
namespace {

using lower::Task;
using lower::TaskId;
using lower::TaskKind;

std::size_t rank_in(std::vector<int> const& group, int device) {
  auto it = std::find(group.begin(), group.end(), device);
  CLEAVE_ASSERT(it != group.end(), "a collective's member on a device outside its group");
  return static_cast<std::size_t>(it - group.begin());
}

std::size_t volume(tdl::Box const& box) {
  return static_cast<std::size_t>(tdl::box_volume(box));
}

// The members' shares of a buffer laid out share after share, in group order.
struct Shares {
  std::vector<tdl::Box> regions;  // per member of the group
  std::vector<std::size_t> counts;
  std::vector<std::size_t> offsets;

  explicit Shares(std::vector<tdl::Box> r) : regions(std::move(r)) {
    std::size_t at = 0;
    for (auto const& box : regions) {
      counts.push_back(volume(box));
      offsets.push_back(at);
      at += counts.back();
    }
  }
  std::size_t total() const { return offsets.back() + counts.back(); }
  std::vector<float> slice(std::vector<float> const& all, std::size_t k) const {
    auto from = all.begin() + static_cast<std::ptrdiff_t>(offsets[k]);
    return {from, from + static_cast<std::ptrdiff_t>(counts[k])};
  }
};

// Writes, for each whole-valued transfer member received on this device, its source's share.
Status write_received(CollectivePart const& p, lower::Collective const& col, Shares const& shares,
                      std::vector<float> const& all) {
  for (TaskId m : col.members) {
    Task const& t = p.program.tasks[m];
    if (t.kind != TaskKind::transfer || t.partial || t.device != p.device) continue;
    std::size_t k = rank_in(col.group, t.source_device);
    CLEAVE_ASSERT(t.region == shares.regions[k], "a gathered block is not its source's share");
    CLEAVE_CHECK_OK(p.store.add(t.tensor, t.region, shares.slice(all, k), false, m));
  }
  return Status::ok();
}

Status all_gather_part(CollectivePart const& p, lower::Collective const& col,
                       CollectiveCall& call) {
  // Each member's block: what its transfers send.
  std::vector<tdl::Box> blocks(col.group.size());
  for (TaskId m : col.members) {
    Task const& t = p.program.tasks[m];
    blocks[rank_in(col.group, t.source_device)] = t.region;
  }
  Shares shares(std::move(blocks));
  call.counts = shares.counts;
  std::size_t me = rank_in(col.group, p.device);
  CLEAVE_TRY(auto mine, p.store.gather(col.tensor, shares.regions[me]));
  std::vector<float> all(shares.total());
  CLEAVE_CHECK_OK(p.backend.all_gather(call, mine, all));
  return write_received(p, col, shares, all);
}

// Reduce-scatter and all-reduce: the reduce members give each member's part and this device's
// partial result (the one dependency of its reduce member from outside the collective).
Status reducing_part(CollectivePart const& p, lower::Collective const& col, CollectiveCall& call) {
  std::vector<tdl::Box> parts(col.group.size());
  std::vector<TaskId> reduces(col.group.size());
  for (TaskId m : col.members) {
    Task const& t = p.program.tasks[m];
    if (t.kind != TaskKind::reduce) continue;
    std::size_t k = rank_in(col.group, t.device);
    parts[k] = t.region;
    reduces[k] = m;
  }
  std::size_t me = rank_in(col.group, p.device);
  Task const& reduce = p.program.tasks[reduces[me]];
  call.reducer = reduce.reducer;
  std::vector<TaskId> local;
  for (TaskId d : reduce.deps)
    if (p.program.tasks[d].collective != reduce.collective) local.push_back(d);
  CLEAVE_ASSERT(local.size() == 1, "a collective's reduce task without one local partial result");
  Shares shares(std::move(parts));
  call.counts = shares.counts;
  std::vector<float> in;
  in.reserve(shares.total());
  for (auto const& part : shares.regions) {
    CLEAVE_TRY(auto values, p.store.read_written(local[0], part));
    in.insert(in.end(), values.begin(), values.end());
  }
  if (col.kind == lower::CollectiveKind::reduce_scatter) {
    std::vector<float> out(shares.counts[me]);
    CLEAVE_CHECK_OK(p.backend.reduce_scatter(call, in, out));
    return p.store.add(col.tensor, shares.regions[me], std::move(out), false, reduces[me]);
  }
  CLEAVE_CHECK_OK(p.backend.all_reduce(call, in));
  CLEAVE_CHECK_OK(
      p.store.add(col.tensor, shares.regions[me], shares.slice(in, me), false, reduces[me]));
  return write_received(p, col, shares, in);
}

}  // namespace

Status run_collective_part(CollectivePart const& p) {
  auto const& col = p.program.collectives[p.collective];
  CollectiveCall call{p.collective, col.group, p.device, tdl::Reducer::sum, {}};
  if (col.kind == lower::CollectiveKind::all_gather) return all_gather_part(p, col, call);
  return reducing_part(p, col, call);
}

}  // namespace cleave::runtime
