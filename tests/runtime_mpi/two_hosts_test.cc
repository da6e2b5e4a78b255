// MPI across two machines (issue 19 item 4), as near as one machine gets: two network namespaces
// joined by a veth pair, each with its own address and no other route. mpirun runs in the first
// and starts its daemon in the second through an rsh agent that wraps `ip netns exec` where ssh
// would log in; the ranks reach each other only over TCP (`btl tcp,self`). Skipped where the
// test may not create namespaces (it needs CAP_NET_ADMIN and CAP_SYS_ADMIN).
#include <array>
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "runtime_mpi/mpi_util.h"

namespace cleave {
namespace {

using namespace mpi_test;

class TwoHosts : public ::testing::Test {
 protected:
  void SetUp() override {
    auto id = std::to_string(getpid());
    ns_ = {"cleave" + id + "a", "cleave" + id + "b"};
    std::string veth = "cv" + id;
    auto r = shell("ip netns add " + ns_[0] + " && ip netns add " + ns_[1] + " && ip link add " +
                   veth + "a type veth peer name " + veth + "b");
    if (r.code != 0) {
      remove_namespaces();
      GTEST_SKIP() << "no rights to create network namespaces here: " << r.err;
    }
    for (int h = 0; h < 2; ++h) {
      auto dev = veth + (h == 0 ? "a" : "b");
      auto in = "ip -n " + ns_[h] + " ";
      auto setup = shell("ip link set " + dev + " netns " + ns_[h] + " && " + in + "addr add " +
                         address(h) + "/24 dev " + dev + " && " + in + "link set " + dev +
                         " up && " + in + "link set lo up");
      ASSERT_EQ(setup.code, 0) << setup.err;
    }
    write_agent();
  }
  void TearDown() override { remove_namespaces(); }

  static std::string address(int host) { return "10.77.0." + std::to_string(host + 1); }

  // mpirun in the first namespace over both hosts, one rank each, TCP between them.
  Outcome run(std::string const& args) {
    auto hosts = cli_test::write("hosts", address(0) + " slots=1\n" + address(1) + " slots=1\n");
    return mpirun(2, args,
                  "--hostfile " + hosts + " --mca plm_rsh_agent " + agent_ +
                      " --mca oob_tcp_if_include 10.77.0.0/24"
                      " --mca btl_tcp_if_include 10.77.0.0/24 --mca btl tcp,self",
                  "ip netns exec " + ns_[0]);
  }

 private:
  // What mpirun calls as ssh: `agent HOST COMMAND...` runs COMMAND in HOST's namespace.
  void write_agent() {
    agent_ = (cli_test::scratch() / "netns-agent.sh").string();
    std::ofstream f(agent_);
    f << "#!/bin/sh\nhost=$1; shift\ncase \"$host\" in\n"
      << "  " << address(0) << ") ns=" << ns_[0] << " ;;\n"
      << "  " << address(1) << ") ns=" << ns_[1] << " ;;\n"
      << "  *) echo \"netns-agent: unknown host $host\" >&2; exit 1 ;;\nesac\n"
      << "exec ip netns exec \"$ns\" /bin/sh -c \"$*\"\n";
    f.close();
    ASSERT_EQ(shell("chmod +x " + agent_).code, 0);
  }
  void remove_namespaces() {
    for (auto const& n : ns_) shell("ip netns del " + n + " 2>/dev/null");
  }

  std::array<std::string, 2> ns_;
  std::string agent_;
};

TEST_F(TwoHosts, PlansPassTheCheckOverTcp) {
  for (char const* algo : {"data-parallel", "tofu"})
    for (char const* model : {mlp, gpt}) {
      auto plan = plan_file(model, 2, algo);
      auto r = run(plan + " --backend mpi --steps 2 --check --json");
      ASSERT_EQ(r.code, 0) << algo << " " << model << "\n" << r.err;
      auto j = nlohmann::json::parse(r.out);
      EXPECT_TRUE(j["check"]["passed"].get<bool>()) << algo << " " << model;
      EXPECT_EQ(j["backend"], "mpi (2 ranks, 1 device per rank)");
    }
}

TEST_F(TwoHosts, ARankKilledOnTheOtherHostEndsTheJobWithinASecond) {
  auto plan = plan_file(mlp, 2, "tofu");
  auto r = run(plan + " --backend mpi --steps 3 --kill-rank 1");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("process rank 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("on node " + address(1)), std::string::npos) << r.err;
  auto ended_s = static_cast<double>(r.ended_us - fault_time_us(r.err)) * 1e-6;
  std::printf("killed rank on the other host: the job ended %.3f s after the kill\n", ended_s);
  EXPECT_LT(ended_s, 1.0);
}

}  // namespace
}  // namespace cleave
