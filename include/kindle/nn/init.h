// kindle::nn::init: in-place initialisers (torch.nn.init), run without recording gradients and
// drawing from kindle's generators (the default one unless one is given), so kindle::manual_seed
// makes them reproducible. They are part of the core library: Python's kindle.nn.init calls these
// same functions, so one seed gives the same weights in C++ and in Python (the layers initialise
// in the same order), and trunc_normal_ draws as torch 2.13 does.
#pragma once
#include <optional>
#include <string>

#include "kindle/nn/enum.h"
#include "kindle/random.h"
#include "kindle/tensor.h"

namespace kindle::nn::init {

// The recommended gain for a nonlinearity: linear/conv*/sigmoid 1, tanh 5/3, relu sqrt(2),
// leaky_relu sqrt(2 / (1 + slope^2)) (param: the slope, default 0.01), selu 3/4.
double calculate_gain(const EnumName& nonlinearity, std::optional<double> param = std::nullopt);
// (fan_in, fan_out) of a weight of 2 or more dimensions.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& tensor);
// fan_in or fan_out by name (mode "fan_in"/"fan_out", any case, or kindle::kFanIn/kFanOut).
int64_t calculate_correct_fan(const Tensor& tensor, const EnumName& mode);

using OptGenerator = std::optional<Generator>;
const Tensor& uniform_(const Tensor& tensor, double a = 0.0, double b = 1.0, const OptGenerator& generator = {});
const Tensor& normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, const OptGenerator& generator = {});
// Normal(mean, std) truncated to [a, b].
const Tensor& trunc_normal_(const Tensor& tensor, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                            const OptGenerator& generator = {});
const Tensor& constant_(const Tensor& tensor, double value);
const Tensor& ones_(const Tensor& tensor);
const Tensor& zeros_(const Tensor& tensor);
const Tensor& eye_(const Tensor& tensor);
const Tensor& xavier_uniform_(const Tensor& tensor, double gain = 1.0, const OptGenerator& generator = {});
const Tensor& xavier_normal_(const Tensor& tensor, double gain = 1.0, const OptGenerator& generator = {});
// a: the leaky_relu slope; mode "fan_in"/"fan_out" (or kindle::kFanIn/kFanOut), nonlinearity
// "relu" (or kindle::kReLU), ... A tensor without elements is left as it is.
const Tensor& kaiming_uniform_(const Tensor& tensor, double a = 0, const EnumName& mode = "fan_in",
                               const EnumName& nonlinearity = "leaky_relu", const OptGenerator& generator = {});
const Tensor& kaiming_normal_(const Tensor& tensor, double a = 0, const EnumName& mode = "fan_in",
                              const EnumName& nonlinearity = "leaky_relu", const OptGenerator& generator = {});

}  // namespace kindle::nn::init
