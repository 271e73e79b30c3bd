// The intra-op thread pool's contract: an exception thrown inside a parallel region reaches the
// caller (an exception escaping an OpenMP region would end the process), and set_num_threads
// applies to every thread of the process, as torch's does.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include <kindle/kindle.h>

#include "cpu/parallel.h"

using namespace kindle;

TEST(Parallel, ExceptionsLeaveTheParallelRegion) {
  set_num_threads(2);
  std::atomic<int64_t> done{0};
  EXPECT_THROW(cpu::parallel_for(0, 1000, 1, [&](int64_t b, int64_t e) {
    done += e - b;
    if (b == 0) throw IndexError("index 7 is out of bounds");
  }), IndexError);
  EXPECT_EQ(done.load(), 1000);  // the other chunks still ran
  // and the pool is usable afterwards
  std::atomic<int64_t> sum{0};
  cpu::parallel_for(0, 100, 1, [&](int64_t b, int64_t e) { for (int64_t i = b; i < e; ++i) sum += i; });
  EXPECT_EQ(sum.load(), 4950);
}

TEST(Parallel, SetNumThreadsIsProcessWide) {
  set_num_threads(1);
  int seen = 0;
  std::thread([&] { seen = get_num_threads(); }).join();
  EXPECT_EQ(seen, 1);
  set_num_threads(2);
  std::thread([&] { seen = get_num_threads(); }).join();
  EXPECT_EQ(seen, 2);
  {
    ThreadLimitGuard one(1);  // a limit of this thread alone
    EXPECT_EQ(get_num_threads(), 1);
    std::thread([&] { seen = get_num_threads(); }).join();
    EXPECT_EQ(seen, 2);
  }
  EXPECT_EQ(get_num_threads(), 2);
}
