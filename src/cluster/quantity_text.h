// Sizes, bandwidths, rates and durations as people write them ("80GiB", "300GB/s", "100Gb/s",
// "25us", "12e9") and as cleave prints them ("80 GiB", "300 GB/s", "19.5 TFLOP/s", "25 us").
#pragma once

#include <string>
#include <string_view>

#include "support/status.h"
#include "support/units.h"

namespace cleave::cluster {

// A byte count: a number with an optional unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB,
// GiB, TiB (powers of 1024); "12e9" and "1.5GiB" work, the result must be a whole number of bytes.
Expected<Bytes> parse_bytes(std::string_view text);
// Bytes per second: a plain number, or a size unit followed by "/s" ("300GB/s", "25GiB/s"); a
// lower-case "b" means bits ("100Gb/s" = 12.5e9 B/s).
Expected<BytesPerSecond> parse_bandwidth(std::string_view text);
// FLOP/s: a plain number or one with a unit FLOP/s, GFLOP/s, TFLOP/s, PFLOP/s ("19.5TFLOP/s").
Expected<FlopsPerSecond> parse_flops_rate(std::string_view text);
// Seconds: a plain number or one with a unit s, ms, us, ns ("25us").
Expected<Seconds> parse_seconds(std::string_view text);

// Short human forms with units, at most 4 significant digits (byte counts: support/format_bytes.h).
std::string format_bandwidth(BytesPerSecond bandwidth);  // "300 GB/s", "12.5 GB/s"
std::string format_flops_rate(FlopsPerSecond rate);      // "19.5 TFLOP/s"
std::string format_seconds(Seconds seconds);             // "25 us", "1.5 ms"

}  // namespace cleave::cluster
