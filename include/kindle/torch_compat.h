// libtorch compatibility: `namespace torch = kindle;` and libtorch's macros, so that a libtorch
// program builds against Kindle unchanged. Opt-in: included by compat/torch/torch.h, which only
// the Kindle::torch_compat target (find_package(Kindle COMPONENTS torch_compat)) puts on the
// include path, so a real libtorch installation is never shadowed by accident.
#pragma once
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "kindle/frontend.h"

namespace kindle {
// libtorch's small utilities.
using std::nullopt;
using std::optional;
using nn::ExpandingArray;
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream ss;
  (ss << ... << args);
  return ss.str();
}
}  // namespace kindle

namespace torch = kindle;
namespace at = kindle;
namespace c10 = kindle;  // c10::InferenceMode, c10::optional, ...

#define TORCH_MODULE(Name) KINDLE_MODULE(Name)
#define TORCH_MODULE_IMPL(Name, Impl) KINDLE_MODULE_IMPL(Name, Impl)
#define TORCH_CHECK(cond, ...) KINDLE_CHECK(cond, "Expected " #cond " to be true, but got false. " __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_CHECK_VALUE(cond, ...) KINDLE_CHECK_VALUE(cond, "Expected " #cond " to be true. " __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_CHECK_INDEX(cond, ...) KINDLE_CHECK_INDEX(cond, "Expected " #cond " to be true. " __VA_OPT__(, ) __VA_ARGS__)
#define TORCH_INTERNAL_ASSERT(cond, ...) KINDLE_CHECK(cond, "Internal assert failed: " #cond " " __VA_OPT__(, ) __VA_ARGS__)
#define AT_ASSERT(cond, ...) KINDLE_CHECK(cond, "Expected " #cond " to be true, but got false.")
#define TORCH_WARN(...) std::fprintf(stderr, "Warning: %s\n", ::kindle::str(__VA_ARGS__).c_str())
#define AT_ERROR(...) KINDLE_ERROR(__VA_ARGS__)
