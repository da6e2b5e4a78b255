#include "import/const_tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "import/onnx_attrs.h"

namespace cleave::importer {

namespace {

using Ints = std::vector<std::int64_t>;

Error fold_error(onnx::NodeProto const& n, std::string const& what) {
  return Error(ErrorCode::invalid_argument,
               n.op_type() + " node '" + n.name() + "' on constants: " + what);
}

// A folded value (held as a double) as an int64, saturated: a huge or non-finite index is then out
// of range, not undefined behaviour (found by onnx_import_fuzz).
std::int64_t saturate_to_int(double v) {
  if (!std::isfinite(v)) return v > 0 ? INT64_MAX : INT64_MIN;
  return static_cast<std::int64_t>(std::clamp(v, -9.2e18, 9.2e18));
}

std::int64_t count(Ints const& dims) {
  std::int64_t c = 1;
  for (auto d : dims) {
    if (d < 0 || (d > 0 && c > kMaxConstElements / d)) return -1;
    c *= d;
  }
  return c;
}

float half_to_float(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(static_cast<float>(mant), -24);
  if (exp == 31) return mant ? NAN : (sign ? -INFINITY : INFINITY);
  std::uint32_t bits = sign | ((exp + 112) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

template <typename T> void decode(std::string const& raw, std::vector<double>& out) {
  std::size_t n = raw.size() / sizeof(T);
  out.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(v);
  }
}

// Row-major strides of dims.
Ints strides_of(Ints const& dims) {
  Ints s(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;)
    s[i - 1] = s[i] * dims[i];
  return s;
}

Expected<std::int64_t> norm_axis(onnx::NodeProto const& n, std::int64_t axis, std::size_t rank) {
  auto r = static_cast<std::int64_t>(rank);
  if (axis < -r || axis >= std::max<std::int64_t>(r, 1)) return fold_error(n, "axis out of range");
  return axis < 0 ? axis + r : axis;
}

// NumPy broadcasting of several constants through f.
template <typename F>
Expected<ConstTensor> broadcast(onnx::NodeProto const& n, std::vector<ConstTensor const*> in,
                                Elem elem, F f) {
  std::size_t rank = 0;
  for (auto const* t : in)
    rank = std::max(rank, t->dims.size());
  Ints out(rank, 1);
  for (auto const* t : in)
    for (std::size_t k = 0; k < t->dims.size(); ++k) {
      auto& o = out[rank - t->dims.size() + k];
      auto d = t->dims[k];
      if (d != o && d != 1 && o != 1) return fold_error(n, "shapes do not broadcast");
      if (d != 1) o = d;
    }
  std::int64_t total = count(out);
  if (total < 0) return fold_error(n, "result too large to fold");
  ConstTensor r{out, std::vector<double>(static_cast<std::size_t>(total)), elem};
  auto os = strides_of(out);
  std::vector<double> args(in.size());
  for (std::int64_t i = 0; i < total; ++i) {
    for (std::size_t a = 0; a < in.size(); ++a) {
      auto const& t = *in[a];
      std::int64_t off = 0, stride = 1;
      for (std::size_t k = t.dims.size(); k-- > 0;) {
        std::int64_t coord = (i / os[rank - t.dims.size() + k]) % out[rank - t.dims.size() + k];
        if (t.dims[k] != 1) off += coord * stride;
        stride *= t.dims[k];
      }
      args[a] = t.values[static_cast<std::size_t>(off)];
    }
    r.values[static_cast<std::size_t>(i)] = f(args);
  }
  return r;
}

Expected<ConstTensor> gather(onnx::NodeProto const& n, ConstTensor const& data,
                             ConstTensor const& idx) {
  CLEAVE_TRY(std::int64_t axis, norm_axis(n, attr_int(n, "axis", 0), data.dims.size()));
  if (data.dims.empty()) return fold_error(n, "data is a scalar");
  auto a = static_cast<std::size_t>(axis);
  Ints out(data.dims.begin(), data.dims.begin() + axis);
  out.insert(out.end(), idx.dims.begin(), idx.dims.end());
  out.insert(out.end(), data.dims.begin() + axis + 1, data.dims.end());
  std::int64_t outer = 1, inner = 1;
  for (std::size_t k = 0; k < a; ++k)
    outer *= data.dims[k];
  for (std::size_t k = a + 1; k < data.dims.size(); ++k)
    inner *= data.dims[k];
  ConstTensor r{out, {}, data.elem};
  for (std::int64_t o = 0; o < outer; ++o)
    for (double iv : idx.values) {
      auto i = saturate_to_int(iv);
      if (i < 0) i += data.dims[a];
      if (i < 0 || i >= data.dims[a]) return fold_error(n, "index out of range");
      for (std::int64_t k = 0; k < inner; ++k)
        r.values.push_back(
            data.values[static_cast<std::size_t>((o * data.dims[a] + i) * inner + k)]);
    }
  return r;
}

Expected<ConstTensor> slice(onnx::NodeProto const& n,
                            std::vector<std::optional<ConstTensor>> const& in) {
  auto const& x = *in[0];
  if (!in[1] || !in[2]) return fold_error(n, "starts and ends are required");
  Ints starts = in[1]->ints(), ends = in[2]->ints(), axes, steps;
  if (in.size() > 3 && in[3]) axes = in[3]->ints();
  if (in.size() > 4 && in[4]) steps = in[4]->ints();
  if (axes.empty())
    for (std::size_t k = 0; k < starts.size(); ++k)
      axes.push_back(static_cast<std::int64_t>(k));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return fold_error(n, "starts, ends, axes and steps differ in length");
  std::size_t rank = x.dims.size();
  Ints lo(rank, 0), step(rank, 1), out = x.dims;
  for (std::size_t k = 0; k < starts.size(); ++k) {
    CLEAVE_TRY(std::int64_t a, norm_axis(n, axes[k], rank));
    std::int64_t d = x.dims[static_cast<std::size_t>(a)], s = steps[k];
    if (s == 0) return fold_error(n, "a step of 0");
    std::int64_t b = starts[k] < 0 ? starts[k] + d : starts[k];
    std::int64_t e = ends[k] < 0 ? ends[k] + d : ends[k];
    // ONNX clamps to [0, d] going forwards and to [-1, d-1] going backwards (x[::-1]).
    b = s > 0 ? std::clamp<std::int64_t>(b, 0, d) : std::clamp<std::int64_t>(b, 0, d - 1);
    e = s > 0 ? std::clamp<std::int64_t>(e, 0, d) : std::clamp<std::int64_t>(e, -1, d - 1);
    lo[static_cast<std::size_t>(a)] = b;
    step[static_cast<std::size_t>(a)] = s;
    std::int64_t len = s > 0 ? e - b : b - e, abs_step = s > 0 ? s : -s;
    out[static_cast<std::size_t>(a)] = len > 0 ? (len + abs_step - 1) / abs_step : 0;
  }
  ConstTensor r{out, {}, x.elem};
  std::int64_t total = count(out);
  auto xs = strides_of(x.dims), os = strides_of(out);
  for (std::int64_t i = 0; i < total; ++i) {
    std::int64_t off = 0;
    for (std::size_t k = 0; k < rank; ++k)
      off += (lo[k] + ((i / os[k]) % out[k]) * step[k]) * xs[k];
    r.values.push_back(x.values[static_cast<std::size_t>(off)]);
  }
  return r;
}

Expected<ConstTensor> transpose(onnx::NodeProto const& n, ConstTensor const& x) {
  std::size_t rank = x.dims.size();
  Ints perm(rank);
  for (std::size_t k = 0; k < rank; ++k)
    perm[k] = static_cast<std::int64_t>(rank - 1 - k);
  if (auto p = attr_ints(n, "perm")) perm = *p;
  if (perm.size() != rank) return fold_error(n, "perm does not match the rank");
  Ints out(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    if (perm[k] < 0 || perm[k] >= static_cast<std::int64_t>(rank)) return fold_error(n, "bad perm");
    out[k] = x.dims[static_cast<std::size_t>(perm[k])];
  }
  auto xs = strides_of(x.dims), os = strides_of(out);
  ConstTensor r{out, std::vector<double>(x.values.size()), x.elem};
  for (std::int64_t i = 0; i < x.size(); ++i) {
    std::int64_t off = 0;
    for (std::size_t k = 0; k < rank; ++k)
      off += ((i / os[k]) % out[k]) * xs[static_cast<std::size_t>(perm[k])];
    r.values[static_cast<std::size_t>(i)] = x.values[static_cast<std::size_t>(off)];
  }
  return r;
}

// ScatterND without reduction: data with the slices that indices [..., k] address replaced by
// updates (the attention masks of shifted windows are built this way).
Expected<ConstTensor> scatter_nd(onnx::NodeProto const& n, ConstTensor const& data,
                                 ConstTensor const& idx, ConstTensor const& updates) {
  if (attr_string(n, "reduction", "none") != "none")
    return fold_error(n, "only reduction=none is folded");
  if (idx.dims.empty() || static_cast<std::size_t>(idx.dims.back()) > data.dims.size())
    return fold_error(n, "indices do not fit data");
  auto k = static_cast<std::size_t>(idx.dims.back());
  std::int64_t slice = 1;
  for (std::size_t d = k; d < data.dims.size(); ++d)
    slice *= data.dims[d];
  std::int64_t slices = k ? idx.size() / static_cast<std::int64_t>(k) : 1;
  if (updates.size() != slices * slice) return fold_error(n, "updates do not match indices");
  auto strides = strides_of(data.dims);
  ConstTensor r = data;
  for (std::int64_t s = 0; s < slices; ++s) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < k; ++d) {
      auto i = saturate_to_int(idx.values[static_cast<std::size_t>(s) * k + d]);
      if (i < 0) i += data.dims[d];
      if (i < 0 || i >= data.dims[d]) return fold_error(n, "index out of range");
      off += i * strides[d];
    }
    std::copy_n(updates.values.begin() + s * slice, slice, r.values.begin() + off);
  }
  return r;
}

// Trilu: the lower (upper=0) or upper triangle of the last two dimensions from diagonal k (the
// causal masks of torch.tril / torch.triu).
Expected<ConstTensor> trilu(onnx::NodeProto const& n, ConstTensor const& x, std::int64_t k) {
  if (x.dims.size() < 2) return fold_error(n, "input must have rank 2 or more");
  bool upper = attr_int(n, "upper", 1) != 0;
  std::int64_t rows = x.dims[x.dims.size() - 2], cols = x.dims.back();
  ConstTensor r = x;
  for (std::int64_t i = 0; i < r.size(); ++i) {
    std::int64_t row = (i / cols) % rows, col = i % cols;
    bool keep = upper ? col - row >= k : col - row <= k;
    if (!keep) r.values[static_cast<std::size_t>(i)] = 0;
  }
  return r;
}

std::optional<double> binary(std::string const& op, double a, double b, bool integer) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return integer ? (b == 0 ? 0.0 : std::trunc(a / b)) : a / b;
  if (op == "Pow") return std::pow(a, b);
  if (op == "Equal") return a == b ? 1.0 : 0.0;
  if (op == "Less") return a < b ? 1.0 : 0.0;
  if (op == "Greater") return a > b ? 1.0 : 0.0;
  if (op == "LessOrEqual") return a <= b ? 1.0 : 0.0;
  if (op == "GreaterOrEqual") return a >= b ? 1.0 : 0.0;
  if (op == "And") return (a != 0 && b != 0) ? 1.0 : 0.0;
  if (op == "Or") return (a != 0 || b != 0) ? 1.0 : 0.0;
  if (op == "Max") return std::max(a, b);
  if (op == "Min") return std::min(a, b);
  return std::nullopt;
}

std::optional<double> unary(std::string const& op, double a) {
  if (op == "Neg") return -a;
  if (op == "Not") return a == 0 ? 1.0 : 0.0;
  if (op == "Sqrt") return std::sqrt(a);
  if (op == "Abs") return std::fabs(a);
  if (op == "Exp") return std::exp(a);
  if (op == "Reciprocal") return 1.0 / a;
  if (op == "Floor") return std::floor(a);
  if (op == "Ceil") return std::ceil(a);
  return std::nullopt;
}

Expected<ConstTensor> reshaped(onnx::NodeProto const& n, ConstTensor x, Ints want) {
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t k = 0; k < want.size(); ++k) {
    if (want[k] == 0 && k < x.dims.size()) want[k] = x.dims[k];
    if (want[k] == -1) {
      if (infer >= 0) return fold_error(n, "two -1 in shape");
      infer = static_cast<int>(k);
    } else if (want[k] < 0) {
      return fold_error(n, "negative dimension");
    } else {
      known *= want[k];
    }
  }
  if (infer >= 0) want[static_cast<std::size_t>(infer)] = known ? x.size() / known : 0;
  if (count(want) != x.size()) return fold_error(n, "element count changes");
  x.dims = std::move(want);
  return x;
}

}  // namespace

std::vector<std::int64_t> ConstTensor::ints() const {
  std::vector<std::int64_t> r;
  r.reserve(values.size());
  for (double v : values)
    r.push_back(saturate_to_int(v));
  return r;
}

std::optional<Elem> elem_of(int t) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
  case onnx::TensorProto::DOUBLE:
  case onnx::TensorProto::FLOAT16:
  case onnx::TensorProto::BFLOAT16:
    return Elem::floating;
  case onnx::TensorProto::BOOL:
    return Elem::boolean;
  case onnx::TensorProto::INT8:
  case onnx::TensorProto::UINT8:
  case onnx::TensorProto::INT16:
  case onnx::TensorProto::UINT16:
  case onnx::TensorProto::INT32:
  case onnx::TensorProto::UINT32:
  case onnx::TensorProto::INT64:
  case onnx::TensorProto::UINT64:
    return Elem::integer;
  default:
    return std::nullopt;
  }
}

Expected<ConstTensor> read_tensor(onnx::TensorProto const& t) {
  auto fail = [&](std::string const& what) {
    return Error(ErrorCode::unsupported, "tensor '" + t.name() + "': " + what);
  };
  auto elem = elem_of(t.data_type());
  if (!elem) return fail("element type " + std::to_string(t.data_type()) + " is not supported");
  if (t.data_location() == onnx::TensorProto::EXTERNAL)
    return fail("its values are in an external file; cleave reads only the shapes of external "
                "weights, not constants it must fold");
  ConstTensor r{Ints(t.dims().begin(), t.dims().end()), {}, *elem};
  std::int64_t total = count(r.dims);
  if (total < 0) return fail("too large to fold, or a negative dimension");
  auto const& raw = t.raw_data();
  if (!raw.empty()) {
    switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      decode<float>(raw, r.values);
      break;
    case onnx::TensorProto::DOUBLE:
      decode<double>(raw, r.values);
      break;
    case onnx::TensorProto::INT64:
      decode<std::int64_t>(raw, r.values);
      break;
    case onnx::TensorProto::INT32:
      decode<std::int32_t>(raw, r.values);
      break;
    case onnx::TensorProto::UINT64:
      decode<std::uint64_t>(raw, r.values);
      break;
    case onnx::TensorProto::UINT32:
      decode<std::uint32_t>(raw, r.values);
      break;
    case onnx::TensorProto::INT16:
      decode<std::int16_t>(raw, r.values);
      break;
    case onnx::TensorProto::UINT16:
      decode<std::uint16_t>(raw, r.values);
      break;
    case onnx::TensorProto::INT8:
      decode<std::int8_t>(raw, r.values);
      break;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      decode<std::uint8_t>(raw, r.values);
      break;
    case onnx::TensorProto::FLOAT16: {
      std::vector<double> bits;
      decode<std::uint16_t>(raw, bits);
      for (double b : bits)
        r.values.push_back(half_to_float(static_cast<std::uint16_t>(b)));
      break;
    }
    default:
      return fail("raw data of this element type is not read");
    }
  } else if (t.float_data_size()) {
    r.values.assign(t.float_data().begin(), t.float_data().end());
  } else if (t.int64_data_size()) {
    r.values.assign(t.int64_data().begin(), t.int64_data().end());
  } else if (t.int32_data_size()) {
    r.values.assign(t.int32_data().begin(), t.int32_data().end());
  } else if (t.double_data_size()) {
    r.values.assign(t.double_data().begin(), t.double_data().end());
  } else if (t.uint64_data_size()) {
    r.values.assign(t.uint64_data().begin(), t.uint64_data().end());
  }
  if (r.size() != total)
    return fail("holds " + std::to_string(r.size()) + " values but its shape needs " +
                std::to_string(total));
  return r;
}

std::optional<Expected<std::vector<ConstTensor>>>
fold_node(onnx::NodeProto const& n, std::vector<std::optional<ConstTensor>> const& in) {
  using Out = Expected<std::vector<ConstTensor>>;
  auto one = [](Expected<ConstTensor> r) -> Out {
    if (!r) return std::move(r).error();
    return std::vector<ConstTensor>{std::move(*r)};
  };
  std::string const& op = n.op_type();
  auto need = [&](std::size_t k) { return in.size() >= k && in[0]; };
  if (!need(1)) return std::nullopt;
  ConstTensor const& x = *in[0];
  if (op == "Identity") return one(x);
  if (op == "Cast") {
    auto e = elem_of(static_cast<int>(attr_int(n, "to", 1)));
    if (!e) return std::nullopt;
    ConstTensor r = x;
    r.elem = *e;
    for (auto& v : r.values)
      v = *e == Elem::boolean ? (v != 0) : *e == Elem::integer ? std::trunc(v) : v;
    return one(r);
  }
  if (auto u = unary(op, 0.0); u && in.size() == 1) {
    ConstTensor r = x;
    for (auto& v : r.values)
      v = *unary(op, v);
    return one(r);
  }
  if (op == "Mod" && in.size() == 2 && in[1]) {
    // fmod=1: the sign of the dividend (C's fmod); fmod=0: of the divisor (Python's %).
    bool c_style = attr_int(n, "fmod", 0) != 0;
    return one(broadcast(n, {&x, &*in[1]}, x.elem, [c_style](std::vector<double> const& a) {
      if (a[1] == 0) return 0.0;
      return c_style ? std::fmod(a[0], a[1]) : a[0] - a[1] * std::floor(a[0] / a[1]);
    }));
  }
  if (op == "ScatterND" && in.size() == 3 && in[1] && in[2])
    return one(scatter_nd(n, x, *in[1], *in[2]));
  if (op == "Trilu")
    return one(trilu(n, x, in.size() > 1 && in[1] && in[1]->size() == 1 ? in[1]->ints()[0] : 0));
  if (in.size() == 2 && in[1] && binary(op, 1, 1, false)) {
    bool integer = x.elem == Elem::integer;
    bool compare = op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" ||
                   op == "GreaterOrEqual" || op == "And" || op == "Or";
    return one(
        broadcast(n, {&x, &*in[1]}, compare ? Elem::boolean : x.elem,
                  [&](std::vector<double> const& a) { return *binary(op, a[0], a[1], integer); }));
  }
  if (op == "Where" && in.size() == 3 && in[1] && in[2])
    return one(broadcast(n, {&x, &*in[1], &*in[2]}, in[1]->elem,
                         [](std::vector<double> const& a) { return a[0] != 0 ? a[1] : a[2]; }));
  if (op == "Gather" && in.size() == 2 && in[1]) return one(gather(n, x, *in[1]));
  if (op == "Slice" && in.size() >= 3) return one(slice(n, in));
  if (op == "Transpose") return one(transpose(n, x));
  if (op == "Reshape" && in.size() == 2 && in[1]) return one(reshaped(n, x, in[1]->ints()));
  if (op == "Flatten") {
    CLEAVE_TRY(std::int64_t axis, norm_axis(n, attr_int(n, "axis", 1), x.dims.size() + 1));
    std::int64_t outer = 1;
    for (std::int64_t k = 0; k < axis; ++k)
      outer *= x.dims[static_cast<std::size_t>(k)];
    return one(reshaped(n, x, {outer, -1}));
  }
  if (op == "Unsqueeze" || op == "Squeeze") {
    Ints axes;
    if (in.size() > 1 && in[1]) axes = in[1]->ints();
    ConstTensor r = x;
    if (op == "Unsqueeze") {
      std::size_t rank = x.dims.size() + axes.size();
      std::vector<bool> ins(rank, false);
      for (auto a : axes) {
        CLEAVE_TRY(std::int64_t k, norm_axis(n, a, rank));
        ins[static_cast<std::size_t>(k)] = true;
      }
      r.dims.clear();
      std::size_t src = 0;
      for (std::size_t k = 0; k < rank; ++k)
        r.dims.push_back(ins[k] ? 1 : (src < x.dims.size() ? x.dims[src++] : 1));
    } else {
      std::vector<bool> drop(x.dims.size(), axes.empty());
      for (auto a : axes) {
        CLEAVE_TRY(std::int64_t k, norm_axis(n, a, x.dims.size()));
        drop[static_cast<std::size_t>(k)] = true;
      }
      r.dims.clear();
      for (std::size_t k = 0; k < x.dims.size(); ++k)
        if (!drop[k] || x.dims[k] != 1) r.dims.push_back(x.dims[k]);
    }
    return one(r);
  }
  if (op == "Concat") {
    if (x.dims.empty()) return Out(fold_error(n, "cannot concatenate scalars"));
    CLEAVE_TRY(std::int64_t axis, norm_axis(n, attr_int(n, "axis", 0), x.dims.size()));
    auto a = static_cast<std::size_t>(axis);
    ConstTensor r = x;
    r.dims[a] = 0;
    std::int64_t outer = 1;
    for (std::size_t k = 0; k < a; ++k)
      outer *= x.dims[k];
    for (auto const& t : in) {
      if (!t) return std::nullopt;
      if (t->dims.size() != x.dims.size()) return Out(fold_error(n, "ranks differ"));
      for (std::size_t k = 0; k < x.dims.size(); ++k)
        if (k != a && t->dims[k] != x.dims[k])
          return Out(fold_error(n, "inputs differ outside the axis"));
      r.dims[a] += t->dims[a];
    }
    r.values.clear();
    for (std::int64_t o = 0; o < outer; ++o)
      for (auto const& t : in) {
        std::int64_t chunk = outer ? t->size() / outer : 0;
        auto begin = t->values.begin() + o * chunk;
        r.values.insert(r.values.end(), begin, begin + chunk);
      }
    return one(r);
  }
  if (op == "ConstantOfShape") {
    Ints dims = x.ints();
    std::int64_t total = count(dims);
    if (total < 0) return Out(fold_error(n, "shape too large to fold"));
    double value = 0;
    Elem elem = Elem::floating;
    if (auto const* a = find_attr(n, "value")) {
      auto v = read_tensor(a->t());
      if (!v) return Out(std::move(v).error());
      if (v->size() != 1) return Out(fold_error(n, "value must hold one element"));
      value = v->values[0];
      elem = v->elem;
    }
    return one(
        ConstTensor{dims, std::vector<double>(static_cast<std::size_t>(total), value), elem});
  }
  if (op == "Expand" && in.size() == 2 && in[1]) {
    Ints dims = in[1]->ints();
    if (count(dims) < 0) return Out(fold_error(n, "shape too large to fold"));
    ConstTensor ones{dims, std::vector<double>(static_cast<std::size_t>(count(dims)), 0.0), x.elem};
    return one(broadcast(n, {&x, &ones}, x.elem,
                         [](std::vector<double> const& a) { return a[0] + a[1]; }));
  }
  if (op == "Range" && in.size() == 3 && in[1] && in[2]) {
    double start = x.values.empty() ? 0 : x.values[0];
    double limit = in[1]->values.empty() ? 0 : in[1]->values[0];
    double delta = in[2]->values.empty() ? 0 : in[2]->values[0];
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
      return Out(fold_error(n, "delta must be non-zero and bounds finite"));
    double steps = std::ceil((limit - start) / delta);
    if (steps > static_cast<double>(kMaxConstElements))
      return Out(fold_error(n, "range too large to fold"));
    ConstTensor r{{std::max<std::int64_t>(0, saturate_to_int(steps))}, {}, x.elem};
    for (std::int64_t i = 0; i < r.dims[0]; ++i)
      r.values.push_back(start + static_cast<double>(i) * delta);
    return one(r);
  }
  if (op == "Size") return one(ConstTensor{{}, {static_cast<double>(x.size())}, Elem::integer});
  if (op == "Shape") {
    ConstTensor r{{static_cast<std::int64_t>(x.dims.size())}, {}, Elem::integer};
    for (auto d : x.dims)
      r.values.push_back(static_cast<double>(d));
    return one(r);
  }
  return std::nullopt;
}

}  // namespace cleave::importer
