#include "memory/allocation.h"

#include <algorithm>

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
  for (std::size_t c = 0; c < object.size(); ++c)
    pool.classes.push_back({object[c], allocation.objects[c]});
  return pool;
}

std::vector<std::int64_t> min_objects(AllocationProblem const& problem,
                                      std::vector<std::uint32_t> const& size_class) {
  std::vector<std::int64_t> out(classes_of(size_class), 1);
  std::vector<std::int64_t> count(out.size(), 0);
  for (auto const& set : problem.together) {
    for (auto s : set)
      ++count[size_class[s]];
    for (auto s : set) {
      out[size_class[s]] = std::max(out[size_class[s]], count[size_class[s]]);
    }
    for (auto s : set)
      count[size_class[s]] = 0;
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
  auto least = min_objects(problem, a.size_class);
  for (std::size_t c = 0; c < least.size(); ++c)
    if (a.objects[c] < least[c])
      return fail("gives class " + std::to_string(c) + " " + std::to_string(a.objects[c]) +
                  " objects; one op needs " + std::to_string(least[c]) + " at once");
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
  if (floor > problem.capacity)
    return Error(ErrorCode::invalid_argument,
                 "the size classes need " + format_bytes(Bytes(floor)) +
                     " for the blocks held at once (an op's inputs and output; what the step keeps "
                     "to its end, such as updated weights), over the pool's capacity of " +
                     format_bytes(Bytes(problem.capacity)));
  std::int64_t total = bytes_of(a.objects, object);
  if (total <= problem.capacity) return a;
  // Cut the objects above each minimum in proportion; rounding down keeps it within capacity.
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
