// The CPU kernels' instruction set is chosen at load (kindle/cpu_capability.h): the wider sets'
// kernels are modules beside libkindle, loaded only when chosen, and the environment can only
// lower the choice. (test_runtime_env.py runs processes under each KINDLE_CPU_CAPABILITY.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include <kindle/cpu_capability.h>
#include <kindle/kindle.h>

using namespace kindle;

namespace {
bool module_mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST(CpuCapability, TheChosenSetsModuleIsLoadedAndNoOther) {
  CpuCapability c = cpu_capability();
  std::string name = cpu_capability_name(c);
  EXPECT_TRUE(name == "DEFAULT" || name == "AVX2" || name == "AVX512") << name;
  EXPECT_EQ(module_mapped("libkindle_cpu_avx2.so"), c == CpuCapability::AVX2);
  EXPECT_EQ(module_mapped("libkindle_cpu_avx512.so"), c == CpuCapability::AVX512);
  const char* env = std::getenv("KINDLE_CPU_CAPABILITY");
  if (env && std::string(env) == "default") EXPECT_EQ(c, CpuCapability::Default);
  if (env && std::string(env) == "avx2") EXPECT_NE(c, CpuCapability::AVX512);
}

TEST(CpuCapability, KernelsRunWhicheverSetIsChosen) {
  // exp through libmvec's vector entry points, tanh through the AVX2 path where there is one,
  // a GEMM through Kindle's own kernel, float16 through the F16C conversions
  Tensor x = linspace(-3, 3, 1000);
  EXPECT_TRUE(allclose(exp(x).log(), x, 1e-5, 1e-5));
  EXPECT_TRUE(allclose(tanh(x), (exp(x * 2) - 1) / (exp(x * 2) + 1), 1e-5, 1e-6));
  Tensor a = randn({37, 19}), b = randn({19, 23});
  EXPECT_TRUE(allclose(matmul(a, b), matmul(a.to(kFloat64), b.to(kFloat64)).to(kFloat32), 1e-4, 1e-4));
  EXPECT_TRUE(equal(x.to(kFloat16).to(kFloat32).to(kFloat16), x.to(kFloat16)));
}
