// Measured compute times that override the roofline (issue 4: "per-piece compute time by roofline
// with per-op-kind efficiencies, overridable by a measured profile table"). `cleave calibrate`
// writes these tables from micro-benchmarks; a user may also write a coarse calibration by hand.
// The file format, "cleave.profile/1", is in docs/formats.md.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/types.h"
#include "support/status.h"
#include "support/units.h"

namespace cleave::cost {

inline constexpr std::string_view profile_format = "cleave.profile/1";

// A key without owning its parts, for lookups (ProfileKey below).
struct ProfileKeyView {
  std::string_view op;
  std::string_view attrs;
  std::span<std::int64_t const> extents;
  ir::DType dtype = ir::DType::fp32;
  std::string_view device_kind;
};

// What one measurement is of: the kernel (op type and the text of its attributes, so that convs
// with other strides do not collide), the shape of the piece (the extents of its box of the op's
// iteration space, in the op's dimension order), the dtype it computes in, and the hardware.
struct ProfileKey {
  std::string op;                     // op type, "conv2d"; "reduce" for reduce tasks
  std::string attrs;                  // ir::Attrs::to_string() of the op, "" when it has none
  std::vector<std::int64_t> extents;  // the piece's iteration-box extents
  ir::DType dtype = ir::DType::fp32;
  std::string device_kind;  // cluster::Device::kind, "A100-SXM4-80GB"

  bool operator==(ProfileKey const&) const = default;
  ProfileKeyView view() const { return {op, attrs, extents, dtype, device_kind}; }
};

// Orders keys and views of keys alike, so that lookups need not copy the request's strings.
struct ProfileKeyLess {
  using is_transparent = void;
  static ProfileKeyView view(ProfileKeyView v) { return v; }
  static ProfileKeyView view(ProfileKey const& k) { return k.view(); }
  static bool less(ProfileKeyView const& a, ProfileKeyView const& b);
  template <typename A, typename B> bool operator()(A const& a, B const& b) const {
    return less(view(a), view(b));
  }
};

struct Measurement {
  Seconds seconds{0};        // median measured time of the piece, launch included
  std::int64_t samples = 0;  // measurements behind the median; 0: not recorded
};

struct ProfileEntry {
  ProfileKey key;
  Measurement measurement;
};

// A coarse calibration of the roofline for one device kind; what is unset keeps CostOptions'.
struct DeviceCalibration {
  std::map<std::string, double, std::less<>> efficiency;  // fraction of peak, by op type
  std::optional<double> default_efficiency;               // op types not in `efficiency`
  std::optional<double> memory_efficiency;                // fraction of memory bandwidth
  std::optional<Seconds> launch;                          // per kernel (piece)
};

class ProfileTable {
 public:
  // Errors (invalid_argument) name the entry and say what is wrong: a key already present, a
  // time that is not positive and finite, an extent below 1, a negative sample count.
  Status add(ProfileEntry entry);
  // Errors on a second calibration of the same kind or on fractions outside (0, 1].
  Status add_calibration(std::string device_kind, DeviceCalibration calibration);

  // The measurement of exactly this key, or null.
  Measurement const* find(ProfileKeyView const& key) const;
  DeviceCalibration const* calibration(std::string_view device_kind) const;

  // Entries in key order.
  std::vector<ProfileEntry> entries() const;
  std::map<std::string, DeviceCalibration, std::less<>> const& calibrations() const {
    return calibrations_;
  }
  bool has_entries() const { return !entries_.empty(); }

  std::string source;  // free text: what measured it, where, when

 private:
  std::map<ProfileKey, Measurement, ProfileKeyLess> entries_;
  std::map<std::string, DeviceCalibration, std::less<>> calibrations_;
};

// "cleave.profile/1" text, one entry per line; load(save(t)) equals t.
std::string profile_to_json(ProfileTable const& table);
Expected<ProfileTable> profile_from_json(std::string_view text);
Status save_profile(ProfileTable const& table, std::string const& path);
Expected<ProfileTable> load_profile(std::string const& path);

}  // namespace cleave::cost
