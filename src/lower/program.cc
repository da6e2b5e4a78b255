#include "lower/program.h"

#include <algorithm>
#include <tuple>

namespace cleave::lower {

std::size_t scatter_dimension(tdl::Box const& region, std::size_t members) {
  for (std::size_t d = 0; d < region.size(); ++d)
    if (region[d].size() >= static_cast<std::int64_t>(members)) return d;
  std::size_t longest = 0;
  for (std::size_t d = 1; d < region.size(); ++d)
    if (region[d].size() > region[longest].size()) longest = d;
  return longest;
}

bool box_less(tdl::Box const& a, tdl::Box const& b) {
  return std::lexicographical_compare(
      a.begin(), a.end(), b.begin(), b.end(),
      [](tdl::Interval x, tdl::Interval y) { return std::tie(x.lo, x.hi) < std::tie(y.lo, y.hi); });
}

bool canonical_less(Task const& a, Task const& b) {
  auto key = [](Task const& t) {
    return std::make_tuple(t.kind, t.op, t.piece, t.tensor, t.device, t.source_device, t.partial);
  };
  auto ka = key(a), kb = key(b);
  if (ka != kb) return ka < kb;
  return box_less(a.region, b.region);
}

bool canonical_less(Collective const& a, Collective const& b) {
  auto key = [](Collective const& c) { return std::make_tuple(c.kind, c.tensor, c.bytes); };
  auto ka = key(a), kb = key(b);
  if (ka != kb) return ka < kb;
  if (a.group != b.group) return a.group < b.group;
  return box_less(a.region, b.region);
}

}  // namespace cleave::lower
