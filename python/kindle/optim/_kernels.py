"""The fused optimizer steps (kindle._C._optim): one call updates every parameter of a group.

TEMPORARY: until the C++ kernels are built, this module supplies stand-ins with the same
signatures, written with kindle tensor ops after torch's single-tensor algorithms. They exist
only so the optimizer classes can be written and tested now; delete them once _C._optim lands.
"""
import kindle
from kindle import _C

_optim = getattr(_C, "_optim", None)


def _sgd_step(params, grads, momentum_buffers, lr, momentum, dampening, weight_decay,
              nesterov, maximize):
    out = list(momentum_buffers)
    for i, (param, grad) in enumerate(zip(params, grads)):
        grad = grad.neg() if maximize else grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        if momentum != 0:
            buf = out[i]
            if buf is None:
                buf = grad.detach().clone()
                out[i] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - dampening)
            grad = grad.add(buf, alpha=momentum) if nesterov else buf
        param.add_(grad, alpha=-lr)
    return out


def _adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2,
               eps, weight_decay, amsgrad, maximize, decoupled_weight_decay):
    for i, param in enumerate(params):
        grad = grads[i].neg() if maximize else grads[i]
        exp_avg, exp_avg_sq, step = exp_avgs[i], exp_avg_sqs[i], steps[i]
        if weight_decay != 0:
            if decoupled_weight_decay:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if amsgrad:
            max_exp_avg_sqs[i].copy_(kindle.maximum(max_exp_avg_sqs[i], exp_avg_sq))
            denom = (max_exp_avg_sqs[i].sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        param.addcdiv_(exp_avg, denom, value=-step_size)


def _rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers, lr, alpha, eps,
                  weight_decay, momentum, centered, maximize):
    for i, param in enumerate(params):
        grad = grads[i].neg() if maximize else grads[i]
        square_avg = square_avgs[i]
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        if centered:
            grad_avg = grad_avgs[i]
            grad_avg.lerp_(grad, 1 - alpha)
            avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
        else:
            avg = square_avg.sqrt()
        avg = avg.add_(eps)
        if momentum > 0:
            buf = momentum_buffers[i]
            buf.mul_(momentum).addcdiv_(grad, avg)
            param.add_(buf, alpha=-lr)
        else:
            param.addcdiv_(grad, avg, value=-lr)


def _adagrad_step(params, grads, state_sums, steps, lr, lr_decay, weight_decay, eps, maximize):
    for param, grad, state_sum, step in zip(params, grads, state_sums, steps):
        grad = grad.neg() if maximize else grad
        if weight_decay != 0:
            grad = grad.add(param, alpha=weight_decay)
        clr = lr / (1 + (step - 1) * lr_decay)
        state_sum.addcmul_(grad, grad, value=1)
        std = state_sum.sqrt().add_(eps)
        param.addcdiv_(grad, std, value=-clr)


if _optim is not None:
    sgd_step = _optim.sgd_step
    adam_step = _optim.adam_step
    rmsprop_step = _optim.rmsprop_step
    adagrad_step = _optim.adagrad_step
else:
    sgd_step, adam_step, rmsprop_step, adagrad_step = _sgd_step, _adam_step, _rmsprop_step, _adagrad_step
