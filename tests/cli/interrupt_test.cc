// Ctrl-C during `cleave plan` (issue 15, anytime search): the search stops, the best plan found is
// written and printed, and the exit code says it was interrupted. A real process and a real
// SIGINT, sent once the process has its handler installed (read from /proc, no sleep as sync).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <vector>

extern char** environ;

namespace cleave {
namespace {

// Whether process `pid` catches SIGINT (the SigCgt mask of /proc/PID/status).
bool catches_sigint(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("SigCgt:", 0) == 0) {
      unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
      return (mask >> (SIGINT - 1)) & 1;
    }
  return false;
}

TEST(CliInterrupt, CtrlCWritesTheBestPlanFound) {
  auto dir = std::filesystem::temp_directory_path() /
             ("cleave_interrupt_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string plan = (dir / "interrupted.json").string();
  std::string out = (dir / "out").string();
  // A budget the search cannot finish in this test's time, so only the interrupt ends it early.
  std::vector<std::string> args = {CLEAVE_BINARY,
                                   "plan",
                                   "mlp:layers=4,hidden=64,input=32,classes=8,batch=32",
                                   "--cluster",
                                   "cpu:devices=4",
                                   "--algo",
                                   "flexflow",
                                   "--budget-iterations",
                                   "1000000000",
                                   "--budget-seconds",
                                   "120",
                                   "-o",
                                   plan};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, CLEAVE_BINARY, &files, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&files);

  int status = 0;
  while (!catches_sigint(pid) && waitpid(pid, &status, WNOHANG) == 0)
    std::this_thread::yield();
  auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();

  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_LT(took, 60.0) << "the search went on after Ctrl-C";
  std::ifstream in(plan);
  ASSERT_TRUE(in) << "no plan written";
  auto prov = nlohmann::json::parse(in)["provenance"];
  EXPECT_EQ(prov["interrupted"], true);
  EXPECT_EQ(prov["algorithm"], "flexflow");
  std::stringstream printed;
  printed << std::ifstream(out).rdbuf();
  EXPECT_NE(printed.str().find("flexflow"), std::string::npos) << printed.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cleave
