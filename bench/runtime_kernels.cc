// cleave's oneDNN kernels through the runtime's interface (KernelRegistry::find + Kernel::run on
// a KernelCall) against bare oneDNN primitives on the same shapes: the same primitive on plain
// layouts (what the kernels use: cleave's overhead is the lookup, the cache and the memory
// wrappers), and for convolutions also oneDNN's preferred blocked layouts with the data already
// in them (reorders not timed: the best case a framework that keeps blocked tensors could reach).
// Prints a Markdown table of medians; bench/run.sh writes it to bench/results/runtime_kernels.md.
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <unordered_map>

#include "bench_util.h"
#include "runtime/whole_op.h"

namespace cleave::bench {
namespace {

using Tag = dnnl::memory::format_tag;
using DT = dnnl::memory::data_type;

int reps = 10;

using Run = std::function<void()>;

// Medians in ms of each run, timed in turns (a, b, c, a, b, c, ...) so that the load of a shared
// machine drifts over all of them alike. Seven warm-up calls each: primitive creation, first touch,
// and the conv kernel's timed choice of layouts (its first six calls).
std::vector<double> median_ms(std::vector<Run> const& runs) {
  for (auto const& r : runs)
    for (int w = 0; w < 7; ++w)
      r();
  std::vector<std::vector<double>> t(runs.size());
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t i = 0; i < runs.size(); ++i) {
      auto t0 = Clock::now();
      runs[i]();
      t[i].push_back(seconds_since(t0) * 1e3);
    }
  std::vector<double> out;
  for (auto& v : t)
    out.push_back(median(v));
  return out;
}

std::vector<float> random_floats(std::size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (auto& x : v)
    x = u(rng);
  return v;
}

// One whole op through cleave's kernels, the registry's lookup included.
Run cleave_run(runtime::KernelRegistry const& kernels, runtime::WholeOp& op) {
  return [&kernels, &op] {
    auto const* k = kernels.find(op.piece->call);
    Status s = k->run(op.piece->call);
    if (!s.is_ok()) die(s.error());
  };
}

struct Bare {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};

  dnnl::memory mem(dnnl::memory::desc const& d, std::mt19937& rng) {
    dnnl::memory m(d, engine);
    auto v = random_floats(d.get_size() / sizeof(float), rng);
    std::memcpy(m.get_data_handle(), v.data(), d.get_size());
    return m;
  }

  Run run(dnnl::primitive const& p, std::unordered_map<int, dnnl::memory> const& args) {
    return [this, p, args] {
      p.execute(stream, args);
      stream.wait();
    };
  }

  Run matmul(std::int64_t m, std::int64_t k, std::int64_t n, bool transpose_a) {
    std::mt19937 rng(2);
    dnnl::memory::desc a({m, k}, DT::f32, transpose_a ? Tag::ba : Tag::ab);
    dnnl::memory::desc b({k, n}, DT::f32, Tag::ab), y({m, n}, DT::f32, Tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, y), engine);
    return run(dnnl::matmul(pd), {{DNNL_ARG_SRC, mem(a, rng)},
                                  {DNNL_ARG_WEIGHTS, mem(b, rng)},
                                  {DNNL_ARG_DST, mem(y, rng)}});
  }

  // kind: 0 forward, 1 backward data, 2 backward weights; blocked: format any.
  Run conv(int kind, std::int64_t n, std::int64_t c, std::int64_t hw, std::int64_t co,
           bool blocked) {
    std::mt19937 rng(3);
    Tag act = blocked ? Tag::any : Tag::nchw, wt = blocked ? Tag::any : Tag::oihw;
    dnnl::memory::desc x({n, c, hw, hw}, DT::f32, act), w({co, c, 3, 3}, DT::f32, wt),
        y({n, co, hw, hw}, DT::f32, act);
    dnnl::memory::dims s = {1, 1}, d = {0, 0}, p = {1, 1};
    auto algo = dnnl::algorithm::convolution_direct;
    dnnl::convolution_forward::primitive_desc fwd(
        dnnl::convolution_forward::desc(kind == 0 ? dnnl::prop_kind::forward_inference
                                                  : dnnl::prop_kind::forward_training,
                                        algo, x, w, y, s, d, p, p),
        engine);
    if (kind == 0)
      return run(dnnl::convolution_forward(fwd), {{DNNL_ARG_SRC, mem(fwd.src_desc(), rng)},
                                                  {DNNL_ARG_WEIGHTS, mem(fwd.weights_desc(), rng)},
                                                  {DNNL_ARG_DST, mem(fwd.dst_desc(), rng)}});
    if (kind == 1) {
      dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(algo, x, w, y, s, d, p, p), engine, fwd);
      return run(dnnl::convolution_backward_data(pd),
                 {{DNNL_ARG_DIFF_SRC, mem(pd.diff_src_desc(), rng)},
                  {DNNL_ARG_WEIGHTS, mem(pd.weights_desc(), rng)},
                  {DNNL_ARG_DIFF_DST, mem(pd.diff_dst_desc(), rng)}});
    }
    dnnl::convolution_backward_weights::primitive_desc pd(
        dnnl::convolution_backward_weights::desc(algo, x, w, y, s, d, p, p), engine, fwd);
    return run(dnnl::convolution_backward_weights(pd),
               {{DNNL_ARG_SRC, mem(pd.src_desc(), rng)},
                {DNNL_ARG_DIFF_WEIGHTS, mem(pd.diff_weights_desc(), rng)},
                {DNNL_ARG_DIFF_DST, mem(pd.diff_dst_desc(), rng)}});
  }
};

void row(char const* op, std::string const& shape, double gflop, std::string const& kernel,
         double cleave, double plain, double best) {
  std::printf("| %s | %s | %s | %.2f | %.2f | %.0f | %.2f | %.2f |", op, shape.c_str(),
              kernel.c_str(), gflop, cleave, gflop / cleave * 1e3, plain, plain / cleave);
  if (best > 0)
    std::printf(" %.2f | %.2f |\n", best, best / cleave);
  else
    std::printf(" - | - |\n");
  std::fflush(stdout);
}

}  // namespace
}  // namespace cleave::bench

int main(int argc, char** argv) {
  using namespace cleave;
  using namespace cleave::bench;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--reps") reps = std::atoi(argv[i + 1]);
  auto registry = ops::OpRegistry::with_builtins();
  auto kernels = runtime::KernelRegistry::with_builtins();
  Bare bare;
  std::printf(
      "OpenMP threads: %d; %d timed runs in turns after 7 warm-up calls, medians in ms.\n\n",
      omp_get_max_threads(), reps);
  std::printf("| op | shape | cleave kernel | GFLOP | cleave ms | cleave GFLOP/s | oneDNN plain ms "
              "| ratio (plain/cleave) | oneDNN blocked ms | ratio (blocked/cleave) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  struct Mm {
    std::int64_t m, k, n;
    bool transpose_a;
  };
  for (Mm c :
       {Mm{1024, 1024, 1024, false}, Mm{512, 1024, 4096, false}, Mm{1024, 4096, 1024, true}}) {
    ir::Attrs a;
    a.set("transpose_a", std::int64_t{c.transpose_a});
    auto op = must(runtime::whole_op(
        *registry, *kernels, "matmul",
        {c.transpose_a ? ir::Shape{c.k, c.m} : ir::Shape{c.m, c.k}, {c.k, c.n}}, a));
    double gflop = 2.0 * static_cast<double>(c.m * c.k * c.n) / 1e9;
    std::string shape = std::to_string(c.m) + "x" + std::to_string(c.k) + " @ " +
                        std::to_string(c.k) + "x" + std::to_string(c.n) +
                        (c.transpose_a ? " (A^T)" : "");
    auto t = median_ms({cleave_run(*kernels, *op), bare.matmul(c.m, c.k, c.n, c.transpose_a)});
    row("matmul", shape, gflop, std::string(op->piece->kernel->name()), t[0], t[1], -1);
  }
  struct Conv {
    std::int64_t n, c, hw;
  };
  char const* names[] = {"conv2d", "conv2d_grad_input", "conv2d_grad_weight"};
  for (Conv c : {Conv{8, 64, 56}, Conv{8, 256, 14}}) {
    double gflop = 2.0 * static_cast<double>(c.n * c.c * c.c * 9 * c.hw * c.hw) / 1e9;
    std::string shape = "N=" + std::to_string(c.n) + " C=" + std::to_string(c.c) +
                        " HW=" + std::to_string(c.hw) + " 3x3 p1";
    for (int kind = 0; kind < 3; ++kind) {
      ir::Attrs a;
      a.set("padding", std::vector<std::int64_t>{1, 1});
      std::vector<ir::Shape> shapes;
      if (kind == 0) {
        shapes = {{c.n, c.c, c.hw, c.hw}, {c.c, c.c, 3, 3}};
      } else if (kind == 1) {
        a.set("input_shape", std::vector<std::int64_t>{c.n, c.c, c.hw, c.hw});
        shapes = {{c.n, c.c, c.hw, c.hw}, {c.c, c.c, 3, 3}};
      } else {
        a.set("kernel", std::vector<std::int64_t>{3, 3});
        shapes = {{c.n, c.c, c.hw, c.hw}, {c.n, c.c, c.hw, c.hw}};
      }
      auto op = must(runtime::whole_op(*registry, *kernels, names[kind], shapes, a));
      auto t = median_ms({cleave_run(*kernels, *op), bare.conv(kind, c.n, c.c, c.hw, c.c, false),
                          bare.conv(kind, c.n, c.c, c.hw, c.c, true)});
      row(names[kind], shape, gflop, std::string(op->piece->kernel->name()), t[0], t[1], t[2]);
    }
  }
  return 0;
}
