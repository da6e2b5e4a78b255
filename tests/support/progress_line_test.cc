#include <gtest/gtest.h>

#include "support/progress_line.h"

namespace cleave {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  for (int c = std::fgetc(f); c != EOF; c = std::fgetc(f))
    out += static_cast<char>(c);
  return out;
}

TEST(ProgressLine, NoLineWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(ProgressLine::on_terminal(f), nullptr);
  std::fclose(f);
}

TEST(ProgressLine, QuietAtFirstThenRateLimitedAndCleared) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line(f, Seconds(2));
  EXPECT_FALSE(line.due(Seconds(1)));
  line.show(Seconds(1), "early");
  line.show(Seconds(2), "a");
  line.show(Seconds(2.05), "too soon");
  line.show(Seconds(2.2), "b");
  line.clear();
  EXPECT_EQ(contents(f), "\r\033[Ka\r\033[Kb\r\033[K");
  std::fclose(f);
}

}  // namespace
}  // namespace cleave
