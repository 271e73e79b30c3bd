// Fused activation backward kernels (csrc/cpu/activation.cpp): one pass instead of the
// composite formula's chain of elementwise ops. Contiguous float32/float64 tensors of one shape.
#pragma once
#include "ops/kernels.h"

namespace kindle {

// grad * f'(self) for the activations whose ParamOp has a ...Grad form, through param_stub (any
// float dtype and strides; grad and self of one dtype). The formulas (autograd/formulas.cpp) use
// it for first-order gradients and keep their differentiable composites for double backward.
Tensor param_backward(const char* name, const Tensor& grad, const Tensor& self, ParamOp op,
                      std::initializer_list<double> p);

// grad_input = grad * gelu'(x); tanh selects the tanh approximation.
extern KernelStub<void (*)(const Tensor& grad, const Tensor& x, const Tensor& grad_input, bool tanh)>
    gelu_backward_stub;

// Over the rows of (rows, cols) matrices, with y the forward's output: softmax's input gradient
// y * (g - sum(g * y)), or log_softmax's g - exp(y) * sum(g).
extern KernelStub<void (*)(const Tensor& grad, const Tensor& y, const Tensor& grad_input, int64_t rows, int64_t cols,
                           bool log)>
    softmax_backward_stub;

}  // namespace kindle
