// Errors: every bad input raises a kindle::Error subclass whose message starts with the op's
// name and says what was given and what was expected. The Python bindings map each subclass to
// the exception type PyTorch raises.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace kindle {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
class ValueError : public Error { public: using Error::Error; };
class IndexError : public Error { public: using Error::Error; };
class TypeError : public Error { public: using Error::Error; };
class NotImplementedError : public Error { public: using Error::Error; };
// A matrix the factorisation cannot handle (singular, not positive-definite): torch.linalg.LinAlgError.
class LinAlgError : public Error { public: using Error::Error; };
// A device allocation that failed even after the allocator released its cached blocks:
// torch.OutOfMemoryError (a RuntimeError).
class OutOfMemoryError : public Error { public: using Error::Error; };
// A broken precondition that PyTorch checks with a Python `assert` (multi_head_attention_forward's
// shape checks): AssertionError.
class AssertionError : public Error { public: using Error::Error; };
// A failed system call on a file (open, write, rename): Python's OSError, whose errno picks the
// subclass (FileNotFoundError, IsADirectoryError, ...). what() ends with the file's name.
class OSError : public Error {
 public:
  OSError(int err, const std::string& msg, const std::string& filename)
      : Error(filename.empty() ? msg : msg + ": '" + filename + "'"), err(err), message(msg), filename(filename) {}
  int err;
  std::string message, filename;
};

namespace detail {
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}
template <typename E>
[[noreturn]] void throw_as(const std::string& msg) { throw E(msg); }
}  // namespace detail

}  // namespace kindle

// The message is only built when the check fails.
#define KINDLE_CHECK_AS(E, cond, ...)                                              \
  do {                                                                             \
    if (!(cond)) [[unlikely]]                                                      \
      ::kindle::detail::throw_as<E>(::kindle::detail::str_cat(__VA_ARGS__));       \
  } while (0)
#define KINDLE_CHECK(cond, ...) KINDLE_CHECK_AS(::kindle::Error, cond, __VA_ARGS__)
#define KINDLE_CHECK_VALUE(cond, ...) KINDLE_CHECK_AS(::kindle::ValueError, cond, __VA_ARGS__)
#define KINDLE_CHECK_INDEX(cond, ...) KINDLE_CHECK_AS(::kindle::IndexError, cond, __VA_ARGS__)
#define KINDLE_CHECK_TYPE(cond, ...) KINDLE_CHECK_AS(::kindle::TypeError, cond, __VA_ARGS__)
#define KINDLE_CHECK_ASSERT(cond, ...) KINDLE_CHECK_AS(::kindle::AssertionError, cond, __VA_ARGS__)
#define KINDLE_CHECK_NOT_IMPLEMENTED(cond, ...) \
  KINDLE_CHECK_AS(::kindle::NotImplementedError, cond, __VA_ARGS__)
#define KINDLE_ERROR(...) ::kindle::detail::throw_as<::kindle::Error>(::kindle::detail::str_cat(__VA_ARGS__))
#define KINDLE_INTERNAL_ASSERT(cond, ...)                                               \
  KINDLE_CHECK(cond, "internal error (a kindle bug, please report) at ", __FILE__, ":", \
               __LINE__, ": ", #cond, " ", ##__VA_ARGS__)
