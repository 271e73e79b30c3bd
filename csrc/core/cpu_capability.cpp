// Choosing the CPU kernels' instruction set when the library loads (kindle/cpu_capability.h).
//
// Every CPU kernel file registers its kernels only when the set it was compiled for is the chosen
// one (KINDLE_REGISTER_KERNEL in ops/kernels.h). The first registration asks; the answer is
// fixed then: the widest set the CPU supports, the environment allows and whose module loads.
// Loading the module runs its registrations, which ask again and must get the same answer while
// the first question is still open, hence the plain atomic set before the module is opened.
#include "kindle/cpu_capability.h"

#include <dlfcn.h>

#include <atomic>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kindle {
namespace {

std::atomic<int> g_chosen{-1};

const char* const kModules[] = {nullptr, "libkindle_cpu_avx2.so", "libkindle_cpu_avx512.so"};

int hardware_capability() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2"))
    return 2;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2") &&
      __builtin_cpu_supports("f16c"))  // (x86-64-v3: F16C is implied by AVX2 on every such CPU)
    return 1;
#endif
  return 0;
}

// The ceiling the environment sets (INT_MAX without one). An unknown value is reported once and
// ignored, as PyTorch does.
int requested_capability() {
  const char* v = std::getenv("KINDLE_CPU_CAPABILITY");
  if (!v || !*v) v = std::getenv("ATEN_CPU_CAPABILITY");
  if (!v || !*v) return INT_MAX;
  std::string s(v);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (s == "default") return 0;
  if (s == "avx2") return 1;
  if (s == "avx512") return 2;
  std::fprintf(stderr, "kindle: ignoring KINDLE_CPU_CAPABILITY=%s (expected default, avx2 or avx512)\n", v);
  return INT_MAX;
}

// The folder this library was loaded from (where the modules are installed beside it).
std::string library_folder() {
  Dl_info info;
  if (!dladdr(reinterpret_cast<void*>(&hardware_capability), &info) || !info.dli_fname) return {};
  char resolved[PATH_MAX];
  std::string path = realpath(info.dli_fname, resolved) ? resolved : info.dli_fname;
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

int choose() {
  int cap = std::min(hardware_capability(), requested_capability());
  std::string folder = library_folder();
  for (; cap > 0; --cap) {
    g_chosen.store(cap);
    // RTLD_LOCAL: the module's copies of the kernels' helpers stay its own.
    if (dlopen((folder + kModules[cap]).c_str(), RTLD_NOW | RTLD_LOCAL)) return cap;
  }
  g_chosen.store(0);
  return 0;
}

}  // namespace

CpuCapability cpu_capability() {
  static const int chosen = choose();
  return CpuCapability(chosen);
}

const char* cpu_capability_name(CpuCapability c) {
  switch (c) {
    case CpuCapability::AVX512: return "AVX512";
    case CpuCapability::AVX2: return "AVX2";
    default: return "DEFAULT";
  }
}

namespace detail {
bool cpu_kernels_selected(int isa) {
  int c = g_chosen.load();
  if (c < 0) c = int(cpu_capability());
  return c == isa;
}
}  // namespace detail

}  // namespace kindle
