// The libtorch DCGAN example at small scale: 16x16 single-channel images of Gaussian blobs,
// a 32-dimensional noise vector, a transposed-convolution generator and a convolutional
// discriminator trained with Adam and binary cross-entropy. At the end the generator and its
// optimizer are checkpointed with torch::save and loaded into fresh objects with torch::load.
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <tuple>

constexpr int64_t kNoiseSize = 32;
constexpr int64_t kImageSize = 16;
constexpr int64_t kBatchSize = 64;
constexpr int64_t kNumImages = 1024;

// The generator written as a module with named members, as in the libtorch example.
struct DCGANGeneratorImpl : torch::nn::Module {
  DCGANGeneratorImpl(int64_t noise_size)
      : conv1(torch::nn::ConvTranspose2dOptions(noise_size, 64, 4).bias(false)),
        batch_norm1(64),
        conv2(torch::nn::ConvTranspose2dOptions(64, 32, 4).stride(2).padding(1).bias(false)),
        batch_norm2(32),
        conv3(torch::nn::ConvTranspose2dOptions(32, 1, 4).stride(2).padding(1).bias(false)) {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("conv3", conv3);
    register_module("batch_norm1", batch_norm1);
    register_module("batch_norm2", batch_norm2);
  }

  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(batch_norm1(conv1(x)));   // 1x1 -> 4x4
    x = torch::relu(batch_norm2(conv2(x)));   // 4x4 -> 8x8
    x = torch::tanh(conv3(x));                // 8x8 -> 16x16
    return x;
  }

  torch::nn::ConvTranspose2d conv1;
  torch::nn::BatchNorm2d batch_norm1;
  torch::nn::ConvTranspose2d conv2;
  torch::nn::BatchNorm2d batch_norm2;
  torch::nn::ConvTranspose2d conv3;
};
TORCH_MODULE(DCGANGenerator);

// The same generator as a Sequential built from its layers.
torch::nn::Sequential make_sequential_generator(int64_t noise_size) {
  return torch::nn::Sequential(
      torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(noise_size, 64, 4).bias(false)),
      torch::nn::BatchNorm2d(64),
      torch::nn::ReLU(true),
      torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(64, 32, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(32),
      torch::nn::ReLU(true),
      torch::nn::ConvTranspose2d(torch::nn::ConvTranspose2dOptions(32, 1, 4).stride(2).padding(1).bias(false)),
      torch::nn::Tanh());
}

// Real data: one Gaussian blob per image at a random place, scaled to [-1, 1].
torch::Tensor make_blobs(int64_t n) {
  auto coords = torch::arange(kImageSize, torch::kFloat);
  auto centers = torch::rand({n, 2}) * 8 + 4;              // centres in [4, 12)
  auto dy = coords.view({1, kImageSize, 1}) - centers.select(1, 0).view({n, 1, 1});
  auto dx = coords.view({1, 1, kImageSize}) - centers.select(1, 1).view({n, 1, 1});
  auto blob = torch::exp(-(dy * dy + dx * dx) / (2 * 2.0 * 2.0));
  return (blob * 2 - 1).unsqueeze(1);                      // n x 1 x 16 x 16
}

int main(int argc, char** argv) {
  int epochs = 20, threads = 1;
  uint64_t seed = 0;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--epochs" && i + 1 < argc) epochs = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--quiet") quiet = true;
    else { std::fprintf(stderr, "usage: dcgan [--epochs N] [--threads T] [--seed S] [--quiet]\n"); return 2; }
  }
  torch::manual_seed(seed);
  torch::set_num_threads(threads);
  torch::Device device(torch::kCPU);
  if (torch::cuda::is_available()) device = torch::Device(torch::kCUDA);

  DCGANGenerator generator(kNoiseSize);
  generator->to(device);

  torch::nn::Sequential discriminator(
      // 1 x 16 x 16 -> 32 x 8 x 8
      torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 4).stride(2).padding(1).bias(false)),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      // 32 x 8 x 8 -> 64 x 4 x 4
      torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 4).stride(2).padding(1).bias(false)),
      torch::nn::BatchNorm2d(64),
      torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
      // 64 x 4 x 4 -> 1 x 1 x 1
      torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 1, 4).stride(1).padding(0).bias(false)),
      torch::nn::Sigmoid());
  discriminator->to(device);

  torch::Tensor real_data = make_blobs(kNumImages).to(device);
  const double real_mean = real_data.mean().item<double>();
  const double real_std = real_data.std().item<double>();

  // What the untrained generator makes, for the plausibility check at the end.
  torch::Tensor fixed_noise = torch::randn({256, kNoiseSize, 1, 1}, device);
  generator->eval();
  double before_mean, before_std;
  {
    torch::NoGradGuard no_grad;
    auto samples = generator->forward(fixed_noise);
    before_mean = samples.mean().item<double>();
    before_std = samples.std().item<double>();
  }
  generator->train();

  torch::optim::Adam generator_optimizer(generator->parameters(),
                                         torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));
  torch::optim::Adam discriminator_optimizer(discriminator->parameters(),
                                             torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));

  bool finite = true;
  const int64_t batches_per_epoch = kNumImages / kBatchSize;
  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    torch::Tensor order = torch::randperm(kNumImages, torch::TensorOptions().dtype(torch::kLong).device(device));
    double d_sum = 0, g_sum = 0;
    for (int64_t b = 0; b < batches_per_epoch; ++b) {
      torch::Tensor real_images = real_data.index_select(0, order.slice(0, b * kBatchSize, (b + 1) * kBatchSize));

      // Train the discriminator with real images (smoothed labels) and fake ones.
      discriminator->zero_grad();
      torch::Tensor real_labels = torch::empty(real_images.size(0), device).uniform_(0.8, 1.0);
      torch::Tensor real_output = discriminator->forward(real_images).reshape(real_labels.sizes());
      torch::Tensor d_loss_real = torch::binary_cross_entropy(real_output, real_labels);
      d_loss_real.backward();

      torch::Tensor noise = torch::randn({real_images.size(0), kNoiseSize, 1, 1}, device);
      torch::Tensor fake_images = generator->forward(noise);
      torch::Tensor fake_labels = torch::zeros(real_images.size(0), device);
      torch::Tensor fake_output = discriminator->forward(fake_images.detach()).reshape(fake_labels.sizes());
      torch::Tensor d_loss_fake = torch::binary_cross_entropy(fake_output, fake_labels);
      d_loss_fake.backward();
      torch::Tensor d_loss = d_loss_real + d_loss_fake;
      discriminator_optimizer.step();

      // Train the generator to fool the discriminator.
      generator->zero_grad();
      fake_labels.fill_(1);
      fake_output = discriminator->forward(fake_images).reshape(fake_labels.sizes());
      torch::Tensor g_loss = torch::binary_cross_entropy(fake_output, fake_labels);
      g_loss.backward();
      generator_optimizer.step();

      d_sum += d_loss.item<double>();
      g_sum += g_loss.item<double>();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double d_mean = d_sum / batches_per_epoch, g_mean = g_sum / batches_per_epoch;
    std::printf("epoch %d seconds %.6f loss %.4f\n", epoch, seconds, d_mean + g_mean);
    if (!quiet) std::printf("  d_loss %.4f g_loss %.4f\n", d_mean, g_mean);
    finite = finite && std::isfinite(d_mean) && std::isfinite(g_mean);
  }

  // Checkpoint the generator and its optimizer, then restore them into fresh objects.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("dcgan_ckpt_" + std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
  std::filesystem::create_directories(dir);
  const std::string generator_path = (dir / "generator-checkpoint.pt").string();
  const std::string optimizer_path = (dir / "generator-optimizer-checkpoint.pt").string();
  torch::save(generator, generator_path);
  torch::save(generator_optimizer, optimizer_path);

  DCGANGenerator restored(kNoiseSize);
  torch::load(restored, generator_path);
  restored->to(device);
  torch::optim::Adam restored_optimizer(restored->parameters(),
                                        torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));
  torch::load(restored_optimizer, optimizer_path);
  std::filesystem::remove_all(dir);

  generator->eval();
  restored->eval();
  bool same_output, same_after_step, same_sequential;
  double after_mean, after_std;
  {
    torch::NoGradGuard no_grad;
    auto samples = generator->forward(fixed_noise);
    same_output = torch::allclose(samples, restored->forward(fixed_noise));
    after_mean = samples.mean().item<double>();
    after_std = samples.std().item<double>();

    // The Sequential generator with the trained weights copied in computes the same thing.
    auto sequential = make_sequential_generator(kNoiseSize);
    sequential->to(device);
    auto src = generator->named_parameters();
    auto src_buffers = generator->named_buffers();
    const char* names[] = {"conv1", "batch_norm1", "", "conv2", "batch_norm2", "", "conv3", ""};
    for (auto& p : sequential->named_parameters()) {
      const std::string key = p.key();
      const std::string index = key.substr(0, key.find('.'));
      p.value().copy_(src[names[std::stoi(index)] + key.substr(key.find('.'))]);
    }
    for (auto& b : sequential->named_buffers()) {
      const std::string key = b.key();
      b.value().copy_(src_buffers[names[std::stoi(key.substr(0, key.find('.')))] + key.substr(key.find('.'))]);
    }
    sequential->eval();
    same_sequential = torch::allclose(samples, sequential->forward(fixed_noise), 1e-5, 1e-6);
  }

  // One more identical step on both: equal only if the Adam state came back too.
  generator->train();
  restored->train();
  generator_optimizer.zero_grad();
  restored_optimizer.zero_grad();
  generator->forward(fixed_noise).pow(2).mean().backward();
  restored->forward(fixed_noise).pow(2).mean().backward();
  generator_optimizer.step();
  restored_optimizer.step();
  same_after_step = true;
  auto a = generator->parameters(), b = restored->parameters();
  for (size_t i = 0; i < a.size(); ++i) same_after_step = same_after_step && torch::allclose(a[i], b[i]);

  const double gap_before = std::abs(before_mean - real_mean) + std::abs(before_std - real_std);
  const double gap_after = std::abs(after_mean - real_mean) + std::abs(after_std - real_std);
  if (!quiet) {
    std::printf("real mean %.3f std %.3f; generated before mean %.3f std %.3f, after mean %.3f std %.3f\n",
                real_mean, real_std, before_mean, before_std, after_mean, after_std);
    std::printf("restored generator same output: %d, same after an Adam step: %d, sequential copy same: %d\n",
                same_output, same_after_step, same_sequential);
  }
  std::printf("result moment_gap %.4f\n", gap_after);

  if (!finite) { std::printf("FAIL: a loss was not finite\n"); return 1; }
  if (!same_output) { std::printf("FAIL: the loaded generator computes something else\n"); return 1; }
  if (!same_after_step) { std::printf("FAIL: the loaded optimizer did not restore the Adam state\n"); return 1; }
  if (!same_sequential) { std::printf("FAIL: the Sequential generator disagrees with the module\n"); return 1; }
  if (!(gap_after < 0.5 * gap_before)) {
    std::printf("FAIL: the generated images' mean/std did not move toward the real data's (gap %.4f -> %.4f)\n",
                gap_before, gap_after);
    return 1;
  }
  return 0;
}
