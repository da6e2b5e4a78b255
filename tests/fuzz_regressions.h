// Replaying the inputs a fuzzer (scripts/fuzz.sh) found crashing, kept as files in a directory,
// each with the outcome it must now have: "" where it must succeed, else a part of the error it
// must give. Every file must be listed, and every listed file present.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include "support/status.h"

namespace cleave::testing {

// The outcome of a reader's Expected, as a Status.
template <typename T> Status status_of(Expected<T> result) {
  if (result) return Status::ok();
  return std::move(result).error();
}

inline void expect_fuzz_outcomes(std::filesystem::path const& dir,
                                 std::map<std::string, std::string> const& outcomes,
                                 std::function<Status(std::string const&)> const& run) {
  std::set<std::string> seen;
  for (auto const& f : std::filesystem::directory_iterator(dir)) {
    std::string const name = f.path().filename().string();
    auto outcome = outcomes.find(name);
    ASSERT_NE(outcome, outcomes.end()) << name << ": add its outcome to the table";
    std::ifstream in(f.path(), std::ios::binary);
    Status const status = run(std::string{std::istreambuf_iterator<char>(in), {}});
    if (outcome->second.empty()) {
      EXPECT_TRUE(status.is_ok()) << name << ": " << status.error().to_string();
    } else {
      ASSERT_FALSE(status.is_ok()) << name << " succeeded";
      EXPECT_NE(status.error().message().find(outcome->second), std::string::npos)
          << name << ": " << status.error().to_string();
    }
    seen.insert(name);
  }
  EXPECT_EQ(seen.size(), outcomes.size()) << "a listed regression input is missing from " << dir;
}

}  // namespace cleave::testing
