#include <fcntl.h>
#include <pty.h>
#include <unistd.h>

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

// A pseudo-terminal: what is written to `out` (its terminal side) is read from `master`.
struct Pty {
  int master = -1;
  std::FILE* out = nullptr;
  Pty() {
    int slave = -1;
    if (openpty(&master, &slave, nullptr, nullptr, nullptr) != 0) return;
    out = fdopen(slave, "w");
    fcntl(master, F_SETFL, O_NONBLOCK);
  }
  ~Pty() {
    if (out) std::fclose(out);
    if (master >= 0) close(master);
  }
  std::string read_all() {
    std::fflush(out);
    std::string text;
    char buf[256];
    for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;)
      text.append(buf, static_cast<std::size_t>(n));
    return text;
  }
};

TEST(WorkProgressLine, CountsOnATerminalAndClearsWhenItGoes) {
  Pty pty;
  ASSERT_NE(pty.out, nullptr);
  {
    WorkProgressLine line(pty.out, "importing m.onnx", Seconds(0));
    auto report = line.callback();
    ASSERT_TRUE(report);
    report({"converting nodes", 3, 10});
    std::string shown = pty.read_all();
    EXPECT_EQ(shown.rfind("\r\033[Kimporting m.onnx: converting nodes 3 of 10, ", 0), 0u) << shown;
    EXPECT_TRUE(shown.ends_with(" s elapsed")) << shown;
  }
  EXPECT_EQ(pty.read_all(), "\r\033[K");
}

TEST(WorkProgressLine, NothingWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    WorkProgressLine line(f, "reading g.json", Seconds(0));
    EXPECT_FALSE(line.callback());
  }
  EXPECT_EQ(contents(f), "");
  std::fclose(f);
  WorkProgressLine none(nullptr, "reading g.json");
  EXPECT_FALSE(none.callback());
}

}  // namespace
}  // namespace cleave
