#include "memory/allocation.h"

#include <algorithm>
#include <limits>

#include "support/assert.h"
#include "support/format_bytes.h"

namespace cleave::memory {
namespace {

std::size_t classes_of(std::vector<std::uint32_t> const& size_class) {
  return size_class.empty() ? 0 : size_class.back() + 1;
}

std::vector<std::int64_t> object_bytes(AllocationProblem const& problem,
                                       std::vector<std::uint32_t> const& size_class) {
  std::vector<std::int64_t> out(classes_of(size_class), 0);
  for (std::size_t s = 0; s < size_class.size(); ++s)
    out[size_class[s]] = std::max(out[size_class[s]], problem.sizes[s]);
  return out;
}

std::int64_t bytes_of(std::vector<std::int64_t> const& objects,
                      std::vector<std::int64_t> const& object) {
  std::int64_t total = 0;
  for (std::size_t c = 0; c < objects.size(); ++c)
    total += objects[c] * object[c];
  return total;
}

}  // namespace

Pool pool_of(AllocationProblem const& problem, Allocation const& allocation) {
  auto object = object_bytes(problem, allocation.size_class);
  CLEAVE_ASSERT(object.size() == allocation.objects.size(), "an allocation without its counts");
  Pool pool;
  // A class without objects, which no set needs, is left out (a pool's classes have objects).
  for (std::size_t c = 0; c < object.size(); ++c)
    if (allocation.objects[c] > 0) pool.classes.push_back({object[c], allocation.objects[c]});
  return pool;
}

std::vector<std::int64_t> min_objects(AllocationProblem const& problem,
                                      std::vector<std::uint32_t> const& size_class) {
  std::size_t classes = classes_of(size_class);
  std::vector<std::int64_t> need(classes, 0), count(classes, 0);
  for (auto const& set : problem.together) {
    std::fill(count.begin(), count.end(), 0);
    for (auto s : set)
      need[size_class[s]] = std::max(need[size_class[s]], ++count[size_class[s]]);
  }
  for (auto s : problem.always)
    ++need[size_class[s]];
  return need;
}

std::vector<std::uint32_t> least_classes(AllocationProblem const& problem) {
  std::size_t sizes = problem.sizes.size();
  // The sets each size is in, once per block.
  std::vector<std::vector<std::uint32_t>> in(sizes);
  for (std::size_t k = 0; k < problem.together.size(); ++k)
    for (auto s : problem.together[k])
      in[s].push_back(static_cast<std::uint32_t>(k));
  // least[j]: the least bytes of objects for the sizes below j, split into classes; a class of
  // sizes i..j costs its largest size times the most blocks of one set among them with those
  // always held. The first
  // class of the best split of the sizes below j starts at start[j].
  constexpr std::int64_t none = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> least(sizes + 1, none);
  std::vector<std::size_t> start(sizes + 1, 0);
  least[0] = 0;
  std::vector<std::int64_t> always(sizes, 0), count(problem.together.size());
  for (auto s : problem.always)
    ++always[s];
  for (std::size_t i = 0; i < sizes; ++i) {
    std::fill(count.begin(), count.end(), 0);
    std::int64_t most = 0, held = 0;
    for (std::size_t j = i; j < sizes; ++j) {
      for (auto k : in[j])
        most = std::max(most, ++count[k]);
      held += always[j];
      std::int64_t cost = least[i] + (most + held) * problem.sizes[j];
      if (cost < least[j + 1]) {
        least[j + 1] = cost;
        start[j + 1] = i;
      }
    }
  }
  std::vector<std::uint32_t> size_class(sizes);
  std::vector<std::size_t> starts;
  for (std::size_t j = sizes; j > 0; j = start[j])
    starts.push_back(start[j]);
  std::reverse(starts.begin(), starts.end());
  for (std::size_t c = 0; c < starts.size(); ++c)
    for (std::size_t s = starts[c]; s < (c + 1 < starts.size() ? starts[c + 1] : sizes); ++s)
      size_class[s] = static_cast<std::uint32_t>(c);
  return size_class;
}

Status check_allocation(AllocationProblem const& problem, Allocation const& a) {
  auto fail = [](std::string const& why) {
    return Error(ErrorCode::invalid_argument, "the allocation " + why);
  };
  if (a.size_class.size() != problem.sizes.size())
    return fail("maps " + std::to_string(a.size_class.size()) + " sizes, not " +
                std::to_string(problem.sizes.size()));
  for (std::size_t s = 0; s < a.size_class.size(); ++s) {
    std::uint32_t prev = s == 0 ? 0 : a.size_class[s - 1];
    if (a.size_class[s] < prev || a.size_class[s] > prev + (s == 0 ? 0 : 1))
      return fail("maps size " + std::to_string(s) + " to class " +
                  std::to_string(a.size_class[s]) + " after class " + std::to_string(prev) +
                  ": classes start at 0 and step by 0 or 1");
  }
  if (a.objects.size() != classes_of(a.size_class))
    return fail("counts objects for " + std::to_string(a.objects.size()) + " classes, not " +
                std::to_string(classes_of(a.size_class)));
  auto need = min_objects(problem, a.size_class);
  for (std::size_t c = 0; c < need.size(); ++c)
    if (a.objects[c] < need[c])
      return fail("gives class " + std::to_string(c) + " " + std::to_string(a.objects[c]) +
                  " objects; one op needs " + std::to_string(need[c]) + " at once");
  std::int64_t bytes = bytes_of(a.objects, object_bytes(problem, a.size_class));
  if (bytes > problem.capacity)
    return fail("takes " + format_bytes(Bytes(bytes)) + ", over the capacity of " +
                format_bytes(Bytes(problem.capacity)));
  return Status::ok();
}

Expected<Allocation> repair(AllocationProblem const& problem, Allocation a) {
  a.size_class.resize(problem.sizes.size(), 0);
  for (std::size_t s = 0; s < a.size_class.size(); ++s) {
    std::uint32_t prev = s == 0 ? 0 : a.size_class[s - 1];
    a.size_class[s] = s == 0 ? 0 : std::clamp(a.size_class[s], prev, prev + 1);
  }
  auto least = min_objects(problem, a.size_class);
  a.objects.resize(least.size(), 0);
  for (std::size_t c = 0; c < least.size(); ++c)
    a.objects[c] = std::max(a.objects[c], least[c]);
  auto object = object_bytes(problem, a.size_class);
  std::int64_t floor = bytes_of(least, object);
  // Where the chromosome's classes cannot hold every set within the capacity, the classes that
  // need the least memory may; where they cannot, no pool can.
  if (floor > problem.capacity) {
    auto best = problem.least_classes.empty() ? least_classes(problem) : problem.least_classes;
    if (a.size_class != best) return repair(problem, {std::move(best), {}});
  }
  if (floor > problem.capacity)
    return Error(ErrorCode::invalid_argument,
                 "the size classes need " + format_bytes(Bytes(floor)) +
                     " for the blocks held at once (an op's inputs and output; what the step keeps "
                     "to its end, such as updated weights), over the pool's capacity of " +
                     format_bytes(Bytes(problem.capacity)));
  if (bytes_of(a.objects, object) <= problem.capacity) return a;
  // Cut the objects above each minimum in proportion (from at least the minimum, which holds every
  // set); rounding down keeps it within capacity.
  std::int64_t total = bytes_of(a.objects, object);
  double keep = double(problem.capacity - floor) / double(total - floor);
  for (std::size_t c = 0; c < least.size(); ++c)
    a.objects[c] = least[c] + static_cast<std::int64_t>(double(a.objects[c] - least[c]) * keep);
  // Floating-point rounding may leave a few bytes over: take objects from the largest classes.
  for (std::size_t c = least.size(); c-- > 0 && bytes_of(a.objects, object) > problem.capacity;)
    while (a.objects[c] > least[c] && bytes_of(a.objects, object) > problem.capacity)
      --a.objects[c];
  return a;
}

}  // namespace cleave::memory
