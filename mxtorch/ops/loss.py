"""Loss outputs and gradient controls whose gradients are MXNet's own, not autograd's.

SoftmaxOutput and the regression outputs return their own (normalised) gradient and ignore the
head gradient; MakeLoss returns a constant gradient; BlockGrad stops it. Each attaches its
gradient with `attach_gradient`, in plain torch ops, so the executor's one autograd call yields
MXNet's numbers with no Python in the backward pass.
"""
import torch

from .params import Bool, Enum, Float
from .registry import OpDef, register
from .shapes import first, merge, prod, same_shape


def attach_gradient(value, x, grad):
    """`value` in the forward pass; in the backward its gradient w.r.t. x is `grad` (times the
    head gradient, which the executor sets to ones for loss outputs)."""
    if not (torch.is_grad_enabled() and x.requires_grad):
        return value
    return value.detach() + (x - x.detach()) * grad.detach()


# ---------------------------------------------------------------------------------------------
# SoftmaxOutput
# ---------------------------------------------------------------------------------------------
def _softmax_layout(p, data):
    """Probabilities for SoftmaxOutput's three layouts."""
    if p.multi_output:
        return torch.softmax(data, dim=1)
    if p.preserve_shape:
        return torch.softmax(data, dim=-1)
    return torch.softmax(data.reshape(data.shape[0], -1), dim=1).reshape(data.shape)


_CLASS_INDICES = {}


def _class_indices(k, device):
    """arange(k) as a (1, k, 1) row, cached: comparing labels with it gives the one-hot mask."""
    key = (k, device)
    row = _CLASS_INDICES.get(key)
    if row is None:
        row = _CLASS_INDICES[key] = torch.arange(k, device=device).reshape(1, k, 1)
    return row


def _softmax_output_grad(p, prob, label):
    """MXNet's SoftmaxOutput gradient w.r.t. data (before any head gradient)."""
    if label.shape == prob.shape:                       # label is a distribution
        return (prob - label) * p.grad_scale
    n = prob.shape[0]
    if p.multi_output:                                  # classes on axis 1, positions after it
        probs = prob.reshape(n, prob.shape[1], -1)
        lab = label.reshape(n, 1, -1)
    elif p.preserve_shape:                              # classes on the last axis
        probs = prob.reshape(-1, prob.shape[-1], 1)
        lab = label.reshape(-1, 1, 1)
    else:                                               # one class axis over the flattened rest
        probs = prob.reshape(n, -1, 1)
        lab = label.reshape(-1)[:n].reshape(n, 1, 1)    # MXNet reads the first n labels
    k, spatial = probs.shape[1], probs.shape[2]
    onehot = (_class_indices(k, prob.device) == lab.long()).to(prob.dtype)
    if p.smooth_alpha > 0:                               # target 1-a on the label, a/(k-1) off it
        off = p.smooth_alpha / (k - 1)
        grad = probs - off - onehot * (1.0 - p.smooth_alpha - off)
    else:
        grad = probs - onehot
    if p.use_ignore or p.normalization == 'valid':
        kept = lab != p.ignore_label
        if p.use_ignore:
            grad = grad * kept
    if p.normalization == 'valid':
        scale = p.grad_scale / max(1, int(kept.sum()))
    elif p.normalization == 'batch':
        scale = p.grad_scale / (spatial * n if p.multi_output else label.numel())
    else:
        scale = p.grad_scale / spatial if p.multi_output else p.grad_scale
    if scale != 1.0:
        grad = grad * scale
    return grad.reshape(prob.shape)


def _softmax_output(p, data, label):
    """Softmax probabilities; backward gives (p - onehot(label)) scaled, ignoring head grads
    (unless out_grad, which multiplies by them)."""
    with torch.no_grad():
        prob = _softmax_layout(p, data)
    return attach_gradient(prob, data, _softmax_output_grad(p, prob, label)) \
        if torch.is_grad_enabled() and data.requires_grad else prob


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
               inputs=('data', 'label'),
               head_grad=lambda p: 'required' if p.out_grad else 'ignored',
               infer_shape=_softmax_output_shape, infer_type=_label_type,
               aliases=('Softmax',)))


# ---------------------------------------------------------------------------------------------
# Regression outputs
# ---------------------------------------------------------------------------------------------
def _regression(kind):
    def forward(p, data, label):
        out = torch.sigmoid(data) if kind == 'logistic' else data
        if not (torch.is_grad_enabled() and data.requires_grad):
            return out if kind == 'logistic' else out.clone()
        num_output = label.numel() // label.shape[0] if label.dim() else 1
        diff = out.detach() - label.reshape(out.shape).to(out.dtype)
        if kind == 'mae':
            diff = torch.where(diff > 0, 1.0, -1.0).to(out.dtype)
        return attach_gradient(out, data, diff * (p.grad_scale / num_output))
    forward.__name__ = kind + '_regression_output'
    forward.__doc__ = ('%s regression output: the forward is %s; backward gives '
                       'grad_scale / num_output * (out - label)%s, ignoring head gradients.'
                       % (kind.capitalize(), 'sigmoid' if kind == 'logistic' else 'identity',
                          ' with sign' if kind == 'mae' else ''))
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
def _make_loss(p, data):
    """Identity; its gradient is grad_scale (normalised by batch or valid count)."""
    if not (torch.is_grad_enabled() and data.requires_grad):
        return data.clone()
    if p.normalization == 'batch':
        scale = p.grad_scale / max(1, data.numel() // data.shape[-1])
    elif p.normalization == 'valid':
        scale = p.grad_scale / max(1, int((data > p.valid_thresh).sum()))
    else:
        scale = p.grad_scale
    return attach_gradient(data, data, torch.full_like(data, scale))


def _make_loss_lower(p, data):
    """Identity whose gradient is ones (the output is named <name>_loss)."""
    if not (torch.is_grad_enabled() and data.requires_grad):
        return data.clone()
    return attach_gradient(data, data, torch.ones_like(data))


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
