#include "support/status.h"

namespace cleave {

char const* error_code_name(ErrorCode code) {
  switch (code) {
  case ErrorCode::invalid_argument:
    return "invalid_argument";
  case ErrorCode::parse_error:
    return "parse_error";
  case ErrorCode::not_found:
    return "not_found";
  case ErrorCode::shape_mismatch:
    return "shape_mismatch";
  case ErrorCode::cycle:
    return "cycle";
  case ErrorCode::io_error:
    return "io_error";
  case ErrorCode::unsupported:
    return "unsupported";
  case ErrorCode::out_of_memory:
    return "out_of_memory";
  case ErrorCode::execution_failed:
    return "execution_failed";
  }
  return "unknown";
}

std::string Error::to_string() const {
  std::string out = "error[";
  out += error_code_name(code_);
  out += "]: ";
  out += message_;
  for (auto const& where : context_) {
    out += "\n  ";
    out += where;
  }
  return out;
}

}  // namespace cleave
