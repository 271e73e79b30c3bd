// The kernel stubs (ops/*kernels.h), defined once here, below every device: each device's folder
// registers its kernels into them (csrc/cpu/ once per instruction set, the chosen set only; see
// kindle/cpu_capability.h), and the ops call through them.
#include "ops/activation_kernels.h"
#include "ops/attention_kernels.h"
#include "ops/fft_kernels.h"
#include "ops/kernels.h"
#include "ops/loss_kernels.h"
#include "ops/norm_kernels.h"
#include "ops/optim_kernels.h"
#include "ops/grid_sample_kernels.h"
#include "ops/pad_kernels.h"
#include "ops/rnn_kernels.h"
#include "ops/scan_kernels.h"
#include "ops/triangle_kernels.h"

namespace kindle {

// filled by csrc/cpu/activation.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, bool)> gelu_backward_stub{"gelu_backward"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, int64_t, int64_t, bool)> softmax_backward_stub{
    "softmax_backward"};

// filled by csrc/cpu/attention.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const AttentionGeom&)>
    flash_attention_stub{"scaled_dot_product_attention"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                    const Tensor&, const Tensor&, const Tensor&, const AttentionGeom&)>
    flash_attention_backward_stub{"scaled_dot_product_attention_backward"};

// filled by csrc/cpu/binary.cpp
KernelStub<void (*)(TensorIter&, BinaryOp)> binary_stub{"binary"};
KernelStub<void (*)(TensorIter&, const Scalar&)> add_alpha_stub{"add"};
KernelStub<void (*)(TensorIter&)> copy_stub{"copy_"};
KernelStub<void (*)(TensorIter&)> where_stub{"where"};
KernelStub<void (*)(TensorIter&, const Scalar&)> fill_stub{"fill_"};
KernelStub<void (*)(TensorIter&, ParamOp, const double*)> param_stub{"elementwise"};

// filled by csrc/cpu/blas.cpp
KernelStub<void (*)(DType, const GemmArgs*, int64_t, int64_t, int64_t, int64_t)> gemm_stub{"matmul"};

// filled by csrc/cpu/conv2d.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor*, const Tensor&, const ConvGeom&)> conv2d_stub{"conv2d"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const ConvGeom&)> conv2d_backward_input_stub{
    "conv2d_backward_input"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const ConvGeom&)> conv2d_backward_weight_stub{
    "conv2d_backward_weight"};

// filled by csrc/cpu/fft.cpp
KernelStub<void (*)(FftKind, const Tensor&, const Tensor&, IntArrayRef, bool, double)> fft_stub{"fft"};

// filled by csrc/cpu/im2col.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const WindowGeom&)> im2col_stub{"im2col"};
KernelStub<void (*)(const Tensor&, const Tensor&, const WindowGeom&)> col2im_stub{"col2im"};

// filled by csrc/cpu/index.cpp
KernelStub<void (*)(const Tensor&, const Tensor*, const Tensor&)> bincount_stub{"bincount"};
KernelStub<void (*)(TensorIter&, const IndexDims&)> index_stub{"index"};
KernelStub<void (*)(TensorIter&, const IndexDims&, PutReduce)> index_put_stub{"index_put_"};

// filled by csrc/cpu/lapack.cpp
KernelStub<void (*)(Lapack, const LapackArgs&)> lapack_stub{"linalg"};

// filled by csrc/cpu/loss.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, int64_t, const Tensor&, const Tensor&)> cross_entropy_stub{
    "cross_entropy"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&)>
    cross_entropy_backward_stub{"cross_entropy_backward"};

// filled by csrc/cpu/lstm.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&)> lstm_pointwise_stub{"lstm_cell"};
KernelStub<void (*)(const Tensor*, const Tensor*, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                    const Tensor&)> lstm_pointwise_backward_stub{"lstm_cell_backward"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool)>
    lstm_recurrence_stub{"lstm_recurrence"};
KernelStub<void (*)(const Tensor*, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                    const Tensor&, const Tensor&, bool)>
    lstm_recurrence_backward_stub{"lstm_recurrence_backward"};

// filled by csrc/cpu/norm.cpp
KernelStub<void (*)(const Tensor&, const Tensor*, const Tensor*, const Tensor&, const Tensor&, const Tensor&,
                    const RowsGeom&)> layer_norm_stub{"layer_norm"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor*, const Tensor&,
                    const Tensor*, const Tensor*, const RowsGeom&)> layer_norm_backward_input_stub{"layer_norm_backward"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool,
                    const RowsGeom&)> layer_norm_backward_param_stub{"layer_norm_backward"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const ChannelsGeom&)> batch_norm_stats_stub{
    "batch_norm"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor*, const Tensor*, const Tensor&,
                    const ChannelsGeom&)> batch_norm_apply_stub{"batch_norm"};
KernelStub<void (*)(const std::vector<Tensor>&, const Tensor&, const Tensor&, const Tensor*, const Tensor*,
                    const Tensor&, const ChannelsGeom&, double, double)> batch_norm_apply_parts_stub{
    "_cat_batch_norm_clamp"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                    const ChannelsGeom&)> batch_norm_reduce_stub{"batch_norm_backward"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor*, const Tensor*,
                    const Tensor*, const Tensor&, const ChannelsGeom&)> batch_norm_backward_input_stub{
    "batch_norm_backward"};

// filled by csrc/cpu/optim.cpp
KernelStub<void (*)(const FusedStepArgs&)> fused_step_stub{"fused optimizer step"};

// filled by csrc/cpu/grid_sample.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const GridSampleArgs&)> grid_sample_stub{
    "grid_sampler"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const GridSampleArgs&)>
    grid_sample_backward_stub{"grid_sampler_backward"};

// filled by csrc/cpu/pad.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const PadGather&)> pad_gather_stub{"pad"};
KernelStub<void (*)(const Tensor&, const Tensor&, const PadGather&)> pad_scatter_stub{"pad_backward"};

// filled by csrc/cpu/pool.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, const WindowGeom&)> max_pool2d_stub{"max_pool2d"};
KernelStub<void (*)(const Tensor&, const Tensor&, const WindowGeom&, AvgPoolOptions)> avg_pool2d_stub{"avg_pool2d"};
KernelStub<void (*)(const Tensor&, const Tensor&, const WindowGeom&, AvgPoolOptions)> avg_pool2d_backward_stub{
    "avg_pool2d_backward"};

// filled by csrc/cpu/random.cpp
KernelStub<void (*)(const Tensor&, const RandomArgs&, GeneratorImpl&)> random_stub{"random"};
KernelStub<void (*)(const Tensor&, GeneratorImpl&)> randperm_stub{"randperm"};
KernelStub<void (*)(const Tensor&, const Tensor&, GeneratorImpl&)> multinomial_stub{"multinomial"};
KernelStub<void (*)(const Tensor&, double, double, double, bool)> range_stub{"arange"};
KernelStub<void (*)(const Tensor&, double, double, double)> logspace_stub{"logspace"};

// filled by csrc/cpu/reduce.cpp
KernelStub<void (*)(const ReducePlan&, ReduceOp)> reduce_stub{"reduce"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, bool)> arg_reduce_stub{"argmax"};
KernelStub<void (*)(const Tensor&, const Tensor&, bool)> softmax_stub{"softmax"};
KernelStub<void (*)(const Tensor&, const Tensor&, bool)> scan_stub{"cumsum"};
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, bool)> sort_stub{"sort"};

// filled by csrc/cpu/scan.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor&, bool)> cum_extreme_stub{"cummax"};
KernelStub<void (*)(const Tensor&, const Tensor&)> logcumsumexp_stub{"logcumsumexp"};

// filled by csrc/cpu/search.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, const Tensor*, const Tensor&, bool)> searchsorted_stub{"searchsorted"};

// filled by csrc/cpu/special.cpp
KernelStub<void (*)(TensorIter&, SpecialOp, const double*)> special_stub{"special"};

// filled by csrc/cpu/triangle.cpp
KernelStub<void (*)(const Tensor&, const Tensor&, int64_t, bool)> triangle_stub{"tril/triu"};

// filled by csrc/cpu/unary.cpp
KernelStub<void (*)(TensorIter&, UnaryOp)> unary_stub{"unary"};

}  // namespace kindle
