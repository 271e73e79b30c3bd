#include "kindle/warning.h"

#include <atomic>
#include <cstdio>

namespace kindle {
namespace {
void to_stderr(const std::string& message) { std::fprintf(stderr, "[W] Warning: %s\n", message.c_str()); }
std::atomic<WarningHandler> handler{&to_stderr};
}  // namespace

void warn(const std::string& message) { handler.load(std::memory_order_acquire)(message); }

WarningHandler set_warning_handler(WarningHandler h) { return handler.exchange(h ? h : &to_stderr); }
}  // namespace kindle
