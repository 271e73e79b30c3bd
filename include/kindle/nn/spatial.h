// Padding, pixel-shuffle and upsampling layers with Python's names, arguments and defaults, each a
// thin module over one core op (pad, pixel_shuffle, pixel_unshuffle, interpolate), the ops
// Python's layers call too.
//   nn::ReflectionPad2d pad(1);  nn::ConstantPad1d fill(nn::ConstantPad1dOptions({2, 0}, 3.5));
#pragma once
#include "kindle/nn/functional.h"
#include "kindle/nn/module.h"
#include "kindle/nn/options.h"

namespace kindle::nn {

// Padding of the last D dims: 2 * D sizes in F.pad's order (the last dim's left and right first),
// or one size for every side; value: what ConstantPad fills with.
template <size_t D>
struct PadOptions {
  PadOptions(ExpandingArray<2 * D> padding, double value = 0.0) : padding_(padding), value_(value) {}
  KINDLE_ARG(ExpandingArray<2 * D>, padding);
  KINDLE_ARG(double, value);
};

namespace pad_mode {
// The F.pad mode and Python's class-name prefix of each padding layer.
struct Reflect { static constexpr const char* mode = "reflect", *prefix = "ReflectionPad"; };
struct Replicate { static constexpr const char* mode = "replicate", *prefix = "ReplicationPad"; };
struct Circular { static constexpr const char* mode = "circular", *prefix = "CircularPad"; };
struct Zero { static constexpr const char* mode = "constant", *prefix = "ZeroPad"; };
struct Constant { static constexpr const char* mode = "constant", *prefix = "ConstantPad"; };
}  // namespace pad_mode

template <size_t D, typename Mode>
class PadImpl : public Module {
 public:
  explicit PadImpl(const PadOptions<D>& options) : options(options) {}
  explicit PadImpl(ExpandingArray<2 * D> padding, double value = 0.0) : options(padding, value) {}
  Tensor forward(const Tensor& input) override;
  std::string name() const override { return Mode::prefix + std::to_string(D) + "d"; }
  std::string extra_repr() const override;
  PadOptions<D> options;
};

#define KINDLE_PAD_MODULE(Prefix, Mode, D)                    \
  using Prefix##D##dOptions = PadOptions<D>;                  \
  using Prefix##D##dImpl = PadImpl<D, pad_mode::Mode>;        \
  KINDLE_MODULE(Prefix##D##d);                                \
  extern template class PadImpl<D, pad_mode::Mode>;
#define KINDLE_PAD_MODULES(Prefix, Mode) \
  KINDLE_PAD_MODULE(Prefix, Mode, 1) KINDLE_PAD_MODULE(Prefix, Mode, 2) KINDLE_PAD_MODULE(Prefix, Mode, 3)
KINDLE_PAD_MODULES(ReflectionPad, Reflect)
KINDLE_PAD_MODULES(ReplicationPad, Replicate)
KINDLE_PAD_MODULES(CircularPad, Circular)
KINDLE_PAD_MODULES(ZeroPad, Zero)
KINDLE_PAD_MODULES(ConstantPad, Constant)
#undef KINDLE_PAD_MODULES
#undef KINDLE_PAD_MODULE

// (N, C * r^2, H, W) -> (N, C, H * r, W * r), and back.
class PixelShuffleImpl : public Module {
 public:
  explicit PixelShuffleImpl(int64_t upscale_factor) : upscale_factor(upscale_factor) {}
  Tensor forward(const Tensor& input) override { return pixel_shuffle(input, upscale_factor); }
  std::string extra_repr() const override { return "upscale_factor=" + std::to_string(upscale_factor); }
  int64_t upscale_factor;
};
KINDLE_MODULE(PixelShuffle);

class PixelUnshuffleImpl : public Module {
 public:
  explicit PixelUnshuffleImpl(int64_t downscale_factor) : downscale_factor(downscale_factor) {}
  Tensor forward(const Tensor& input) override { return pixel_unshuffle(input, downscale_factor); }
  std::string extra_repr() const override { return "downscale_factor=" + std::to_string(downscale_factor); }
  int64_t downscale_factor;
};
KINDLE_MODULE(PixelUnshuffle);

// F::interpolate as a layer: size or scale_factor, mode "nearest" (default), "linear",
// "bilinear", "bicubic", "trilinear".
using UpsampleOptions = functional::InterpolateFuncOptions;
class UpsampleImpl : public Module {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options = {}) : options(options) {}
  Tensor forward(const Tensor& input) override { return functional::interpolate(input, options); }
  std::string extra_repr() const override;
  UpsampleOptions options;
};
KINDLE_MODULE(Upsample);

}  // namespace kindle::nn
