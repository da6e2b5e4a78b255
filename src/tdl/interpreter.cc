#include "tdl/interpreter.h"

#include <array>
#include <cmath>
#include <optional>

#include "support/assert.h"

namespace cleave::tdl {

TensorData TensorData::zeros(ir::Shape shape, Box region) {
  TensorData t{std::move(shape), std::move(region), {}};
  t.values.assign(static_cast<std::size_t>(box_volume(t.region)), 0.0);
  return t;
}

TensorData TensorData::whole(ir::Shape shape, std::vector<double> values) {
  Box region = whole_box(shape);
  CLEAVE_ASSERT(static_cast<std::int64_t>(values.size()) == box_volume(region),
                "values do not match the shape");
  return TensorData{std::move(shape), std::move(region), std::move(values)};
}

std::size_t TensorData::offset(std::span<std::int64_t const> coords) const {
  std::size_t off = 0;
  for (std::size_t d = 0; d < region.size(); ++d)
    off = off * static_cast<std::size_t>(region[d].size()) +
          static_cast<std::size_t>(coords[d] - region[d].lo);
  return off;
}

namespace {

constexpr std::size_t max_rank = 12;

bool inside(std::span<std::int64_t const> coords, Box const& box) {
  for (std::size_t d = 0; d < box.size(); ++d)
    if (coords[d] < box[d].lo || coords[d] >= box[d].hi) return false;
  return true;
}

// Calls f(coords) for every point of box in row-major order.
template <typename F> void for_each_point(Box const& box, F&& f) {
  std::array<std::int64_t, max_rank> c{};
  for (std::size_t d = 0; d < box.size(); ++d) {
    if (box[d].empty()) return;
    c[d] = box[d].lo;
  }
  while (true) {
    f(std::span<std::int64_t const>(c.data(), box.size()));
    std::size_t d = box.size();
    while (d > 0) {
      --d;
      if (++c[d] < box[d].hi) break;
      c[d] = box[d].lo;
      if (d == 0) return;
    }
    if (box.empty()) return;
  }
}

class Interpreter {
 public:
  Interpreter(BoundOp const& op, std::span<TensorData const> inputs, EvalOptions options)
      : op_(op), inputs_(inputs), options_(options),
        env_(static_cast<std::size_t>(op.num_slots())) {}

  Expected<TensorData> run(Box const& iter_box) {
    if (op_.opaque())
      return Error(ErrorCode::unsupported,
                   "'" + op_.text() +
                       "' is opaque: TDL gives its reads but not its "
                       "values, so the reference interpreter cannot run it");
    if (inputs_.size() != op_.inputs().size())
      return Error(ErrorCode::invalid_argument, "evaluate got " + std::to_string(inputs_.size()) +
                                                    " inputs, the op has " +
                                                    std::to_string(op_.inputs().size()));
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      auto const& want = op_.inputs()[i].type.shape;
      if (inputs_[i].shape != want || inputs_[i].region.size() != want.size() ||
          static_cast<std::int64_t>(inputs_[i].values.size()) != box_volume(inputs_[i].region))
        return Error(ErrorCode::shape_mismatch,
                     "input '" + op_.inputs()[i].name + "' is given as a buffer of a " +
                         ir::shape_to_string(inputs_[i].shape) + " tensor, the op reads " +
                         ir::shape_to_string(want));
    }
    CLEAVE_TRY(PieceInfo info, analyze_piece(op_, iter_box));
    if (!info.output_exact)
      return Error(ErrorCode::invalid_argument,
                   "piece " + box_to_string(iter_box) + " writes a non-rectangular output region");
    TensorData out = TensorData::zeros(op_.output_type().shape, info.output);

    int np = op_.num_parallel();
    Box parallel(iter_box.begin(), iter_box.begin() + np);
    Box reduction(iter_box.begin() + np, iter_box.end());
    std::array<std::int64_t, max_rank> coords{};
    for_each_point(parallel, [&](std::span<std::int64_t const> p) {
      if (error_) return;
      for (int s = 0; s < np; ++s)
        env_[s] = p[s];
      double value;
      if (op_.reducer() == Reducer::none) {
        value = eval(op_.body());
      } else {
        value = reducer_identity(op_.reducer());
        for_each_point(reduction, [&](std::span<std::int64_t const> r) {
          for (std::size_t k = 0; k < r.size(); ++k)
            env_[np + k] = r[k];
          value = round(reduce_values(op_.reducer(), value, eval(op_.body())));
        });
      }
      for (std::size_t d = 0; d < op_.output_indices().size(); ++d)
        coords[d] = eval_index(op_.output_indices()[d]);
      out.values[out.offset({coords.data(), op_.output_indices().size()})] = value;
    });
    if (error_) return std::move(*error_);
    return out;
  }

 private:
  double round(double v) const {
    return options_.fp64 ? v : static_cast<double>(static_cast<float>(v));
  }

  void fail(Error e) {
    if (!error_) error_ = std::move(e);
  }

  std::int64_t eval_index(BoundIndex const& b) {
    switch (b.kind) {
    case BoundIndex::Kind::linear: {
      std::int64_t v = b.constant;
      for (auto [slot, coef] : b.var_terms)
        v += coef * env_[slot];
      for (std::size_t c = 0; c < b.children.size(); ++c)
        v += b.child_coefs[c] * eval_index(b.children[c]);
      return v;
    }
    case BoundIndex::Kind::floordiv:
    case BoundIndex::Kind::mod: {
      std::int64_t a = eval_index(b.children[0]);
      std::int64_t q = a / b.divisor;
      if (a % b.divisor != 0 && a < 0) --q;
      return b.kind == BoundIndex::Kind::floordiv ? q : a - q * b.divisor;
    }
    case BoundIndex::Kind::gather: {
      double v = read(b.input, b.children);
      return static_cast<std::int64_t>(v);
    }
    }
    return 0;
  }

  double read(int input, std::vector<BoundIndex> const& indices) {
    std::array<std::int64_t, max_rank> c{};
    auto const& data = inputs_[static_cast<std::size_t>(input)];
    std::size_t rank = indices.size();
    for (std::size_t d = 0; d < rank; ++d)
      c[d] = eval_index(indices[d]);
    std::span<std::int64_t const> coords(c.data(), rank);
    for (std::size_t d = 0; d < rank; ++d)
      if (coords[d] < 0 || coords[d] >= data.shape[d]) return op_.inputs()[input].pad_value;
    if (!inside(coords, data.region)) {
      std::string at;
      for (std::size_t d = 0; d < rank; ++d)
        at += (d ? "," : "") + std::to_string(coords[d]);
      fail(Error(ErrorCode::invalid_argument, "the piece reads " + op_.inputs()[input].name + "[" +
                                                  at + "], outside the region it was given " +
                                                  box_to_string(data.region)));
      return 0;
    }
    return data.values[data.offset(coords)];
  }

  double call(std::string const& f, std::vector<BoundExpr> const& args) {
    double a = eval(args[0]);
    if (f == "exp") return std::exp(a);
    if (f == "log") return std::log(a);
    if (f == "sqrt") return std::sqrt(a);
    if (f == "rsqrt") return 1.0 / std::sqrt(a);
    if (f == "tanh") return std::tanh(a);
    if (f == "sigmoid") return 1.0 / (1.0 + std::exp(-a));
    if (f == "relu") return a > 0 ? a : 0.0;
    if (f == "erf") return std::erf(a);
    if (f == "abs") return std::abs(a);
    if (f == "select") return a != 0 ? eval(args[1]) : eval(args[2]);
    double b = eval(args[1]);
    if (f == "max") return std::max(a, b);
    if (f == "min") return std::min(a, b);
    return std::pow(a, b);  // pow: bind admits no other function
  }

  double eval(BoundExpr const& e) {
    switch (e.kind) {
    case BoundExpr::Kind::constant:
      return e.value;
    case BoundExpr::Kind::var:
      return static_cast<double>(env_[e.slot]);
    case BoundExpr::Kind::access:
      return read(e.input, e.indices);
    case BoundExpr::Kind::neg:
      return -eval(e.args[0]);
    case BoundExpr::Kind::call:
      return round(call(e.op, e.args));
    case BoundExpr::Kind::binary: {
      double a = eval(e.args[0]);
      double b = eval(e.args[1]);
      char c0 = e.op[0];
      bool two = e.op.size() == 2;
      switch (c0) {
      case '+':
        return round(a + b);
      case '-':
        return round(a - b);
      case '*':
        return round(a * b);
      case '/':
        return round(a / b);
      case '%': {  // floored, like index modulo: the result has the sign of b
        double r = std::fmod(a, b);
        return round(r != 0 && (r < 0) != (b < 0) ? r + b : r);
      }
      case '<':
        return two ? (a <= b) : (a < b);
      case '>':
        return two ? (a >= b) : (a > b);
      case '=':
        return a == b;
      case '!':
        return a != b;
      default:
        return 0;
      }
    }
    case BoundExpr::Kind::reduce: {
      Box inner;
      for (int s : e.slots)
        inner.push_back({0, op_.slot_extent(s)});
      double acc = reducer_identity(e.reducer);
      for_each_point(inner, [&](std::span<std::int64_t const> p) {
        for (std::size_t k = 0; k < p.size(); ++k)
          env_[e.slots[k]] = p[k];
        acc = round(reduce_values(e.reducer, acc, eval(e.args[0])));
      });
      return acc;
    }
    }
    return 0;
  }

  BoundOp const& op_;
  std::span<TensorData const> inputs_;
  EvalOptions options_;
  std::vector<std::int64_t> env_;
  std::optional<Error> error_;
};

}  // namespace

Expected<TensorData> evaluate(BoundOp const& op, Box const& iter_box,
                              std::span<TensorData const> inputs, EvalOptions options) {
  return Interpreter(op, inputs, options).run(iter_box);
}

TensorData extract(TensorData const& src, Box const& region) {
  TensorData out = TensorData::zeros(src.shape, region);
  for_each_point(region, [&](std::span<std::int64_t const> c) {
    out.values[out.offset(c)] = src.values[src.offset(c)];
  });
  return out;
}

void write_region(TensorData& dst, TensorData const& src) {
  for_each_point(src.region, [&](std::span<std::int64_t const> c) {
    dst.values[dst.offset(c)] = src.values[src.offset(c)];
  });
}

void reduce_into(TensorData& dst, TensorData const& src, Reducer r) {
  for_each_point(src.region, [&](std::span<std::int64_t const> c) {
    double& d = dst.values[dst.offset(c)];
    d = reduce_values(r, d, src.values[src.offset(c)]);
  });
}

}  // namespace cleave::tdl
