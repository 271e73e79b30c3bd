// The instruction set of the CPU kernels, chosen once when the library loads: the library itself
// carries kernels for baseline x86-64, and each wider set (AVX2, AVX-512) is a module beside it
// (libkindle_cpu_avx2.so, libkindle_cpu_avx512.so) that is loaded when the CPU runs it.
#pragma once

namespace kindle {

enum class CpuCapability : int { Default = 0, AVX2 = 1, AVX512 = 2 };

// The set in use: the widest this CPU runs and this build has, lowered (never raised) by the
// environment variable KINDLE_CPU_CAPABILITY (or PyTorch's ATEN_CPU_CAPABILITY) =
// default | avx2 | avx512, read when the library loads.
CpuCapability cpu_capability();
// PyTorch's names: "DEFAULT", "AVX2", "AVX512".
const char* cpu_capability_name(CpuCapability c);

namespace detail {
// Whether the kernels compiled for `isa` are the ones to register (ops/kernels.h).
bool cpu_kernels_selected(int isa);
}  // namespace detail

}  // namespace kindle
