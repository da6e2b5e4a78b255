#include "cli/args.h"

#include <charconv>
#include <cstdlib>

namespace cleave::cli {

Expected<std::pair<std::string, std::string>> split_assignment(std::string_view text,
                                                               std::string_view what) {
  auto eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return Error(ErrorCode::invalid_argument,
                 std::string(what) + " '" + std::string(text) + "' must look like NAME=VALUE");
  return std::pair{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

namespace {

bool parse_int(std::string_view s, std::int64_t& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

}  // namespace

ir::AttrValue parse_attr_value(std::string_view text) {
  std::int64_t i = 0;
  if (parse_int(text, i)) return i;
  std::string_view list = text;
  bool bracketed = list.size() >= 2 && list.front() == '[' && list.back() == ']';
  if (bracketed) list = list.substr(1, list.size() - 2);
  if (bracketed || list.find(',') != std::string_view::npos) {
    std::vector<std::int64_t> values;
    bool ok = true;
    while (ok && !list.empty()) {
      auto comma = list.find(',');
      ok = parse_int(list.substr(0, comma), i);
      values.push_back(i);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
    if (ok) return values;
  }
  std::string s(text);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size()) return d;
  return s;
}

Status check_backend(std::string const& backend) {
  if (backend == "in-process") return Status::ok();
  if (backend != "mpi")
    return Error(ErrorCode::invalid_argument,
                 "--backend must be in-process or mpi, not '" + backend + "'");
#ifdef CLEAVE_HAVE_MPI
  return Status::ok();
#else
  return Error(ErrorCode::unsupported,
               "this cleave was built without MPI (CMake found none): install Open MPI "
               "(scripts/install-deps.sh) and rebuild, or use --backend in-process");
#endif
}

}  // namespace cleave::cli
