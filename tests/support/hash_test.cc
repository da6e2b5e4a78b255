#include <gtest/gtest.h>

#include "support/hash.h"

namespace cleave {
namespace {

TEST(Hash, Fnv1aMatchesTheReferenceVectors) {
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a_hex("foobar"), "85944171f73967e8");
  // Graph fingerprints keep their historical basis (plans store them).
  EXPECT_EQ(fnv1a("", fnv1a_graph_basis), 1469598103934665603ull);
  EXPECT_NE(fnv1a_hex("graph", fnv1a_graph_basis), fnv1a_hex("graph"));
}

}  // namespace
}  // namespace cleave
