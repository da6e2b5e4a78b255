#include "runtime/block_store.h"

#include <algorithm>
#include <cstring>

#include "support/assert.h"

namespace cleave::runtime {
namespace {

bool inside(tdl::Box const& outer, tdl::Box const& inner) {
  for (std::size_t d = 0; d < outer.size(); ++d)
    if (inner[d].lo < outer[d].lo || inner[d].hi > outer[d].hi) return false;
  return true;
}

bool empty_box(tdl::Box const& b) {
  return std::any_of(b.begin(), b.end(), [](tdl::Interval i) { return i.empty(); });
}

}  // namespace

void copy_box(float const* src, tdl::Box const& src_region, float* dst, tdl::Box const& dst_region,
              tdl::Box const& part) {
  if (empty_box(part)) return;
  std::size_t rank = part.size();
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  // A run of trailing dimensions that `part` covers whole in both regions is contiguous in both:
  // it is copied as one row. The outer dimensions are walked by an odometer; row by row, a
  // conv's activations (short rows of W elements) would be mostly loop overhead.
  std::size_t inner = rank - 1;
  std::int64_t row = part[inner].size();
  while (inner > 0 && part[inner] == src_region[inner] && part[inner] == dst_region[inner]) {
    --inner;
    row *= part[inner].size();
  }
  // Strides (in elements) of every dimension in both regions, and the offsets of part's first
  // element.
  std::vector<std::int64_t> src_stride(rank, 1), dst_stride(rank, 1);
  for (std::size_t d = rank - 1; d-- > 0;) {
    src_stride[d] = src_stride[d + 1] * src_region[d + 1].size();
    dst_stride[d] = dst_stride[d + 1] * dst_region[d + 1].size();
  }
  std::int64_t src_at = 0, dst_at = 0;
  for (std::size_t d = 0; d < rank; ++d) {
    src_at += (part[d].lo - src_region[d].lo) * src_stride[d];
    dst_at += (part[d].lo - dst_region[d].lo) * dst_stride[d];
  }
  auto bytes = static_cast<std::size_t>(row) * sizeof(float);
  std::vector<std::int64_t> count(inner, 0);
  while (true) {
    std::memcpy(dst + dst_at, src + src_at, bytes);
    // Next row: an odometer over the dimensions before `inner`.
    std::size_t d = inner;
    while (d-- > 0) {
      src_at += src_stride[d];
      dst_at += dst_stride[d];
      if (++count[d] < part[d].size()) break;
      src_at -= src_stride[d] * part[d].size();
      dst_at -= dst_stride[d] * part[d].size();
      count[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) return;
  }
}

std::string block_name(ir::Graph const& graph, ir::TensorId tensor, tdl::Box const& region) {
  return "tensor " + graph.tensor(tensor).name + tdl::box_to_string(region);
}

namespace {

// Marks the elements of `part` (inside `region`) in `covered`; counts the newly marked ones
// unless they were `counted` already.
void mark(std::vector<char>& covered, std::size_t& count, tdl::Box const& region,
          tdl::Box const& part, bool counted) {
  std::vector<float> ones(static_cast<std::size_t>(tdl::box_volume(part)), 1.0f);
  std::vector<float> mask(covered.size(), 0.0f);
  copy_box(ones.data(), part, mask.data(), region, part);
  for (std::size_t k = 0; k < covered.size(); ++k)
    if (mask[k] != 0 && !covered[k]) {
      covered[k] = 1;
      count += counted ? 0 : 1;
    }
}

}  // namespace

Bytes block_bytes(ir::Graph const& graph, ir::TensorId tensor, tdl::Box const& region) {
  return Bytes(tdl::box_volume(region) * ir::dtype_bytes(graph.tensor(tensor).type.dtype));
}

Status BlockStore::add(ir::TensorId tensor, tdl::Box region, std::vector<float> data, bool partial,
                       lower::TaskId task) {
  Block block{tensor, std::move(region), std::move(data), partial, task, Charge{}};
  CLEAVE_ASSERT(static_cast<std::int64_t>(block.data.size()) == tdl::box_volume(block.region),
                "a block's data does not match its region");
  CLEAVE_TRY(block.charged, arena_.allocate(block_bytes(graph_, block.tensor, block.region),
                                            block_name(graph_, block.tensor, block.region)));
  std::shared_ptr<Block> held;
  if (pool_)
    held = std::shared_ptr<Block>(new Block(std::move(block)), [pool = pool_](Block* b) {
      pool->give(std::move(b->data));
      delete b;
    });
  else
    held = std::make_shared<Block>(std::move(block));
  std::lock_guard lock(mutex_);
  blocks_.push_back(std::move(held));
  return Status::ok();
}

std::vector<float> BufferPool::take(std::size_t size) {
  {
    std::lock_guard lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      std::vector<float> buffer = std::move(it->second.back());
      it->second.pop_back();
      held_ -= size * sizeof(float);
      return buffer;
    }
  }
  return std::vector<float>(size);
}

void BufferPool::give(std::vector<float> buffer) {
  std::size_t bytes = buffer.size() * sizeof(float);
  std::lock_guard lock(mutex_);
  if (buffer.empty() || held_ + bytes > capacity_) return;
  held_ += bytes;
  free_[buffer.size()].push_back(std::move(buffer));
}

Expected<std::vector<float>> BlockStore::gather(ir::TensorId tensor, tdl::Box const& region) const {
  std::vector<std::shared_ptr<Block const>> held;
  {
    std::lock_guard lock(mutex_);
    for (auto const& b : blocks_)
      if (b->tensor == tensor && !b->partial) held.push_back(b);
  }
  auto volume = static_cast<std::size_t>(tdl::box_volume(region));
  std::vector<float> out(volume);
  for (auto const& b : held)  // the common case: one block holds all of it
    if (inside(b->region, region)) {
      copy_box(b->data.data(), b->region, out.data(), region, region);
      return out;
    }
  std::vector<char> covered;  // marked element by element once two parts overlap
  std::size_t count = 0;
  std::vector<tdl::Box> parts;  // copied so far, while none overlap
  bool overlapping = false;
  for (auto const& b : held) {
    tdl::Box part = tdl::intersect(region, b->region);
    if (empty_box(part)) continue;
    copy_box(b->data.data(), b->region, out.data(), region, part);
    if (count == volume) continue;
    // Count what this block covers: by volume while the parts are disjoint (shards of one
    // tensor), element by element once two overlap (halos delivered twice).
    if (!overlapping)
      for (auto const& earlier : parts)
        overlapping = overlapping || !empty_box(tdl::intersect(earlier, part));
    if (!overlapping) {
      count += static_cast<std::size_t>(tdl::box_volume(part));
      parts.push_back(part);
      continue;
    }
    if (!parts.empty()) {  // mark what the disjoint parts covered, once
      covered.assign(volume, 0);
      for (auto const& earlier : parts)
        mark(covered, count, region, earlier, /*counted=*/true);
      parts.clear();
    }
    mark(covered, count, region, part, /*counted=*/false);
  }
  if (count != volume)
    return Error(ErrorCode::execution_failed, "the device lacks part of " +
                                                  block_name(graph_, tensor, region) +
                                                  " that a task reads");
  return out;
}

std::optional<BlockStore::View> BlockStore::view(ir::TensorId tensor,
                                                 tdl::Box const& region) const {
  std::lock_guard lock(mutex_);
  for (auto const& b : blocks_) {
    if (b->tensor != tensor || b->partial || !inside(b->region, region)) continue;
    // Contiguous in row-major order: the dimensions after the last narrower one are whole, and
    // those before it hold one index each.
    std::size_t last = 0;
    for (std::size_t d = 0; d < region.size(); ++d)
      if (region[d] != b->region[d]) last = d;
    std::int64_t offset = 0;
    bool contiguous = true;
    for (std::size_t d = 0; d < region.size(); ++d) {
      contiguous = contiguous && (d >= last || region[d].size() == 1);
      offset = offset * b->region[d].size() + (region[d].lo - b->region[d].lo);
    }
    if (contiguous) return View{b, b->data.data() + offset};
  }
  return std::nullopt;
}

Expected<std::vector<float>> BlockStore::read_written(lower::TaskId task,
                                                      tdl::Box const& region) const {
  std::shared_ptr<Block const> held;
  {
    std::lock_guard lock(mutex_);
    for (auto const& b : blocks_)
      if (b->task == task) held = b;
  }
  if (!held)
    return Error(ErrorCode::execution_failed,
                 "the block of task " + std::to_string(task) + " is not on its device");
  if (!inside(held->region, region))
    return Error(ErrorCode::execution_failed, "a task reads outside the block it waits for");
  std::vector<float> out(static_cast<std::size_t>(tdl::box_volume(region)));
  copy_box(held->data.data(), held->region, out.data(), region, region);
  return out;
}

void BlockStore::free_written(lower::TaskId task) {
  std::shared_ptr<Block> dropped;
  {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(blocks_.begin(), blocks_.end(),
                           [&](auto const& b) { return b->task == task; });
    if (it == blocks_.end()) return;
    dropped = std::move(*it);
    blocks_.erase(it);
  }
  arena_.release(dropped->charged);
}

void BlockStore::free_inside(ir::TensorId tensor, tdl::Box const& region) {
  std::vector<Charge> released;
  {
    std::lock_guard lock(mutex_);
    std::erase_if(blocks_, [&](std::shared_ptr<Block> const& b) {
      bool drop = b->tensor == tensor && !b->partial && inside(region, b->region);
      if (drop) released.push_back(b->charged);
      return drop;
    });
  }
  for (auto const& charge : released)
    arena_.release(charge);
}

std::vector<Block> BlockStore::blocks_of(ir::TensorId tensor) const {
  std::lock_guard lock(mutex_);
  std::vector<Block> out;
  for (auto const& b : blocks_)
    if (b->tensor == tensor && !b->partial) out.push_back(*b);
  return out;
}

void BlockStore::clear() {
  std::lock_guard lock(mutex_);
  for (auto const& b : blocks_)
    arena_.release(b->charged);
  blocks_.clear();
}

}  // namespace cleave::runtime
