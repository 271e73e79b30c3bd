// linear/bilinear, dropout, embedding, one_hot, pad and pixel shuffle of torch.nn.functional.
#include <cmath>
#include <limits>

#include "kindle/autocast.h"
#include "autograd/forward_ad.h"
#include "kindle/autograd.h"
#include "nn/common.h"
#include "ops/pad_kernels.h"
#include "ops/value_checks.h"

namespace kindle {

Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  KINDLE_CHECK(weight.dim() == 1 || weight.dim() == 2, "linear: weight must be 1-D or 2-D, got shape ",
               weight.sizes());
  KINDLE_CHECK(input.dim() >= 1 && input.size(-1) == weight.size(-1), "linear: mat1 and mat2 shapes cannot be "
               "multiplied (input of shape ", input.sizes(), ", weight of shape ", weight.sizes(), "; expected the "
               "input's last dim to be ", weight.size(-1), ")");
  if (weight.dim() == 2 && weight.size(1) > 0 && input.dtype() == weight.dtype() &&
      (!bias || bias->dtype() == input.dtype()) &&
      (!bias || bias->dim() <= 1))
    return linear_2d_weight(input, weight, bias);
  Tensor y = matmul(input, weight.dim() == 2 ? weight.t() : weight);
  return bias ? y + *bias : y;
}

// y = x W^T + b as one op, so that backward gives dW = dy^T x directly in W's (O, I) layout: as a
// composite, dW arrived transposed and the accumulator had to copy it.
Tensor native_linear_2d_weight(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  const int64_t I = weight.size(1), O = weight.size(0);
  Tensor x = input.reshape({-1, I});
  Tensor y = bias ? addmm(bias->expand({x.size(0), O}), x, weight.t()) : mm(x, weight.t());
  DimVector shape(input.sizes());
  shape.back() = O;
  return y.reshape(shape);
}

Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const std::optional<Tensor>& bias) {
  autocast::Exclude no_autocast;  // (not on PyTorch's autocast lists: its matrix product runs as given)
  KINDLE_CHECK(weight.dim() == 3, "bilinear: expected a 3-D weight (out, in1, in2), got shape ", weight.sizes());
  KINDLE_CHECK(input1.size(-1) == weight.size(1) && input2.size(-1) == weight.size(2),
               "bilinear: input1 of shape ", input1.sizes(), " and input2 of shape ", input2.sizes(),
               " do not match weight of shape ", weight.sizes());
  int64_t O = weight.size(0), I1 = weight.size(1), I2 = weight.size(2);
  // y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j]
  Tensor t = matmul(input1, weight.permute({1, 0, 2}).reshape({I1, O * I2}));  // (..., O*I2)
  DimVector shape(input1.sizes());
  shape.pop_back();
  shape.push_back(O);
  shape.push_back(I2);
  Tensor y = (t.reshape(shape) * input2.unsqueeze(-2)).sum(IntArrayRef{-1}, false, t.dtype());
  return bias ? y + *bias : y;
}

namespace {

void check_p(double p, const char* op) {
  KINDLE_CHECK_VALUE(p >= 0 && p <= 1, op, ": dropout probability has to be between 0 and 1, but got ", p);
}

// Keeps each element (or each channel, for feature dropout) with probability 1 - p.
Tensor keep_mask(const Tensor& self, double p, bool feature) {
  DimVector shape(self.sizes());
  Tensor m;
  if (feature) {
    for (size_t i = 2; i < shape.size(); ++i) shape[i] = 1;
    m = empty(shape, self.dtype());
  } else {
    m = empty_tensor_like_layout(self, self.dtype());  // torch's empty_like: the draws land where torch's do
  }
  m.bernoulli_(1 - p);
  return m;
}

Tensor dropout_impl(const Tensor& self, double p, bool training, bool feature, const char* op) {
  check_p(p, op);
  if (!training || p == 0) return self;
  if (p == 1) return self * zeros_like(self);
  KINDLE_CHECK(self.is_floating_point(), op, ": result type Float can't be cast to the desired output type ",
               scalar_type_name(self.dtype()), " (dropout needs a floating point input)");
  return self * (keep_mask(self, p, feature) / (1 - p));
}

}  // namespace

Tensor dropout(const Tensor& self, double p, bool training) { return dropout_impl(self, p, training, false, "dropout"); }

Tensor dropout1d(const Tensor& self, double p, bool training) {
  KINDLE_CHECK(self.dim() == 2 || self.dim() == 3, "dropout1d: Expected 2D or 3D input, but received a ", self.dim(),
               "D input. Note that dropout1d exists to provide channel-wise dropout on inputs with 1 spatial "
               "dimension, a channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).");
  if (self.dim() == 2) return dropout_impl(self.unsqueeze(0), p, training, true, "dropout1d").squeeze(IntArrayRef{0});
  return dropout_impl(self, p, training, true, "dropout1d");
}

Tensor dropout2d(const Tensor& self, double p, bool training) {
  KINDLE_CHECK(self.dim() == 3 || self.dim() == 4, "dropout2d: Expected 3D or 4D input, but received a ", self.dim(),
               "D input (channel-wise dropout over 2 spatial dimensions, a channel dimension and an optional batch "
               "dimension)");
  // A 3-D input is taken as (N, C, L), as PyTorch does (it warns that this will change).
  return dropout_impl(self, p, training, true, "dropout2d");
}

Tensor dropout3d(const Tensor& self, double p, bool training) {
  KINDLE_CHECK(self.dim() == 4 || self.dim() == 5, "dropout3d: Expected 4D or 5D input, but received a ", self.dim(),
               "D input (channel-wise dropout over 3 spatial dimensions, a channel dimension and an optional batch "
               "dimension)");
  if (self.dim() == 4) return dropout_impl(self.unsqueeze(0), p, training, true, "dropout3d").squeeze(IntArrayRef{0});
  return dropout_impl(self, p, training, true, "dropout3d");
}

namespace {
// Keeps SELU's self-normalisation: dropped units (or channels) take the saturation value, then an
// affine correction restores mean and variance.
Tensor alpha_dropout_impl(const Tensor& self, double p, bool training, bool feature, const char* op) {
  check_p(p, op);
  if (!training || p == 0) return self;
  KINDLE_CHECK(!feature || self.dim() >= 2, "Feature dropout requires at least 2 dimensions in the input");
  if (p == 1) return self * zeros_like(self);
  if (self.numel() == 0) return self.clone();
  KINDLE_CHECK(self.is_floating_point(), op, ": result type Float can't be cast to the desired output type ",
               self.dtype());
  const double alpha = 1.7580993408473766;
  double a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  Tensor keep = keep_mask(self, p, feature);
  Tensor b = (keep - 1) * (alpha * a) + alpha * a * p;
  return self * (keep * a) + b;
}
}  // namespace

Tensor alpha_dropout(const Tensor& self, double p, bool training) {
  return alpha_dropout_impl(self, p, training, false, "alpha_dropout");
}

Tensor feature_alpha_dropout(const Tensor& self, double p, bool training) {
  return alpha_dropout_impl(self, p, training, true, "feature_alpha_dropout");
}

// The straight-through Gumbel-softmax: y_soft from logits plus Gumbel noise (drawn as PyTorch's
// -log(Exp(1)) over an empty_like), or with hard, the one-hot of its argmax carrying y_soft's gradient.
Tensor gumbel_softmax(const Tensor& logits, double tau, bool hard, int64_t dim) {
  Tensor gumbels = -empty_like(logits).exponential_().log();
  Tensor y_soft = ((logits + gumbels) / tau).softmax(dim);
  if (!hard) return y_soft;
  Tensor index = std::get<1>(max(y_soft, dim, true));
  Tensor y_hard = zeros_like(logits).scatter_(dim, index, 1.0);
  return y_hard - y_soft.detach() + y_soft;
}

// The p-norm distances between the rows of a matrix, pairs (i < j) in row-major order.
Tensor pdist(const Tensor& self, double p) {
  KINDLE_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  KINDLE_CHECK(p >= 0, "pdist only supports non-negative p values");
  KINDLE_CHECK(self.is_floating_point(), "pdist only supports floating-point dtypes, got: ", self.dtype());
  KINDLE_CHECK_AS(NotImplementedError, self.dtype() != kFloat16 && self.dtype() != kBFloat16,
                  "\"pdist\" not implemented for '", scalar_type_name(self.dtype()), "'");
  const int64_t n = self.size(0);
  // Row k against the rows after it, as views: an index_select of every pair (and its index_add
  // backward) took four times as long.
  auto distances = [&](const Tensor& diff) -> Tensor {
    if (p == 0)  // a count: its gradient is zero, but it is a gradient (as PyTorch's)
      return where(ones({}, kBool), (diff != 0).sum(IntArrayRef{1}).to(self.dtype()), diff.sum(IntArrayRef{1}));
    return norm(diff, p, IntArrayRef{1});
  };
  if (n < 2) return distances(self.narrow(0, 0, 0));
  std::vector<Tensor> rows;
  rows.reserve(size_t(n - 1));
  for (int64_t k = 0; k + 1 < n; ++k) rows.push_back(distances(self.narrow(0, k + 1, n - k - 1) - self.select(0, k)));
  return rows.size() == 1 ? rows[0] : cat(rows, 0);
}

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx,
                 std::optional<double> max_norm, double norm_type, bool scale_grad_by_freq) {
  KINDLE_CHECK(weight.dim() == 2, "embedding: 'weight' must be 2-D, got shape ", weight.sizes());
  KINDLE_CHECK(!input.is_floating_point() && input.dtype() != kBool, "embedding: Expected tensor for argument #1 "
               "'indices' to have one of the following scalar types: Long, Int; but got ", input.dtype(), " instead");
  int64_t V = weight.size(0);
  Tensor idx = input.to(kInt64).reshape({-1});
  if (idx.numel() > 0 && !idx.is_meta()) {
    int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    KINDLE_CHECK_INDEX(lo >= 0 && hi < V, "embedding: index out of range in self (indices span [", lo, ", ", hi,
                       "], the table has ", V, " rows)");
  }
  std::optional<int64_t> pad;
  if (padding_idx) {
    KINDLE_CHECK(*padding_idx < V && *padding_idx >= -V, "embedding: padding_idx must be within num_embeddings");
    pad = *padding_idx < 0 ? *padding_idx + V : *padding_idx;
  }
  if (max_norm && !weight.is_meta()) {  // (a renorm writes values only: nothing to do on meta)
    // Rows that are looked up and exceed max_norm are rescaled in place (as PyTorch's embedding_renorm_:
    // not differentiable in either mode, so the weight keeps its tangent too).
    autograd::NoGradGuard g;
    autograd::forward_ad::Suspend no_tangents;
    Tensor rows = std::get<0>(_unique2(idx, true, false, false, std::nullopt));
    Tensor w = weight.index_select(0, rows);
    Tensor norms = w.norm(norm_type, IntArrayRef{1}, true);
    Tensor scale = where(norms > *max_norm, *max_norm / (norms + 1e-7), scalar_tensor_of(1, weight.dtype()));
    weight.index_copy_(0, rows, w * scale);
  }
  DimVector shape(input.sizes());
  shape.push_back(weight.size(1));
  Tensor out = weight.index_select(0, idx);
  if (scale_grad_by_freq && idx.numel() > 0) {
    // each row's gradient is divided by how often its index occurs in the batch: the forward
    // value is unchanged, the gradient is scaled
    Tensor freq = bincount(idx, std::nullopt, V).index_select(0, idx).to(out.dtype()).unsqueeze(1);
    out = out / freq + (out - out / freq).detach();
  }
  if (pad) {
    // The padding row's value is used, but it receives no gradient.
    Tensor is_pad = (idx == *pad).unsqueeze(1);
    out = where(is_pad, out.detach(), out);
  }
  return out.reshape(shape);
}

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& offsets,
                     std::string_view mode, const std::optional<Tensor>& per_sample_weights,
                     bool include_last_offset, std::optional<int64_t> padding_idx, std::optional<double> max_norm,
                     double norm_type) {
  KINDLE_CHECK_VALUE(mode == "sum" || mode == "mean" || mode == "max", "embedding_bag: mode has to be one of sum, "
                     "mean or max, got '", mode, "'");
  KINDLE_CHECK(weight.is_floating_point(), "embedding_bag: expected a floating point weight, got ", weight.dtype());
  if (per_sample_weights)
    KINDLE_CHECK_VALUE(per_sample_weights->sizes() == input.sizes(), "embedding_bag: per_sample_weights of shape ",
                       per_sample_weights->sizes(), " must have the same shape as input ", input.sizes());
  if (input.numel() > 0 && !input.is_meta()) {
    int64_t lo = input.min().item<int64_t>(), hi = input.max().item<int64_t>();
    KINDLE_CHECK(lo >= 0 && hi < weight.size(0), "embedding_bag: index out of range in self (indices span [", lo, ", ",
                 hi, "], the table has ", weight.size(0), " rows)");
  }
  KINDLE_CHECK(!per_sample_weights || mode == "sum", "embedding_bag: embedding_bag: per_sample_weights was not None. "
               "per_sample_weights is only supported for mode='sum' (got mode='", mode, "'). Please open a feature "
               "request on GitHub.");
  Tensor idx, bag;
  int64_t B;
  if (input.dim() == 2) {
    KINDLE_CHECK_VALUE(!offsets, "embedding_bag: if input is 2D, then offsets has to be None, as input is treated is a "
                       "mini-batch of fixed length sequences.");
    B = input.size(0);
    idx = input.reshape({-1});
    bag = arange(0, B, 1, kInt64, input.device()).unsqueeze(1).expand(input.sizes()).reshape({-1});
  } else {
    KINDLE_CHECK_VALUE(input.dim() == 1 && offsets && offsets->dim() == 1, "embedding_bag: input has to be 1D or 2D "
                       "Tensor, but got Tensor of dimension ", input.dim(), " (a 1D input needs 1D offsets)");
    idx = input;
    int64_t n = input.numel();
    Tensor off = offsets->to(kInt64);
    B = include_last_offset ? off.numel() - 1 : off.numel();
    KINDLE_CHECK(B >= 0 && (off.numel() == 0 || off.is_meta() || off.select(0, 0).item<int64_t>() == 0),
                 "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                 "position 0. However, got ", off.numel() && !off.is_meta() ? off.select(0, 0).item<int64_t>() : 0);
    if (off.numel() && !off.is_meta()) {
      int64_t last = off.select(0, -1).item<int64_t>();
      KINDLE_CHECK(last <= n, "embedding_bag: offsets[-1] can not be greater than input's length ", n,
                   " but got offsets[-1] of ", last);
    }
    // bag id of every index: count how many bag starts lie at or before each position
    Tensor starts = zeros({n + 1}, kInt64, idx.device());
    if (B > 1) starts.index_add_(0, off.narrow(0, 1, B - 1), ones({B - 1}, kInt64, idx.device()));
    bag = starts.narrow(0, 0, n).cumsum(0);
  }
  Tensor rows = embedding(idx, weight, padding_idx, max_norm, norm_type, false);  // (n, D)
  Tensor keep = padding_idx ? (idx != *padding_idx) : ones_like(idx, kBool);
  Tensor w = keep.to(weight.dtype());
  if (per_sample_weights) w = w * per_sample_weights->reshape({-1});
  if (mode == "max") {
    // rows of each bag laid out in a (B, longest bag) grid; empty slots and padding read -inf
    Tensor counts = zeros({B}, kInt64, idx.device()).index_add_(0, bag, ones_like(bag));
    int64_t longest = counts.numel() && !counts.is_meta() ? counts.max().item<int64_t>() : 0;  // (meta: any)
    Tensor first = counts.cumsum(0) - counts;                            // start of each bag
    Tensor slot = arange(0, idx.numel(), 1, kInt64, idx.device()) - first.index_select(0, bag);
    Tensor grid = full({B, std::max<int64_t>(longest, 1), weight.size(1)}, -std::numeric_limits<double>::infinity(),
                       weight.dtype(), weight.device());
    Tensor masked = where(keep.unsqueeze(1), rows, scalar_tensor_of(-std::numeric_limits<double>::infinity(), rows.dtype()));
    grid = grid.index_put({bag, slot}, masked, false);
    Tensor best = std::get<0>(grid.max(1));
    return where(isinf(best), zeros_like(best), best);  // empty bags give 0
  }
  Tensor out = zeros({B, weight.size(1)}, weight.dtype(), weight.device()).index_add(0, bag, rows * w.unsqueeze(1));
  if (mode == "mean") {
    Tensor counts = zeros({B}, weight.dtype(), weight.device()).index_add(0, bag, keep.to(weight.dtype()));
    out = out / clamp_min(counts, 1).unsqueeze(1);
  }
  return out;
}

Tensor one_hot(const Tensor& self, int64_t num_classes) {
  KINDLE_CHECK(self.dtype() == kInt64, "one_hot is only applicable to index tensor of type LongTensor (got ",
               self.dtype(), ")");
  if (self.numel() == 0) {
    KINDLE_CHECK(num_classes > 0, "one_hot: Can not infer total number of classes from empty tensor.");
  } else if (self.is_meta()) {  // the classes are values: only a given count sizes the result
    KINDLE_CHECK_NOT_IMPLEMENTED(num_classes > 0, "one_hot: a meta tensor needs num_classes (its values are unknown)");
  } else {
    KINDLE_CHECK((self >= 0).all().item<bool>(), "one_hot: Class values must be non-negative.");
    int64_t mx = self.max().item<int64_t>();
    if (num_classes == -1) num_classes = mx + 1;
    else KINDLE_CHECK(mx < num_classes, "one_hot: Class values must be smaller than num_classes.");
  }
  DimVector shape(self.sizes());
  shape.push_back(num_classes);
  Tensor out = zeros(shape, kInt64, self.device());
  return out.scatter_(-1, self.unsqueeze(-1), ones_like(self.unsqueeze(-1)));
}

Tensor pad(const Tensor& self, IntArrayRef pad, std::string_view mode, std::optional<double> value) {
  KINDLE_CHECK(pad.size() % 2 == 0, "pad: Padding length must be divisible by 2 (got ", pad.size(), ")");
  KINDLE_CHECK(int64_t(pad.size()) / 2 <= self.dim(), "pad: Padding length should be less than or equal to two times "
               "the input dimension but got padding length ", pad.size(), " and input of dimension ", self.dim());
  KINDLE_CHECK_NOT_IMPLEMENTED(mode == "constant" || mode == "reflect" || mode == "replicate" || mode == "circular",
                               "pad: Unrecognised padding mode ", mode,
                               " (expected 'constant', 'reflect', 'replicate' or 'circular')");
  size_t np = pad.size() / 2;
  if (mode == "constant") {
    // Negative pads crop; then the input goes into a region of a tensor filled with `value`.
    Tensor x = self;
    DimVector shape(self.sizes());
    for (size_t k = 0; k < np; ++k) {
      int64_t d = self.dim() - 1 - int64_t(k), lo = pad[2 * k], hi = pad[2 * k + 1];
      int64_t n = x.size(d);
      int64_t start = lo < 0 ? -lo : 0, stop = hi < 0 ? n + hi : n;
      // Cropping comes first, and must leave a size >= 0 (PyTorch narrows, then pads).
      KINDLE_CHECK(stop - start >= 0, "pad: narrow(): length must be non-negative (dimension ", d, " of size ", n,
                   " cropped by ", -std::min<int64_t>(lo, 0), " and ", -std::min<int64_t>(hi, 0), ")");
      x = x.narrow(d, start, stop - start);
      shape[size_t(d)] = x.size(d) + std::max<int64_t>(lo, 0) + std::max<int64_t>(hi, 0);
    }
    // The fill value must fit the dtype where it is used (some pad is positive), as PyTorch checks.
    Scalar fill(value.value_or(0.0));
    if (std::any_of(pad.begin(), pad.end(), [](int64_t p) { return p > 0; })) check_scalar_fits(fill, self.dtype(), "pad");
    Tensor out = empty_tensor(shape, self.dtype(), self.device());
    out.fill_(scalar_to_tensor(fill));
    Tensor region = out;
    for (size_t k = 0; k < np; ++k) {
      int64_t d = self.dim() - 1 - int64_t(k);
      region = region.narrow(d, std::max<int64_t>(pad[2 * k], 0), x.size(d));
    }
    region.copy_(x);
    return out;
  }
  KINDLE_CHECK_NOT_IMPLEMENTED(!value || *value == 0, "pad: Padding mode \"", mode,
                               "\" doesn't take in value argument");
  // PyTorch's non-constant modes pad the last 1, 2 or 3 dims of an input with one or two batch dims.
  KINDLE_CHECK_NOT_IMPLEMENTED(np >= 1 && np <= 3 && (self.dim() == int64_t(np) + 1 || self.dim() == int64_t(np) + 2),
                               "pad: Padding size ", pad.size(), " is not supported for ", self.dim(),
                               "D input tensor. Supported combinations for non-constant padding: 2D or 3D input with "
                               "padding size 2, 3D or 4D input with 4, 4D or 5D input with 6");
  if (mode != "circular") {
    KINDLE_CHECK_NOT_IMPLEMENTED(self.dtype() != kBool, "pad: \"", mode == "reflect" ? "reflection" : "replication",
                                 "_pad", np, "d\" not implemented for 'Bool'");
  }
  if (mode != "circular")
    for (int64_t d = self.dim() == int64_t(np) + 2 ? 1 : 0; d < self.dim(); ++d)
      KINDLE_CHECK(self.size(d) > 0, "pad: Expected a ", np + 1, "D or ", np + 2, "D (batch mode) tensor with possibly 0 "
                   "batch size and other non-zero dimensions for input, but got: ", self.sizes());
  if (mode != "circular") {
    // PyTorch: a 1-d padding needs an output of at least one element; 2-d and 3-d ones need one
    // output dim of at least one, and none negative.
    bool any_positive = false;
    for (size_t k = 0; k < np; ++k) {
      int64_t d = self.dim() - 1 - int64_t(k), o = self.size(d) + pad[2 * k] + pad[2 * k + 1];
      KINDLE_CHECK(o >= 0, "pad: input (size ", self.size(d), " at dimension ", d, ") is too small. Calculated "
                   "output size: ", o);
      any_positive = any_positive || o >= 1;
    }
    KINDLE_CHECK(any_positive, "pad: input ", self.sizes(), " is too small for padding ", pad,
                 ": every calculated output size is 0");
  }
  // Non-negative pads: one gather kernel (and its adjoint for the gradient).
  if (std::all_of(pad.begin(), pad.end(), [](int64_t p) { return p >= 0; })) {
    for (size_t k = 0; k < np; ++k) {
      int64_t d = self.dim() - 1 - int64_t(k), lo = pad[2 * k], hi = pad[2 * k + 1], n = self.size(d);
      if (mode == "reflect")
        KINDLE_CHECK(lo < n && hi < n, "pad: Padding size should be less than the corresponding input dimension, but "
                     "got: padding (", lo, ", ", hi, ") at dimension ", d, " of input ", self.sizes());
      if (mode == "circular") {
        KINDLE_CHECK(lo <= n && hi <= n, "pad: Padding value causes wrapping around more than once.");
        KINDLE_CHECK(n > 0 || (lo <= 0 && hi <= 0), "pad: input dimension ", d, " is empty and cannot be padded in ",
                     "circular mode");
      }
    }
    return _pad_gather(self, pad, mode);
  }
  // reflect / replicate / circular with some negative pad: gather along each padded dim with computed source indices.
  Tensor x = self;
  for (size_t k = 0; k < np; ++k) {
    int64_t d = self.dim() - 1 - int64_t(k), lo = pad[2 * k], hi = pad[2 * k + 1];
    if (mode != "circular") {
      // reflect/replicate read the uncropped input: output j is input j - lo, reflected or clamped
      int64_t n = x.size(d);
      if (mode == "reflect")
        KINDLE_CHECK(lo < n && hi < n, "pad: Padding size should be less than the corresponding input dimension, but "
                     "got: padding (", lo, ", ", hi, ") at dimension ", d, " of input ", self.sizes());
      Tensor i = arange(-lo, n + hi, 1, kInt64, self.device());
      if (mode == "replicate") {
        i = clamp(i, 0, n - 1);
      } else {  // reflect about the edges, without repeating them
        Tensor period = scalar_to_tensor(std::max<int64_t>(2 * (n - 1), 1));
        Tensor m = remainder(i, period);
        i = where(m >= n, (2 * (n - 1)) - m, m);
      }
      x = x.index_select(d, i);
      continue;
    }
    // circular: negative pads crop first; the positive ones then wrap the cropped tensor
    if (lo < 0 || hi < 0) {
      int64_t n0 = x.size(d), a = std::max<int64_t>(-lo, 0), b = std::max<int64_t>(-hi, 0);
      KINDLE_CHECK(n0 - a - b >= 0, "pad: negative padding (", lo, ", ", hi, ") is larger than dimension ", d,
                   " of size ", n0);
      x = x.narrow(d, a, n0 - a - b);
      lo = std::max<int64_t>(lo, 0);
      hi = std::max<int64_t>(hi, 0);
    }
    int64_t n = x.size(d);
    KINDLE_CHECK(lo <= n && hi <= n, "pad: Padding value causes wrapping around more than once.");
    KINDLE_CHECK(n > 0 || (lo <= 0 && hi <= 0), "pad: input dimension ", d, " is empty and cannot be padded in ",
                 "circular mode");
    Tensor i = remainder(arange(-lo, n + hi, 1, kInt64, self.device()), scalar_to_tensor(n));
    x = x.index_select(d, i);
  }
  return x;
}

namespace {
// The gather's geometry: the input seen as (planes, d, h, w) with its last np dims padded, and
// each padded dim's source index per output position (reflected, clamped or wrapped).
PadGather pad_geometry(IntArrayRef in_sizes, IntArrayRef pad, std::string_view mode) {
  const int64_t nd = int64_t(in_sizes.size()), np = int64_t(pad.size()) / 2;
  PadGather g;
  int64_t dims[3] = {1, 1, 1};  // d, h, w of the padded dims (right-aligned)
  for (int64_t k = 0; k < np; ++k) dims[2 - k] = in_sizes[size_t(nd - 1 - k)];
  for (int64_t d = 0; d < nd - np; ++d) g.planes *= in_sizes[size_t(d)];
  g.in_d = dims[0], g.in_h = dims[1], g.in_w = dims[2];
  std::vector<int64_t>* src[3] = {&g.z_src, &g.y_src, &g.x_src};
  for (int64_t j = 0; j < 3; ++j) {
    int64_t k = 2 - j;  // pad pair index for this dim
    int64_t lo = k < np ? pad[size_t(2 * k)] : 0, hi = k < np ? pad[size_t(2 * k + 1)] : 0, n = dims[j];
    for (int64_t o = -lo; o < n + hi; ++o) {
      int64_t i = o;
      if (mode == "replicate") {
        i = std::clamp<int64_t>(o, 0, n - 1);
      } else if (mode == "reflect") {
        int64_t period = std::max<int64_t>(2 * (n - 1), 1);
        int64_t m = ((o % period) + period) % period;
        i = m >= n ? period - m : m;
      } else {
        i = ((o % n) + n) % n;
      }
      src[j]->push_back(i);
    }
    if (j == 2) g.x_lo = lo;
  }
  return g;
}
}  // namespace

Tensor native__pad_gather(const Tensor& self, IntArrayRef pad, std::string_view mode) {
  PadGather g = pad_geometry(self.sizes(), pad, mode);
  DimVector shape(self.sizes());
  for (size_t k = 0; k < pad.size() / 2; ++k) shape[shape.size() - 1 - k] += pad[2 * k] + pad[2 * k + 1];
  Tensor x = self.contiguous();
  Tensor out = empty_tensor(shape, self.dtype(), self.device());
  if (out.numel() && x.numel()) pad_gather_stub[self.device()](x, out, g);
  return out;
}

Tensor native__pad_gather_backward(const Tensor& grad, IntArrayRef input_size, IntArrayRef pad, std::string_view mode) {
  PadGather g = pad_geometry(input_size, pad, mode);
  Tensor gi = empty_tensor(input_size, grad.dtype(), grad.device());
  if (gi.numel()) pad_scatter_stub[grad.device()](grad.contiguous(), gi, g);
  return gi;
}

Tensor pixel_shuffle(const Tensor& self, int64_t upscale_factor) {
  int64_t r = upscale_factor;
  KINDLE_CHECK(self.dim() >= 3, "pixel_shuffle expects input to have at least 3 dimensions, but got input with ",
               self.dim(), " dimension(s)");
  KINDLE_CHECK(r > 0, "pixel_shuffle expects a positive upscale_factor, but got ", r);
  int64_t r2;
  KINDLE_CHECK_VALUE(!__builtin_mul_overflow(r, r, &r2), "pixel_shuffle: upscale factor is too large, "
                     "(upscale_factor)^2 overflowed: upscale_factor=", r);
  int64_t c = self.size(-3), h = self.size(-2), w = self.size(-1);
  KINDLE_CHECK(c % (r * r) == 0, "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square "
               "of upscale_factor, but input.size(-3)=", c, " is not divisible by ", r * r);
  DimVector lead(self.sizes().slice(0, size_t(self.dim() - 3)));
  DimVector s1(lead), out(lead);
  for (int64_t v : {c / (r * r), r, r, h, w}) s1.push_back(v);
  for (int64_t v : {c / (r * r), h * r, w * r}) out.push_back(v);
  int64_t b = int64_t(lead.size());
  DimVector perm;
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  for (int64_t v : {b, b + 3, b + 1, b + 4, b + 2}) perm.push_back(v);
  return self.reshape(s1).permute(perm).reshape(out);
}

// (N, g*k, *) -> (N, k*g, *): a view as (N, g, k, *), dims 1 and 2 swapped, flattened back.
Tensor channel_shuffle(const Tensor& self, int64_t groups) {
  KINDLE_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with sizes ", self.sizes());
  KINDLE_CHECK(groups > 0, "channel_shuffle: Number of groups to divide channels in must be positive. Value of "
               "groups:", groups);
  const int64_t n = self.size(0), c = self.size(1);
  KINDLE_CHECK(c % groups == 0, "channel_shuffle: Number of channels must be divisible by groups. Got ", c,
               " channels and ", groups, " groups.");
  DimVector grouped{n, groups, c / groups}, out{n, c};
  for (int64_t d = 2; d < self.dim(); ++d) {
    grouped.push_back(self.size(d));
    out.push_back(self.size(d));
  }
  return self.reshape(grouped).transpose(1, 2).reshape(out);
}

Tensor pixel_unshuffle(const Tensor& self, int64_t downscale_factor) {
  int64_t r = downscale_factor;
  KINDLE_CHECK(self.dim() >= 3, "pixel_unshuffle expects input to have at least 3 dimensions, but got input with ",
               self.dim(), " dimension(s)");
  KINDLE_CHECK(r > 0, "pixel_unshuffle expects a positive downscale_factor, but got ", r);
  int64_t r2;
  KINDLE_CHECK_VALUE(!__builtin_mul_overflow(r, r, &r2), "pixel_unshuffle: downscale factor is too large, "
                     "(downscale_factor)^2 overflowed: downscale_factor=", r);
  int64_t c = self.size(-3), h = self.size(-2), w = self.size(-1);
  KINDLE_CHECK(h % r == 0 && w % r == 0, "pixel_unshuffle expects height and width to be divisible by "
               "downscale_factor, but input.size(-2)=", h, " and input.size(-1)=", w, " for downscale_factor ", r);
  DimVector lead(self.sizes().slice(0, size_t(self.dim() - 3)));
  DimVector s1(lead), out(lead);
  for (int64_t v : {c, h / r, r, w / r, r}) s1.push_back(v);
  for (int64_t v : {c * r * r, h / r, w / r}) out.push_back(v);
  int64_t b = int64_t(lead.size());
  DimVector perm;
  for (int64_t i = 0; i < b; ++i) perm.push_back(i);
  for (int64_t v : {b, b + 2, b + 4, b + 1, b + 3}) perm.push_back(v);
  return self.reshape(s1).permute(perm).reshape(out);
}

}  // namespace kindle
