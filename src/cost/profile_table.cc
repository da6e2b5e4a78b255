#include "cost/profile_table.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "ir/text_format.h"
#include "support/file_io.h"
#include "support/json_read.h"

namespace cleave::cost {

bool ProfileKeyLess::less(ProfileKeyView const& a, ProfileKeyView const& b) {
  auto head = [](ProfileKeyView const& k) {
    return std::tie(k.op, k.attrs, k.dtype, k.device_kind);
  };
  if (head(a) != head(b)) return head(a) < head(b);
  return std::lexicographical_compare(a.extents.begin(), a.extents.end(), b.extents.begin(),
                                      b.extents.end());
}

namespace {

std::string describe(ProfileKey const& k) {
  std::string extents;
  for (auto e : k.extents)
    extents += (extents.empty() ? "" : "x") + std::to_string(e);
  return "'" + k.op + "' [" + extents + "] " + std::string(ir::dtype_name(k.dtype)) + " on '" +
         k.device_kind + "'" + (k.attrs.empty() ? "" : " with '" + k.attrs + "'");
}

std::string number_text(double v) {
  std::string out;
  ir::detail::append_double(out, v);
  return out;
}

bool is_fraction(std::optional<double> v) {
  return !v || (std::isfinite(*v) && *v > 0 && *v <= 1);
}

}  // namespace

Status ProfileTable::add(ProfileEntry entry) {
  auto const& k = entry.key;
  auto invalid = [&](std::string const& problem) {
    return Error(ErrorCode::invalid_argument, "profile entry " + describe(k) + ": " + problem);
  };
  if (k.op.empty()) return invalid("the op type is empty; give the op's type, e.g. \"conv2d\"");
  if (k.device_kind.empty())
    return invalid("the device kind is empty; give the cluster's Device kind (`cleave clusters "
                   "--show`), e.g. \"A100-SXM4-80GB\"");
  for (auto e : k.extents)
    if (e < 1)
      return invalid("extent " + std::to_string(e) + " is below 1; a piece is never empty");
  double s = entry.measurement.seconds.value();
  if (!std::isfinite(s) || s <= 0)
    return invalid("time " + number_text(s) + " s is not a positive number of seconds");
  if (entry.measurement.samples < 0)
    return invalid("sample count " + std::to_string(entry.measurement.samples) +
                   " is negative; give the number of measurements, or leave it out");
  if (!entries_.emplace(std::move(entry.key), entry.measurement).second)
    return invalid("measured twice; keep one entry per key (the median of all samples)");
  return Status::ok();
}

Status ProfileTable::add_calibration(std::string device_kind, DeviceCalibration calibration) {
  auto invalid = [&](std::string const& problem) {
    return Error(ErrorCode::invalid_argument,
                 "calibration of device kind '" + device_kind + "': " + problem);
  };
  if (device_kind.empty()) return invalid("the device kind is empty");
  std::string const fraction = " must be a fraction of the peak in (0, 1]; if measurements exceed "
                               "the preset's peak, correct the cluster's device instead";
  for (auto const& [op, eff] : calibration.efficiency)
    if (!is_fraction(eff)) return invalid("efficiency of '" + op + "'" + fraction);
  if (!is_fraction(calibration.default_efficiency)) return invalid("default_efficiency" + fraction);
  if (!is_fraction(calibration.memory_efficiency)) return invalid("memory_efficiency" + fraction);
  if (calibration.launch &&
      (!std::isfinite(calibration.launch->value()) || calibration.launch->value() < 0))
    return invalid("launch_s must be a non-negative number of seconds");
  if (calibrations_.contains(device_kind))
    return invalid("calibrated twice; keep one calibration per device kind");
  calibrations_.emplace(std::move(device_kind), std::move(calibration));
  return Status::ok();
}

Measurement const* ProfileTable::find(ProfileKeyView const& key) const {
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

DeviceCalibration const* ProfileTable::calibration(std::string_view device_kind) const {
  auto it = calibrations_.find(device_kind);
  return it == calibrations_.end() ? nullptr : &it->second;
}

std::vector<ProfileEntry> ProfileTable::entries() const {
  std::vector<ProfileEntry> out;
  out.reserve(entries_.size());
  for (auto const& [key, m] : entries_)
    out.push_back({key, m});
  return out;
}

// ---- Writing: one calibration or entry per line, so that diffs of tables stay readable.

std::string profile_to_json(ProfileTable const& table) {
  using ir::detail::append_double;
  using ir::detail::append_int;
  using ir::detail::append_quoted;
  std::string out = "{\"format\":";
  append_quoted(out, profile_format);
  out += ",\n\"source\":";
  append_quoted(out, table.source);
  out += ",\n\"calibrations\":[";
  bool first = true;
  for (auto const& [kind, c] : table.calibrations()) {
    out += first ? "\n{\"device_kind\":" : ",\n{\"device_kind\":";
    first = false;
    append_quoted(out, kind);
    if (c.launch) {
      out += ",\"launch_s\":";
      append_double(out, c.launch->value());
    }
    if (c.memory_efficiency) {
      out += ",\"memory_efficiency\":";
      append_double(out, *c.memory_efficiency);
    }
    if (c.default_efficiency) {
      out += ",\"default_efficiency\":";
      append_double(out, *c.default_efficiency);
    }
    out += ",\"efficiency\":{";
    bool first_op = true;
    for (auto const& [op, eff] : c.efficiency) {
      if (!first_op) out += ',';
      first_op = false;
      append_quoted(out, op);
      out += ':';
      append_double(out, eff);
    }
    out += "}}";
  }
  out += first ? "],\n\"entries\":[" : "\n],\n\"entries\":[";
  auto entries = table.entries();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto const& [k, m] = entries[i];
    out += i == 0 ? "\n{\"op\":" : ",\n{\"op\":";
    append_quoted(out, k.op);
    out += ",\"attrs\":";
    append_quoted(out, k.attrs);
    out += ",\"extents\":[";
    for (std::size_t d = 0; d < k.extents.size(); ++d) {
      if (d > 0) out += ',';
      append_int(out, k.extents[d]);
    }
    out += "],\"dtype\":";
    append_quoted(out, ir::dtype_name(k.dtype));
    out += ",\"device_kind\":";
    append_quoted(out, k.device_kind);
    out += ",\"seconds\":";
    append_double(out, m.seconds.value());
    if (m.samples > 0) {
      out += ",\"samples\":";
      append_int(out, m.samples);
    }
    out += '}';
  }
  out += entries.empty() ? "]}\n" : "\n]}\n";
  return out;
}

// ---- Reading: a DOM is fine; every error names the calibration or entry and the key.

namespace {

using json_read::json;

using json_read::check_keys;
using json_read::content_error;
using json_read::get_array;
using json_read::get_integer;
using json_read::get_number;
using json_read::get_string;
using json_read::type_name;

Expected<ir::DType> get_dtype(json const& obj, std::string const& where) {
  CLEAVE_TRY(std::string name, get_string(obj, "dtype", where));
  auto dtype = ir::parse_dtype(name);
  if (!dtype)
    return content_error(where + ", key 'dtype'",
                         "unknown dtype '" + name + "'; expected fp32, fp16, bf16, int32 or int64");
  return *dtype;
}

Expected<DeviceCalibration> calibration_from_json(json const& c, std::string const& where) {
  DeviceCalibration cal;
  for (auto [key, field] : {std::pair{"default_efficiency", &cal.default_efficiency},
                            {"memory_efficiency", &cal.memory_efficiency}})
    if (c.contains(key)) {
      CLEAVE_TRY(double value, get_number(c, key, where));
      *field = value;
    }
  if (c.contains("launch_s")) {
    CLEAVE_TRY(double launch, get_number(c, "launch_s", where));
    cal.launch = Seconds(launch);
  }
  if (c.contains("efficiency")) {
    json const& eff = c["efficiency"];
    std::string eff_where = where + ", key 'efficiency'";
    if (!eff.is_object())
      return content_error(eff_where, "expected an object of op type: fraction of peak, found " +
                                          type_name(eff));
    for (auto const& [op, value] : eff.items()) {
      if (!value.is_number())
        return content_error(eff_where + ", '" + op + "'",
                             "expected a number, found " + type_name(value));
      cal.efficiency[op] = value.get<double>();
    }
  }
  return cal;
}

Expected<ProfileEntry> entry_from_json(json const& e, std::string const& where) {
  CLEAVE_CHECK_OK(check_keys(e, where, {"op", "extents", "dtype", "device_kind", "seconds"},
                             {"attrs", "samples"}));
  ProfileEntry entry;
  auto& k = entry.key;
  CLEAVE_TRY(k.op, get_string(e, "op", where));
  if (e.contains("attrs")) {
    CLEAVE_TRY(k.attrs, get_string(e, "attrs", where));
  }
  json const& extents = e["extents"];
  if (!extents.is_array())
    return content_error(where + ", key 'extents'",
                         "expected an array of the piece's iteration-box extents, found " +
                             type_name(extents));
  for (std::size_t d = 0; d < extents.size(); ++d) {
    CLEAVE_TRY(std::int64_t extent,
               get_integer(extents[d], where + ", key 'extents', item " + std::to_string(d)));
    k.extents.push_back(extent);
  }
  CLEAVE_TRY(k.dtype, get_dtype(e, where));
  CLEAVE_TRY(k.device_kind, get_string(e, "device_kind", where));
  CLEAVE_TRY(double seconds, get_number(e, "seconds", where));
  entry.measurement.seconds = Seconds(seconds);
  if (e.contains("samples")) {
    CLEAVE_TRY(entry.measurement.samples, get_integer(e["samples"], where + ", key 'samples'"));
  }
  return entry;
}

}  // namespace

Expected<ProfileTable> profile_from_json(std::string_view text) {
  CLEAVE_TRY(json root, json_read::parse(text));
  if (!root.is_object() || !root.contains("format"))
    return Error(ErrorCode::parse_error, "not a cleave profile table: no \"format\": \"" +
                                             std::string(profile_format) +
                                             "\"; the file may be from another tool");
  if (!root["format"].is_string() || root["format"] != profile_format)
    return Error(ErrorCode::unsupported, "the file's format is " + root["format"].dump() +
                                             " but cleave reads \"" + std::string(profile_format) +
                                             "\" here; the file may be from another tool or a "
                                             "newer cleave");
  CLEAVE_CHECK_OK(check_keys(root, "top level", {"format"}, {"source", "calibrations", "entries"}));
  ProfileTable table;
  if (root.contains("source")) {
    CLEAVE_TRY(table.source, get_string(root, "source", "top level"));
  }
  if (root.contains("calibrations")) {
    CLEAVE_TRY(json const* cals, get_array(root, "calibrations"));
    for (std::size_t i = 0; i < cals->size(); ++i) {
      json const& c = (*cals)[i];
      std::string where = "calibration " + std::to_string(i);
      CLEAVE_CHECK_OK(
          check_keys(c, where, {"device_kind"},
                     {"launch_s", "memory_efficiency", "default_efficiency", "efficiency"}));
      CLEAVE_TRY(std::string kind, get_string(c, "device_kind", where));
      CLEAVE_TRY(DeviceCalibration cal, calibration_from_json(c, where));
      auto st = table.add_calibration(std::move(kind), std::move(cal));
      if (!st) return std::move(st).error().with_context(where);
    }
  }
  if (root.contains("entries")) {
    CLEAVE_TRY(json const* entries, get_array(root, "entries"));
    for (std::size_t i = 0; i < entries->size(); ++i) {
      std::string where = "entry " + std::to_string(i);
      CLEAVE_TRY(ProfileEntry entry, entry_from_json((*entries)[i], where));
      auto st = table.add(std::move(entry));
      if (!st) return std::move(st).error().with_context(where);
    }
  }
  return table;
}

Status save_profile(ProfileTable const& table, std::string const& path) {
  return write_file_atomic(path, profile_to_json(table));
}

Expected<ProfileTable> load_profile(std::string const& path) {
  std::string context = "in profile table '" + path + "'";
  auto text = read_file(path);
  if (!text) return std::move(text.error()).with_context(context);
  auto table = profile_from_json(*text);
  if (!table) return std::move(table.error()).with_context(context);
  return table;
}

}  // namespace cleave::cost
