// Data-parallel training with Kindle's C++ front end: one process per replica, started by the
// launcher, which sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT:
//
//   python -m kindle.distributed.run --nproc-per-node 2 --no-python ./kindle_train_ddp
//
// Each rank trains an MLP on its share of every batch; nn::DistributedDataParallel sends rank 0's
// weights to every rank and averages the gradients across the ranks during backward (overlapped
// with it, bucket by bucket). At the end the ranks check that their weights are identical, and
// rank 0 checks that the loss went down.
#include <cstdlib>
#include <iostream>

#include <kindle/distributed.h>
#include <kindle/frontend.h>
#include <kindle/nn/parallel.h>

using namespace kindle;
namespace dist = kindle::distributed;

struct MLP : nn::Module {
  nn::Linear fc1 = register_module("fc1", nn::Linear(16, 64));
  nn::Linear fc2 = register_module("fc2", nn::Linear(64, 4));
  Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x))); }
};

int main() {
  dist::ProcessGroupPtr group = dist::init_from_env(std::chrono::seconds(60));
  int rank = group->rank(), world = group->size();
  manual_seed(uint64_t(rank));  // replicas start different; rank 0's weights are broadcast
  nn::DistributedDataParallel model(std::make_shared<MLP>(), group);
  optim::SGD opt(model.parameters(), optim::SGDOptions(0.1).momentum(0.9));

  manual_seed(1234);  // the same data stream on every rank; each takes its share
  Tensor w_true = randn({16, 4});
  const int64_t per_rank = 16;
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    Tensor x = randn({per_rank * world, 16});
    Tensor y = x.matmul(w_true).argmax(1);
    Tensor xs = x.narrow(0, rank * per_rank, per_rank), ys = y.narrow(0, rank * per_rank, per_rank);
    opt.zero_grad();
    Tensor loss = cross_entropy(model(xs), ys);
    loss.backward();  // gradients are averaged across ranks here
    opt.step();
    Tensor global = loss.detach().clone();
    group->all_reduce(global, dist::ReduceOp::Avg)->wait();
    if (step == 0) first = global.item<double>();
    last = global.item<double>();
  }
  // Every replica must hold the same weights.
  for (const Tensor& p : model.parameters()) {
    Tensor mine = p.detach().clone(), high = mine.clone(), low = mine.clone();
    group->all_reduce(high, dist::ReduceOp::Max)->wait();
    group->all_reduce(low, dist::ReduceOp::Min)->wait();
    if ((high - low).abs().max().item<double>() != 0) {
      std::cerr << "rank " << rank << ": replicas diverged\n";
      return 1;
    }
  }
  if (rank == 0) std::cout << "world " << world << ": loss " << first << " . " << last << "\n";
  group->shutdown();
  return last < 0.5 * first ? 0 : 1;
}
