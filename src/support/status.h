// Two error channels (STYLE.md #5): `Error` / `Expected<T>` for bad input that the user can fix,
// CLEAVE_ASSERT (assert.h) for broken invariants. Exceptions only at the CLI boundary.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace cleave {

enum class ErrorCode {
  invalid_argument,  // a value is out of range or inconsistent
  parse_error,       // text (TDL, JSON, shapes) does not follow its grammar
  not_found,         // a named thing (op, tensor, file) does not exist
  shape_mismatch,    // shapes or dtypes disagree with an op's semantics
  cycle,             // a graph is not acyclic
  io_error,          // a file cannot be read or written
  unsupported,       // well-formed input that cleave does not handle
  out_of_memory,     // a plan's blocks do not fit a device's memory when it runs
  execution_failed,  // a kernel or worker failed while running a plan
};

char const* error_code_name(ErrorCode code);

// An error for the user: what is wrong (message), where (context, outermost last), and the
// message itself says what to do about it.
class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  ErrorCode code() const { return code_; }
  std::string const& message() const { return message_; }
  std::vector<std::string> const& context() const { return context_; }

  // Adds where the error happened ("in op 'conv1' (conv2d)"); returns *this for chaining.
  Error& with_context(std::string where) {
    context_.push_back(std::move(where));
    return *this;
  }

  // "error[parse_error]: message\n  in ...\n  in ..."
  std::string to_string() const;

 private:
  ErrorCode code_;
  std::string message_;
  std::vector<std::string> context_;
};

// A value or an Error. Small on purpose: has_value, value, error, and a few helpers.
template <typename T> class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(state_); }
  T const& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  T const& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  T const* operator->() const { return &value(); }

  Error& error() & { return std::get<1>(state_); }
  Error const& error() const& { return std::get<1>(state_); }
  Error&& error() && { return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, Error> state_;
};

// Expected<void>.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  static Status ok() { return {}; }
  bool is_ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  Error const& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_{ErrorCode::invalid_argument, ""};
  bool ok_ = true;
};

}  // namespace cleave

// Early return of an error from an Expected<T>/Status expression.
#define CLEAVE_CONCAT_INNER(a, b) a##b
#define CLEAVE_CONCAT(a, b) CLEAVE_CONCAT_INNER(a, b)
#define CLEAVE_TRY_IMPL(var, lhs, expr)                                                            \
  auto var = (expr);                                                                               \
  if (!var) return std::move(var).error();                                                         \
  lhs = std::move(var).value()
// CLEAVE_TRY(auto x, compute());  declares x from the value or returns the error.
#define CLEAVE_TRY(lhs, expr) CLEAVE_TRY_IMPL(CLEAVE_CONCAT(try_tmp_, __LINE__), lhs, expr)
// CLEAVE_CHECK_OK(status_expr);  returns the error of a failed Status.
#define CLEAVE_CHECK_OK(expr)                                                                      \
  do {                                                                                             \
    auto CLEAVE_CONCAT(st_, __LINE__) = (expr);                                                    \
    if (!CLEAVE_CONCAT(st_, __LINE__)) return std::move(CLEAVE_CONCAT(st_, __LINE__)).error();     \
  } while (false)
