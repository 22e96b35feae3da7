"""Loss outputs and gradient controls whose gradients are MXNet's own, not autograd's.

SoftmaxOutput and the regression outputs ignore the head gradient and return their own
(normalised) gradient; MakeLoss returns a constant gradient; BlockGrad stops it. Each is a
torch.autograd.Function, so the executor's single autograd call produces MXNet's numbers.
"""
import torch

from .params import Bool, Enum, Float
from .registry import OpDef, register
from .shapes import first, merge, prod, same_shape


# ---------------------------------------------------------------------------------------------
# SoftmaxOutput
# ---------------------------------------------------------------------------------------------
def _softmax_layout(p, data):
    """(probabilities, class axis) for SoftmaxOutput's three layouts."""
    if p.multi_output:
        return torch.softmax(data, dim=1), 1
    if p.preserve_shape:
        return torch.softmax(data, dim=-1), data.dim() - 1
    flat = data.reshape(data.shape[0], -1)
    return torch.softmax(flat, dim=1).reshape(data.shape), None


def _softmax_output_grad(p, prob, label):
    if label.shape == prob.shape:                       # label is a distribution
        return (prob - label) * p.grad_scale
    if p.multi_output:
        n, k = prob.shape[0], prob.shape[1]
        lab = label.reshape(n, -1).long()
        probs = prob.reshape(n, k, -1)
        axis, spatial = 1, probs.shape[2]
    elif p.preserve_shape:
        k = prob.shape[-1]
        probs = prob.reshape(-1, k)
        lab = label.reshape(-1).long()
        axis, spatial = 1, 1
    else:
        n = prob.shape[0]
        probs = prob.reshape(n, -1)
        k = probs.shape[1]
        lab = label.reshape(-1)[:n].long()            # MXNet reads the first n labels
        axis, spatial = 1, 1
    valid_label = (lab >= 0) & (lab < k)
    target = torch.zeros_like(probs)
    if p.smooth_alpha > 0:
        target += p.smooth_alpha / (k - 1)
        on = 1.0 - p.smooth_alpha
    else:
        on = 1.0
    onehot = torch.zeros_like(probs).scatter_(axis, lab.clamp(0, k - 1).unsqueeze(axis),
                                              1.0) * valid_label.unsqueeze(axis)
    target = torch.where(onehot > 0, torch.full_like(probs, on), target)
    grad = probs - target
    not_ignored = lab != int(p.ignore_label)
    if p.use_ignore:
        grad = grad * not_ignored.unsqueeze(axis).to(grad.dtype)
    if p.normalization == 'valid':
        scale = p.grad_scale / max(1, int(not_ignored.sum()))
    elif p.normalization == 'batch':
        scale = p.grad_scale / (label.numel() if not p.multi_output else spatial * prob.shape[0])
    else:
        scale = p.grad_scale / spatial if p.multi_output else p.grad_scale
    return (grad * scale).reshape(prob.shape)


class _SoftmaxOutputFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, data, label, p):
        prob, _ = _softmax_layout(p, data)
        ctx.p = p
        ctx.save_for_backward(prob, label)
        return prob

    @staticmethod
    def backward(ctx, head_grad):
        prob, label = ctx.saved_tensors
        grad = _softmax_output_grad(ctx.p, prob, label)
        if ctx.p.out_grad:
            grad = grad * head_grad
        return grad, None, None


def _softmax_output(p, data, label):
    """Softmax probabilities; backward gives (p - onehot(label)) scaled, ignoring head grads."""
    if torch.is_grad_enabled() and data.requires_grad:
        return _SoftmaxOutputFn.apply(data, label, p)
    return _softmax_layout(p, data)[0]


def _softmax_output_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    label = ins[1]
    if data is not None:
        if p.multi_output:
            want = (data[0],) + tuple(data[2:])
            if label is None or (tuple(label) != tuple(data) and prod(label) != prod(want)):
                label = merge(label, want)
        elif p.preserve_shape or len(data) > 1:
            if label is None or tuple(label) != tuple(data):
                label = merge(label, tuple(data[:-1]))
    return [data, label], [data]


def _label_type(p, ins, outs):
    dt = first(ins[0], outs[0])
    return [dt, first(ins[1], dt)], [dt]


register(OpDef('SoftmaxOutput', _softmax_output,
               params={'grad_scale': Float(1.0), 'ignore_label': Float(-1.0),
                       'multi_output': Bool(False), 'use_ignore': Bool(False),
                       'preserve_shape': Bool(False),
                       'normalization': Enum(('batch', 'null', 'valid'), 'null'),
                       'out_grad': Bool(False), 'smooth_alpha': Float(0.0)},
               inputs=('data', 'label'), head_grad='ignored',
               infer_shape=_softmax_output_shape, infer_type=_label_type,
               aliases=('Softmax',)))


# ---------------------------------------------------------------------------------------------
# Regression outputs
# ---------------------------------------------------------------------------------------------
class _RegressionFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, data, label, kind, grad_scale):
        out = torch.sigmoid(data) if kind == 'logistic' else data.clone()
        ctx.kind, ctx.grad_scale = kind, grad_scale
        ctx.save_for_backward(out, label)
        return out

    @staticmethod
    def backward(ctx, head_grad):
        out, label = ctx.saved_tensors
        num_output = label.numel() // label.shape[0] if label.dim() else 1
        diff = out - label.reshape(out.shape).to(out.dtype)
        if ctx.kind == 'mae':
            diff = torch.where(diff > 0, torch.ones_like(diff), -torch.ones_like(diff))
        return diff * (ctx.grad_scale / num_output), None, None, None


def _regression(kind):
    def forward(p, data, label):
        if torch.is_grad_enabled() and data.requires_grad:
            return _RegressionFn.apply(data, label, kind, p.grad_scale)
        return torch.sigmoid(data) if kind == 'logistic' else data.clone()
    forward.__doc__ = ('%s regression output: the forward is %s; backward gives '
                       'grad_scale / num_output * (out - label)%s, ignoring head gradients.'
                       % (kind.capitalize(), 'sigmoid' if kind == 'logistic' else 'identity',
                          ' * sign' if kind == 'mae' else ''))
    return forward


def _regression_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    label = ins[1]
    if data is not None and label is None:
        label = (data[0],) if len(data) == 2 and data[1] == 1 else data
    return [data, label], [data]


for _name, _kind in (('LinearRegressionOutput', 'linear'), ('LogisticRegressionOutput', 'logistic'),
                     ('MAERegressionOutput', 'mae')):
    register(OpDef(_name, _regression(_kind), params={'grad_scale': Float(1.0)},
                   inputs=('data', 'label'), head_grad='ignored',
                   infer_shape=_regression_shape, infer_type=_label_type))


# ---------------------------------------------------------------------------------------------
# MakeLoss, make_loss, BlockGrad
# ---------------------------------------------------------------------------------------------
class _ConstantGradFn(torch.autograd.Function):
    """Identity forward; backward returns a constant-filled gradient (per MakeLoss rules)."""
    @staticmethod
    def forward(ctx, data, p):
        ctx.p = p
        ctx.save_for_backward(data)
        return data.clone()

    @staticmethod
    def backward(ctx, head_grad):
        (data,) = ctx.saved_tensors
        p = ctx.p
        if p is None:
            return torch.ones_like(data), None
        if p.normalization == 'batch':
            scale = p.grad_scale / max(1, data.numel() // data.shape[-1])
        elif p.normalization == 'valid':
            scale = p.grad_scale / max(1, int((data > p.valid_thresh).sum()))
        else:
            scale = p.grad_scale
        return torch.full_like(data, scale), None


def _make_loss(p, data):
    """Identity; its gradient is grad_scale (normalised by batch or valid count)."""
    return _ConstantGradFn.apply(data, p) if data.requires_grad else data.clone()


def _make_loss_lower(p, data):
    """Identity whose gradient is ones (the output is named <name>_loss)."""
    return _ConstantGradFn.apply(data, None) if data.requires_grad else data.clone()


register(OpDef('MakeLoss', _make_loss,
               params={'grad_scale': Float(1.0), 'valid_thresh': Float(0.0),
                       'normalization': Enum(('batch', 'null', 'valid'), 'null')},
               head_grad='ignored', infer_shape=same_shape))
register(OpDef('make_loss', _make_loss_lower, outputs=('loss',), head_grad='ignored',
               infer_shape=same_shape))


def _block_grad(p, data):
    """Identity whose gradient is zero."""
    return data.detach()


register(OpDef('BlockGrad', _block_grad, head_grad='zero', infer_shape=same_shape,
               aliases=('stop_gradient',)))
