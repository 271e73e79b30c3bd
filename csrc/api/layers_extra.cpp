// include/kindle/nn/layers_extra.h: each forward is the core op Python's layer calls.
#include "kindle/nn/layers_extra.h"

#include "kindle/ops.h"
#include "util.h"

namespace kindle::nn {

using detail::check_padding_idx;
using detail::opt;
using detail::py_arg;
using detail::py_bool;
using detail::py_float;

Tensor HardshrinkImpl::forward(const Tensor& input) { return hardshrink(input, options.lambda()); }
std::string HardshrinkImpl::extra_repr() const { return py_float(options.lambda()); }

Tensor SoftshrinkImpl::forward(const Tensor& input) { return softshrink(input, options.lambda()); }
std::string SoftshrinkImpl::extra_repr() const { return py_float(options.lambda()); }

Tensor LocalResponseNormImpl::forward(const Tensor& input) {
  return local_response_norm(input, options.size(), options.alpha(), options.beta(), options.k());
}
std::string LocalResponseNormImpl::extra_repr() const {
  return std::to_string(options.size()) + ", alpha=" + py_float(options.alpha()) + ", beta=" + py_float(options.beta()) +
         ", k=" + py_float(options.k());
}

Tensor Softmax2dImpl::forward(const Tensor& input) {
  KINDLE_CHECK_VALUE(input.dim() == 3 || input.dim() == 4, "Softmax2d: expected input to be 3D or 4D, got ",
                     input.dim(), "D instead");
  return input.softmax(-3);
}

Tensor SoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return soft_margin_loss(input, target, reduction);
}

MultiLabelSoftMarginLossImpl::MultiLabelSoftMarginLossImpl(const MultiLabelSoftMarginLossOptions& o)
    : Loss(o.reduction()) {
  weight = register_buffer("weight", o.weight());
}
Tensor MultiLabelSoftMarginLossImpl::forward(const Tensor& input, const Tensor& target) {
  return multilabel_soft_margin_loss(input, target, opt(weight), reduction);
}

Tensor AdaptiveAvgPool1dImpl::forward(const Tensor& input) {
  return adaptive_avg_pool2d(input.unsqueeze(-2), {1, options.output_size()[0]}).squeeze(-2);
}
std::string AdaptiveAvgPool1dImpl::extra_repr() const { return "output_size=" + py_arg(options.output_size()); }

template <size_t D>
std::tuple<Tensor, Tensor> AdaptiveMaxPoolNdImpl<D>::forward_with_indices(const Tensor& input) {
  if constexpr (D == 1) {
    auto [values, indices] = adaptive_max_pool2d(input.unsqueeze(-2), {1, options.output_size()[0]});
    return {values.squeeze(-2), indices.squeeze(-2)};
  } else if constexpr (D == 2) {
    return adaptive_max_pool2d(input, options.output_size());
  } else {
    return adaptive_max_pool3d(input, options.output_size());
  }
}
template <size_t D>
std::string AdaptiveMaxPoolNdImpl<D>::extra_repr() const {
  return "output_size=" + py_arg(options.output_size());
}
template class AdaptiveMaxPoolNdImpl<1>;
template class AdaptiveMaxPoolNdImpl<2>;
template class AdaptiveMaxPoolNdImpl<3>;

template <size_t D>
Tensor LPPoolNdImpl<D>::forward(const Tensor& input) {
  const auto& o = options;
  if constexpr (D == 1)
    return lp_pool2d(input.unsqueeze(-2), o.norm_type(), {1, o.kernel_size()[0]}, {1, o.stride()[0]}, o.ceil_mode())
        .squeeze(-2);
  else if constexpr (D == 2)
    return lp_pool2d(input, o.norm_type(), o.kernel_size(), o.stride(), o.ceil_mode());
  else
    return lp_pool3d(input, o.norm_type(), o.kernel_size(), o.stride(), o.ceil_mode());
}
template <size_t D>
std::string LPPoolNdImpl<D>::extra_repr() const {
  const auto& o = options;
  return "norm_type=" + py_float(o.norm_type()) + ", kernel_size=" + py_arg(o.kernel_size()) +
         ", stride=" + py_arg(o.stride()) + ", ceil_mode=" + py_bool(o.ceil_mode());
}
template class LPPoolNdImpl<1>;
template class LPPoolNdImpl<2>;
template class LPPoolNdImpl<3>;

Tensor UnfoldImpl::forward(const Tensor& input) {
  KINDLE_CHECK_INDEX(input.dim() >= 3, "unfold: expected a 3-D (unbatched) or 4-D (batched) input, got shape ",
                     input.sizes());
  bool batched = input.dim() == 4;
  const auto& o = options;
  Tensor cols = im2col(batched ? input : input.unsqueeze(0), o.kernel_size(), o.dilation(), o.padding(), o.stride())
                    .transpose(1, 2);
  return batched ? cols : cols.squeeze(0);
}
std::string UnfoldImpl::extra_repr() const {
  const auto& o = options;
  return "kernel_size=" + py_arg(o.kernel_size()) + ", dilation=" + py_arg(o.dilation()) + ", padding=" +
         py_arg(o.padding()) + ", stride=" + py_arg(o.stride());
}

Tensor FoldImpl::forward(const Tensor& input) {
  KINDLE_CHECK(input.dim() == 2 || input.dim() == 3,
               "fold: Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
               "dimensions, but got: ", input.sizes());
  bool batched = input.dim() == 3;
  const auto& o = options;
  Tensor img = col2im((batched ? input : input.unsqueeze(0)).transpose(1, 2), o.output_size(), o.kernel_size(),
                      o.dilation(), o.padding(), o.stride());
  return batched ? img : img.squeeze(0);
}
std::string FoldImpl::extra_repr() const {
  const auto& o = options;
  return "output_size=" + py_arg(o.output_size()) + ", kernel_size=" + py_arg(o.kernel_size()) + ", dilation=" +
         py_arg(o.dilation()) + ", padding=" + py_arg(o.padding()) + ", stride=" + py_arg(o.stride());
}

EmbeddingBagImpl::EmbeddingBagImpl(const EmbeddingBagOptions& o) : options(o) {
  int64_t n = o.num_embeddings();
  options.padding_idx(check_padding_idx(o.padding_idx(), n));
  if (o._weight().defined()) {
    KINDLE_CHECK_VALUE(o._weight().sizes() == IntArrayRef({n, o.embedding_dim()}),
                       "Shape of weight does not match num_embeddings and embedding_dim");
    weight = register_parameter("weight", o._weight().detach());
  } else {
    weight = register_parameter("weight", detail::new_weight({n, o.embedding_dim()}, o.dtype()));
    reset_parameters();
  }
}

void EmbeddingBagImpl::reset_parameters() { detail::init_embedding_(weight, options.padding_idx()); }

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  const auto& o = options;
  return embedding_bag(input, weight, opt(offsets), o.mode().name(), opt(per_sample_weights), o.include_last_offset(),
                       o.padding_idx(), o.max_norm(), o.norm_type());
}

std::string EmbeddingBagImpl::extra_repr() const {
  const auto& o = options;
  std::string s = std::to_string(o.num_embeddings()) + ", " + std::to_string(o.embedding_dim());
  if (o.max_norm()) s += ", max_norm=" + py_float(*o.max_norm());
  if (o.norm_type() != 2) s += ", norm_type=" + py_float(o.norm_type());
  s += ", mode='" + o.mode().name() + "'";
  if (o.padding_idx()) s += ", padding_idx=" + std::to_string(*o.padding_idx());
  return s;
}

Tensor ChannelShuffleImpl::forward(const Tensor& input) { return channel_shuffle(input, options.groups()); }

template <size_t D>
Tensor MaxUnpoolNdImpl<D>::forward(const Tensor& input, const Tensor& indices,
                                   const std::optional<std::vector<int64_t>>& output_size) {
  const auto& o = options;
  OptionalIntArrayRef size = output_size ? OptionalIntArrayRef(IntArrayRef(*output_size)) : std::nullopt;
  if constexpr (D == 1) return max_unpool1d(input, indices, o.kernel_size(), o.stride(), o.padding(), size);
  else if constexpr (D == 2) return max_unpool2d(input, indices, o.kernel_size(), o.stride(), o.padding(), size);
  else return max_unpool3d(input, indices, o.kernel_size(), o.stride(), o.padding(), size);
}
template class MaxUnpoolNdImpl<1>;
template class MaxUnpoolNdImpl<2>;
template class MaxUnpoolNdImpl<3>;

template <size_t D>
FractionalMaxPoolNdImpl<D>::FractionalMaxPoolNdImpl(const FractionalMaxPoolOptions<D>& o) : options(o) {
  const std::string op = "FractionalMaxPool" + std::to_string(D) + "d";
  KINDLE_CHECK_VALUE(o.output_size() || o.output_ratio(), op, " requires specifying either an output size, or a "
                     "pooling ratio");
  KINDLE_CHECK_VALUE(!(o.output_size() && o.output_ratio()), op, ": only one of output_size and output_ratio may be "
                     "specified");
  if (o.output_ratio()) {
    KINDLE_CHECK_VALUE(o.output_ratio()->size() == D || o.output_ratio()->size() == 1, op, ": expected ", D,
                       " output ratios, got ", o.output_ratio()->size());
    for (double r : *o.output_ratio())
      KINDLE_CHECK_VALUE(0 < r && r < 1, op, ": output_ratio must be between 0 and 1 (got ", r, ")");
  }
}

template <size_t D>
std::tuple<Tensor, Tensor> FractionalMaxPoolNdImpl<D>::forward_with_indices(const Tensor& input) {
  const auto& o = options;
  KINDLE_CHECK(input.dim() == int64_t(D) + 1 || input.dim() == int64_t(D) + 2, "fractional_max_pool", D,
               "d(): Expected ", D + 1, "D or ", D + 2, "D tensor, but got: ", input.sizes());
  const bool batched = input.dim() == int64_t(D) + 2;
  Tensor x = batched ? input : input.unsqueeze(0);
  std::vector<int64_t> out(D);
  for (size_t d = 0; d < D; ++d) {
    if (o.output_size()) {
      out[d] = (*o.output_size())[d];
    } else {
      const auto& r = *o.output_ratio();
      out[d] = int64_t(double(x.size(int64_t(2 + d))) * r[r.size() == 1 ? 0 : d]);
    }
  }
  Tensor samples = o._random_samples().defined() ? o._random_samples()
                                                 : rand({x.size(0), x.size(1), int64_t(D)}, std::nullopt, x.dtype());
  auto [values, indices] = D == 2 ? fractional_max_pool2d(x, o.kernel_size(), out, samples)
                                  : fractional_max_pool3d(x, o.kernel_size(), out, samples);
  if (!batched) return {values.squeeze(IntArrayRef{0}), indices.squeeze(IntArrayRef{0})};
  return {values, indices};
}
template class FractionalMaxPoolNdImpl<2>;
template class FractionalMaxPoolNdImpl<3>;

RReLUImpl::RReLUImpl(const RReLUOptions& o) : options(o) {
  KINDLE_CHECK(o.lower() <= o.upper(), "RReLU: Lower bound should be less than or equal to the upper bound");
}
Tensor RReLUImpl::forward(const Tensor& input) {
  Tensor out = rrelu(options.inplace() ? input.clone() : input, options.lower(), options.upper(), is_training());
  return options.inplace() ? input.copy_(out) : out;
}
std::string RReLUImpl::extra_repr() const {
  return "lower=" + py_float(options.lower()) + ", upper=" + py_float(options.upper()) +
         (options.inplace() ? ", inplace=True" : "");
}

Tensor CrossMapLRN2dImpl::forward(const Tensor& input) {
  const auto& o = options;
  return cross_map_lrn2d(input, o.size(), o.alpha(), o.beta(), double(o.k()));
}
std::string CrossMapLRN2dImpl::extra_repr() const {
  const auto& o = options;
  return std::to_string(o.size()) + ", alpha=" + py_float(o.alpha()) + ", beta=" + py_float(o.beta()) +
         ", k=" + std::to_string(o.k());
}

}  // namespace kindle::nn
