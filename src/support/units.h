// Strong quantities for the cost interfaces (STYLE.md #4): no bare double whose unit a reader
// must guess.
#pragma once

#include <compare>
#include <cstdint>

namespace cleave {

template <typename Tag, typename Rep> class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(Rep v) : value_(v) {}
  constexpr Rep value() const { return value_; }
  constexpr auto operator<=>(Quantity const&) const = default;
  constexpr Quantity operator+(Quantity o) const { return Quantity(value_ + o.value_); }
  constexpr Quantity& operator+=(Quantity o) {
    value_ += o.value_;
    return *this;
  }

 private:
  Rep value_{};
};

using Bytes = Quantity<struct BytesTag, std::int64_t>;  // bytes of memory or traffic
using Flops = Quantity<struct FlopsTag, std::int64_t>;  // floating-point operations

// Rates and times are doubles: they come from datasheets and measurements, not counts.
using Seconds = Quantity<struct SecondsTag, double>;                // a duration
using BytesPerSecond = Quantity<struct BytesPerSecondTag, double>;  // a bandwidth
using FlopsPerSecond = Quantity<struct FlopsPerSecondTag, double>;  // a compute rate

}  // namespace cleave
