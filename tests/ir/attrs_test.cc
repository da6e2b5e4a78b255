#include <gtest/gtest.h>
#include <limits>

#include "ir/attrs.h"

namespace cleave::ir {
namespace {

using Ints = std::vector<std::int64_t>;

TEST(Attrs, KeepsItemsSortedAndReplaces) {
  Attrs attrs{{"stride", std::int64_t{2}}, {"alpha", 0.5}, {"mode", std::string("same")}};
  attrs.set("padding", Ints{1, 1}).set("stride", std::int64_t{3});
  std::vector<std::string> names;
  for (auto const& [name, value] : attrs.items())
    names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "mode", "padding", "stride"}));
  EXPECT_EQ(attrs.get_int("stride", 0), 3);
  EXPECT_TRUE(attrs.contains("mode"));
  EXPECT_FALSE(attrs.contains("mod"));
  EXPECT_EQ(attrs.find("nothing"), nullptr);
}

TEST(Attrs, TypedReadsFallBackOnAbsentOrOtherType) {
  Attrs attrs{{"n", std::int64_t{7}}, {"x", 1.5}, {"s", std::string("hi")}, {"l", Ints{4, 5}}};
  EXPECT_EQ(attrs.get_int("n", -1), 7);
  EXPECT_EQ(attrs.get_int("x", -1), -1);
  EXPECT_EQ(attrs.get_float("x", 0.0), 1.5);
  EXPECT_EQ(attrs.get_float("n", 0.0), 7.0);
  EXPECT_EQ(attrs.get_float("s", 2.5), 2.5);
  EXPECT_EQ(attrs.get_string("s", "none"), "hi");
  EXPECT_EQ(attrs.get_string("n", "none"), "none");
  EXPECT_EQ(attrs.get_ints("l", {}), (Ints{4, 5}));
  EXPECT_EQ(attrs.get_ints("missing", {9}), (Ints{9}));
}

TEST(Attrs, EqualityIgnoresInsertionOrder) {
  Attrs a{{"a", std::int64_t{1}}, {"b", 2.0}};
  Attrs b{{"b", 2.0}, {"a", std::int64_t{1}}};
  EXPECT_EQ(a, b);
  b.set("a", 1.0);  // same number, other type
  EXPECT_NE(a, b);
}

TEST(Attrs, ToStringIsStableAndTyped) {
  Attrs attrs{{"stride", std::int64_t{2}},
              {"padding", Ints{1, 1}},
              {"scale", 1.0},
              {"eps", 1e-5},
              {"third", 0.1},
              {"big", 1e300},
              {"mode", std::string("say \"hi\"\n")},
              {"empty", Ints{}},
              {"neg", std::int64_t{-4}}};
  EXPECT_EQ(attrs.to_string(),
            "big=1e+300, empty=[], eps=1e-05, mode=\"say \\\"hi\\\"\\n\", neg=-4, padding=[1,1], "
            "scale=1.0, stride=2, third=0.1");
  EXPECT_EQ(Attrs{}.to_string(), "");
}

TEST(Attrs, ToStringTellsIntsFromFloats) {
  EXPECT_NE(Attrs({{"k", std::int64_t{1}}}).to_string(), Attrs({{"k", 1.0}}).to_string());
  EXPECT_EQ(Attrs({{"k", std::numeric_limits<double>::infinity()}}).to_string(), "k=inf");
}

}  // namespace
}  // namespace cleave::ir
