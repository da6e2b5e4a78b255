// What the MPI tests share: mpirun as a user starts it (as root, oversubscribed), plan files
// made by the CLI, and when a job ended against when its fault happened.
#pragma once

#include <cstdint>
#include <string>

#include "cli/cli_util.h"

namespace cleave::mpi_test {

// A command's outcome and when it ended.
struct Outcome : cli_test::Outcome {
  std::int64_t ended_us = 0;  // system clock, when the command had exited
};

// Runs a command line, capturing both streams, with the variables mpirun needs here.
Outcome shell(std::string const& command);
// `mpirun MPIRUN_ARGS -np RANKS cleave run ARGS`, optionally prefixed (e.g. `ip netns exec`).
Outcome mpirun(int ranks, std::string const& args, std::string const& mpirun_args = "",
               std::string const& prefix = "");
// A plan file of `model` on cpu:devices=N by `algo`, in the scratch directory.
std::string plan_file(std::string const& model, int devices, std::string const& algo);
// "rank 1 kills itself (SIGKILL) at T us", "rank 1 ends the job at T us": T.
std::int64_t fault_time_us(std::string const& err);

constexpr char const* mlp = "mlp:layers=2,hidden=8,input=6,classes=3,batch=8";
constexpr char const* gpt = "gpt:layers=1,hidden=8,heads=2,seq=4,vocab=7,batch=2";

}  // namespace cleave::mpi_test
