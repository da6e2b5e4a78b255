// NameIndex: name -> id lookups for names stored in a vector the index does not own (the tensors or
// ops of a graph or builder). Internal to the ir module.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "support/assert.h"

namespace cleave::ir::detail {

// Open addressing with linear probing over 8-byte slots that hold ids, not strings: no heap node
// per name (which dominates at millions of names), and entries stay valid when the owning vector
// reallocates. `name_of(id)` gives the name stored for an id.
class NameIndex {
 public:
  // Sizes an empty index for `count` names so that filling it never rehashes.
  void reserve(std::size_t count) {
    CLEAVE_ASSERT(size_ == 0, "NameIndex::reserve on a filled index");
    slots_.assign(std::bit_ceil(std::max<std::size_t>(16, 2 * count)), 0);
  }

  template <typename NameOf>
  std::optional<std::uint32_t> find(std::string_view name, NameOf const& name_of) const {
    if (slots_.empty()) return std::nullopt;
    std::uint64_t entry = slots_[probe(name, hash(name), name_of)];
    if (entry == 0) return std::nullopt;
    return id_of(entry);
  }

  // Records `id` under `name`, or returns the id that already holds the name.
  template <typename NameOf>
  std::optional<std::uint32_t> insert(std::string_view name, std::uint32_t id,
                                      NameOf const& name_of) {
    if (2 * (size_ + 1) > slots_.size()) grow(name_of);
    std::uint64_t h = hash(name);
    std::size_t slot = probe(name, h, name_of);
    if (slots_[slot] != 0) return id_of(slots_[slot]);
    slots_[slot] = make_entry(h, id);
    ++size_;
    return std::nullopt;
  }

 private:
  static std::uint64_t hash(std::string_view name) { return std::hash<std::string_view>{}(name); }
  // The high half of the hash beside id + 1 (0 marks an empty slot): most mismatches are rejected
  // on the hash bits without touching the name.
  static std::uint64_t make_entry(std::uint64_t h, std::uint32_t id) {
    return (h & 0xffffffff00000000u) | (std::uint64_t{id} + 1);
  }
  static std::uint32_t id_of(std::uint64_t entry) { return static_cast<std::uint32_t>(entry) - 1; }

  // The slot holding `name`, or the empty slot where it would go.
  template <typename NameOf>
  std::size_t probe(std::string_view name, std::uint64_t h, NameOf const& name_of) const {
    std::size_t mask = slots_.size() - 1;
    for (std::size_t slot = h & mask;; slot = (slot + 1) & mask) {
      std::uint64_t entry = slots_[slot];
      if (entry == 0) return slot;
      if ((entry >> 32) == (h >> 32) && name_of(id_of(entry)) == name) return slot;
    }
  }

  template <typename NameOf> void grow(NameOf const& name_of) {
    std::vector<std::uint64_t> old = std::move(slots_);
    slots_.assign(std::max<std::size_t>(16, 2 * old.size()), 0);
    std::size_t mask = slots_.size() - 1;
    for (std::uint64_t entry : old) {
      if (entry == 0) continue;
      std::size_t slot = hash(name_of(id_of(entry))) & mask;
      while (slots_[slot] != 0)
        slot = (slot + 1) & mask;
      slots_[slot] = entry;
    }
  }

  std::vector<std::uint64_t> slots_;
  std::size_t size_ = 0;
};

}  // namespace cleave::ir::detail
