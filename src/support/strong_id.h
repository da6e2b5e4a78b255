// Strong integer ids (STYLE.md #3): a TensorId cannot be passed where an OpId is expected.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>

namespace cleave {

template <typename Tag> class StrongId {
 public:
  using value_type = std::uint32_t;
  static constexpr value_type invalid_value = std::numeric_limits<value_type>::max();

  constexpr StrongId() = default;
  constexpr explicit StrongId(value_type v) : value_(v) {}

  constexpr value_type value() const { return value_; }
  constexpr bool valid() const { return value_ != invalid_value; }
  constexpr auto operator<=>(StrongId const&) const = default;

 private:
  value_type value_ = invalid_value;
};

}  // namespace cleave

template <typename Tag> struct std::hash<cleave::StrongId<Tag>> {
  std::size_t operator()(cleave::StrongId<Tag> id) const noexcept {
    return std::hash<std::uint32_t>{}(id.value());
  }
};
