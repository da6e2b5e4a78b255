#include "memory/allocation.h"

#include <algorithm>
#include <numeric>

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
  // A class without objects is left out: its blocks take objects of a larger class, as the pool
  // gives a block the smallest class with objects that hold it.
  for (std::size_t c = 0; c < object.size(); ++c)
    if (allocation.objects[c] > 0) pool.classes.push_back({object[c], allocation.objects[c]});
  return pool;
}

namespace {

// Per class: the most blocks of one `together` set in that class or larger ones, which need as
// many objects there (a block takes an object of its class or a larger one).
std::vector<std::int64_t> needed_from(AllocationProblem const& problem,
                                      std::vector<std::uint32_t> const& size_class) {
  std::size_t classes = classes_of(size_class);
  std::vector<std::int64_t> need(classes, 0), count(classes, 0);
  for (auto const& set : problem.together) {
    std::fill(count.begin(), count.end(), 0);
    for (auto s : set)
      ++count[size_class[s]];
    std::int64_t above = 0;
    for (std::size_t c = classes; c-- > 0;) {
      above += count[c];
      need[c] = std::max(need[c], above);
    }
  }
  return need;
}

// The objects from class c up.
std::vector<std::int64_t> from(std::vector<std::int64_t> const& objects) {
  std::vector<std::int64_t> out(objects.size() + 1, 0);
  for (std::size_t c = objects.size(); c-- > 0;)
    out[c] = out[c + 1] + objects[c];
  return out;
}

}  // namespace

std::vector<std::int64_t> min_objects(AllocationProblem const& problem,
                                      std::vector<std::uint32_t> const& size_class) {
  auto need = needed_from(problem, size_class);
  // From the largest class down, each the objects still missing: the fewest in the larger,
  // dearer classes.
  std::vector<std::int64_t> out(need.size(), 0);
  std::int64_t above = 0;
  for (std::size_t c = need.size(); c-- > 0;) {
    out[c] = std::max<std::int64_t>(0, need[c] - above);
    above += out[c];
  }
  return out;
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
  auto need = needed_from(problem, a.size_class);
  auto have = from(a.objects);
  for (std::size_t c = 0; c < need.size(); ++c) {
    if (a.objects[c] < 0)
      return fail("gives class " + std::to_string(c) + " " + std::to_string(a.objects[c]) +
                  " objects");
    if (have[c] < need[c])
      return fail("gives class " + std::to_string(c) + " and larger ones " +
                  std::to_string(have[c]) + " objects; one op needs " + std::to_string(need[c]) +
                  " at once");
  }
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
  auto need = needed_from(problem, a.size_class);
  a.objects.resize(least.size(), 0);
  // The fewest objects added, each class from the largest down, to hold every set.
  std::int64_t above = 0;
  for (std::size_t c = least.size(); c-- > 0;) {
    a.objects[c] = std::max({a.objects[c], std::int64_t{0}, need[c] - above});
    above += a.objects[c];
  }
  auto object = object_bytes(problem, a.size_class);
  std::int64_t floor = bytes_of(least, object);
  // A class's objects are as large as its largest size, so merging sizes into a class only raises
  // the least pool that holds every set: a class per size has the least of all mappings. Where
  // the chromosome's mapping cannot fit, that one may; where it cannot, none can.
  std::vector<std::uint32_t> per_size(problem.sizes.size());
  std::iota(per_size.begin(), per_size.end(), 0u);
  if (floor > problem.capacity && a.size_class != per_size)
    return repair(problem, {std::move(per_size), {}});
  if (floor > problem.capacity)
    return Error(ErrorCode::invalid_argument,
                 "the size classes need " + format_bytes(Bytes(floor)) +
                     " for the blocks held at once (an op's inputs and output; what the step keeps "
                     "to its end, such as updated weights), over the pool's capacity of " +
                     format_bytes(Bytes(problem.capacity)));
  if (bytes_of(a.objects, object) <= problem.capacity) return a;
  // Cut the objects above each minimum in proportion (from at least the minimum, which holds every
  // set); rounding down keeps it within capacity.
  for (std::size_t c = 0; c < least.size(); ++c)
    a.objects[c] = std::max(a.objects[c], least[c]);
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
