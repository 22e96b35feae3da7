"""Neural-network layers: FullyConnected, Activation, BatchNorm, Dropout, Embedding, softmax."""

import numpy as np
import torch
import torch.nn.functional as F

from ..base import MXNetError, np_dtype, torch_dtype
from . import gemm
from .params import Bool, DType, Enum, Float, Int, Shape
from .registry import OpDef, register
from .shapes import first, merge, prod, same_shape


# ---------------------------------------------------------------------------------------------
# FullyConnected
# ---------------------------------------------------------------------------------------------
def _fully_connected(p, data, weight, bias=None):
    """out = x . W^T + b, x flattened to (N, -1) unless flatten=False (then on the last axis).
    The products run on PyTorch's GEMM or oneDNN's, whichever is faster for the shape (gemm.py)."""
    x = data.reshape(data.shape[0], -1) if p.flatten and data.dim() != 2 else data
    bias = bias if bias is None or bias.dim() == 1 else bias.reshape(-1)
    if x.dim() == 2:
        return gemm.linear(x, weight, bias)
    out = gemm.linear(x.reshape(-1, x.shape[-1]), weight, bias)
    return out.reshape(tuple(x.shape[:-1]) + (out.shape[-1],))


def _fc_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    if p.flatten:
        in_dim = prod(data[1:]) if all(data[1:]) else 0
        out = (data[0], p.num_hidden)
    else:
        in_dim = data[-1]
        out = tuple(data[:-1]) + (p.num_hidden,)
    out = merge(outs[0], out)
    data = merge(data, (out[0],) + tuple(data[1:])) if p.flatten else data
    new = [data, merge(ins[1], (p.num_hidden, in_dim))]
    if not p.no_bias:
        bias = ins[2]
        if bias is not None and len(bias) > 1 and prod(bias) == p.num_hidden:
            new.append(bias)           # MXNet takes any bias of num_hidden elements, e.g. (n, 1)
        else:
            new.append(merge(bias, (p.num_hidden,)))
    return new, [out]


register(OpDef('FullyConnected', _fully_connected,
               params={'num_hidden': Int(lower=1), 'no_bias': Bool(False), 'flatten': Bool(True)},
               inputs=lambda p: ('data', 'weight') if p.no_bias else ('data', 'weight', 'bias'),
               infer_shape=_fc_shape)).fresh_output = True


# ---------------------------------------------------------------------------------------------
# Activation
# ---------------------------------------------------------------------------------------------
_ACTIVATIONS = {
    'relu': torch.relu, 'sigmoid': torch.sigmoid, 'tanh': torch.tanh, 'softrelu': F.softplus,
    'softsign': F.softsign,
}


def _activation(p, data):
    """relu, sigmoid, tanh, softrelu = log(1 + e^x), softsign = x / (1 + |x|)."""
    return _ACTIVATIONS[p.act_type](data)


def _activation_act(p):
    """Activation(act_type='relu') is a ReLU (a fused convolution's post-operation)."""
    return ('relu', []) if p.act_type == 'relu' else None


_ACTIVATION = register(OpDef('Activation', _activation,
                             params={'act_type': Enum(('relu', 'sigmoid', 'softrelu', 'softsign',
                                                       'tanh'))},
                             infer_shape=same_shape))
_ACTIVATION.pointwise_act = _activation_act
_ACTIVATION.keeps_layout = lambda p: True


# ---------------------------------------------------------------------------------------------
# BatchNorm
# ---------------------------------------------------------------------------------------------
def fixed_gamma(gamma):
    """Ones in place of gamma (fix_gamma). Under recording gamma stays in the graph with a
    zero gradient: MXNet writes that zero, so the Parameter's gradient is fresh for Trainer."""
    return gamma.mul(0).add_(1) if gamma.requires_grad else torch.ones_like(gamma)


def _channels_last(x):
    """Whether x is 4-D data laid out channels-last (torch.channels_last), and only that."""
    return x.dim() == 4 and not x.is_contiguous() and \
        x.is_contiguous(memory_format=torch.channels_last)


class _ChannelsLastBatchNorm(torch.autograd.Function):
    """Training BatchNorm of channels-last 4-D data over its (N*H*W, C) rows, a view, with the
    batch statistics as exact as the channel-first kernel's: the mean, then the mean square of
    the centred rows (torch's channels-last kernel accumulates the sums row after row, its
    variance ~1e-4 relative off on 32K post-ReLU values a channel, the channel-first one 1e-7).
    The backward sums over the rows alike. Outputs (out, mean, inv_std), out channels-last."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):  # pylint: disable=arguments-differ
        n, c, h, w = x.shape
        rows = x.permute(0, 2, 3, 1).reshape(-1, c)
        mean = rows.mean(0)
        centered = rows - mean
        inv_std = torch.rsqrt(centered.square().mean(0).add_(eps))
        scale = weight * inv_std
        out = torch.addcmul(bias, centered, scale)
        ctx.save_for_backward(x, weight, bias, centered, inv_std, scale)
        ctx.eps = eps
        ctx.mark_non_differentiable(mean, inv_std)
        return out.view(n, h, w, c).permute(0, 3, 1, 2), mean, inv_std

    @staticmethod
    def backward(ctx, grad, _mean, _inv_std):  # pylint: disable=arguments-differ
        x, weight, bias, centered, inv_std, scale = ctx.saved_tensors
        if torch.is_grad_enabled():       # create_graph: the composite form, differentiable
            with torch.enable_grad():
                out = _batch_norm_composite(x, weight, bias, ctx.eps)
                wanted = [t for t, need in zip((x, weight, bias), ctx.needs_input_grad) if need]
                found = iter(torch.autograd.grad(out, wanted, grad, create_graph=True))
            return tuple(next(found) if need else None
                         for need in ctx.needs_input_grad[:3]) + (None,)
        n, c, h, w = x.shape
        rows = grad.contiguous(memory_format=torch.channels_last).permute(0, 2, 3, 1) \
            .reshape(-1, c)
        grad_bias = rows.sum(0)
        dot = (rows * centered).sum(0)                        # sum of grad * (x - mean)
        grad_x = None
        if ctx.needs_input_grad[0]:
            # scale * (grad - mean(grad) - (x - mean) * inv_std^2 * mean(grad * (x - mean)))
            m = rows.shape[0]
            grad_x = torch.addcmul(grad_bias * scale / -m, rows, scale)
            grad_x.addcmul_(centered, scale * inv_std * inv_std * dot / -m)
            grad_x = grad_x.view(n, h, w, c).permute(0, 3, 1, 2)
        return grad_x, dot * inv_std, grad_bias, None


def _batch_norm_composite(x, weight, bias, eps):
    """Training BatchNorm of 4-D x in differentiable torch operations (twice-differentiable
    gradients of the channels-last kernel)."""
    mean = x.mean((0, 2, 3), keepdim=True)
    centered = x - mean
    inv_std = torch.rsqrt(centered.square().mean((0, 2, 3), keepdim=True) + eps)
    return centered * inv_std * weight.view(1, -1, 1, 1) + bias.view(1, -1, 1, 1)


def _batch_norm(p, data, gamma, beta, moving_mean, moving_var, *, train):
    """Normalise over every axis but `axis`. Outputs (out, mean, inv_std); the last two are
    the batch statistics in training and the moving ones otherwise (MXNet's hidden outputs).
    Channels-last 4-D data over axis 1 (a training plan's activations between convolutions,
    plan.py) stays channels-last."""
    axis = p.axis % data.dim()
    weight = fixed_gamma(gamma) if p.fix_gamma else gamma
    if axis == 1 and _channels_last(data) and data.dtype in (torch.float32, torch.float64):
        if train and not p.use_global_stats:
            return _ChannelsLastBatchNorm.apply(data, weight, beta, p.eps)
        out = F.batch_norm(data, moving_mean, moving_var, weight, beta, False, 0.0, p.eps)
        return out, moving_mean, torch.rsqrt(moving_var + p.eps)
    # contiguous: torch's kernels sum a strided view (a slice, another axis) in another order,
    # and a bound graph's slice is a view where mx.nd.slice's result is a copy
    x = (data if axis == 1 else data.movedim(axis, 1)).contiguous()
    if train and not p.use_global_stats:
        out, mean, inv_std = torch.native_batch_norm(x, weight, beta, None, None, True, 0.0,
                                                     p.eps)
    else:
        out = F.batch_norm(x, moving_mean, moving_var, weight, beta, False, 0.0, p.eps)
        mean, inv_std = moving_mean, torch.rsqrt(moving_var + p.eps)
    if axis != 1:
        out = out.movedim(1, axis)
    return out, mean, inv_std


def _batch_norm_update_aux(p, aux, outputs):
    """Moving averages after a training pass, in place: moving = momentum * moving +
    (1 - momentum) * batch statistic (the biased batch variance, as MXNet). MXNet's momentum is
    a C float: 0.9 is 0.899999976 there, also for float64 statistics."""
    if p.use_global_stats:
        return
    moving_mean, moving_var = aux
    mean, inv_std = outputs[1], outputs[2]
    var = inv_std.pow(-2).sub_(p.eps)
    weight = 1 - float(np.float32(p.momentum))
    moving_mean.lerp_(mean.to(moving_mean.dtype), weight)
    moving_var.lerp_(var.to(moving_var.dtype), weight)


def _batch_norm_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    channels = data[p.axis % len(data)]
    vec = (channels,)
    return [data] + [merge(s, vec) for s in ins[1:]], [merge(outs[0], data), vec, vec]


def _batch_norm_type(p, ins, outs):
    dt = first(ins[0], outs[0])
    param = np_dtype('float32') if dt == np_dtype('float16') else dt
    return [dt] + [first(s, param) for s in ins[1:]], [dt, param, param]


def _batch_norm_affine(p):
    """At inference BatchNorm over axis 1 of x + bias is x * scale + shift per channel, with
    scale = gamma / sqrt(moving_var + eps) (gamma = 1 under fix_gamma) and
    shift = beta + (bias - moving_mean) * scale; None where it normalises another axis or
    shows its statistics."""
    if p.axis != 1 or p.output_mean_var:
        return None

    def affine(bias, gamma, beta, moving_mean, moving_var):
        scale = torch.rsqrt(moving_var + p.eps)
        if not p.fix_gamma:
            scale = scale * gamma
        return scale, beta + ((bias if bias is not None else 0) - moving_mean) * scale
    return affine


# eps is a double whose default MXNet writes as the float 1e-3f: 0.0010000000474974513
_BATCH_NORM = register(OpDef('BatchNorm', _batch_norm,
                       params={'eps': Float(float(np.float32(1e-3))), 'momentum': Float(0.9),
                               'fix_gamma': Bool(True),
                               'use_global_stats': Bool(False), 'output_mean_var': Bool(False),
                               'axis': Int(1), 'cudnn_off': Bool(False)},
                       inputs=('data', 'gamma', 'beta'), aux=('moving_mean', 'moving_var'),
                       outputs=('output', 'mean', 'var'),
                       visible_outputs=lambda p: 3 if p.output_mean_var else 1,
                       mode_dependent=True, update_aux=_batch_norm_update_aux,
                       infer_shape=_batch_norm_shape, infer_type=_batch_norm_type,
                       init_hints={'moving_mean': '["zero", {}]', 'moving_var': '["one", {}]'}))
_BATCH_NORM.fresh_output = True
_BATCH_NORM.keeps_layout = lambda p: True
_BATCH_NORM.inference_affine = _batch_norm_affine


# ---------------------------------------------------------------------------------------------
# Dropout
# ---------------------------------------------------------------------------------------------
def _dropout(p, data, *, train):
    """Training (or mode='always'): keep with probability 1-p and scale by 1/(1-p); axes listed
    share one mask value. Otherwise the identity. Outputs (out, mask)."""
    if not (train or p.mode == 'always') or p.p <= 0:
        return data, torch.ones((), dtype=data.dtype, device=data.device).expand(data.shape)
    keep = 1.0 - p.p
    mask_shape = [1 if i in p.axes else d for i, d in enumerate(data.shape)]
    if p.p >= 1:        # MXNet's mask is (kept ? 1/keep : 0) = 0 * inf: NaN everywhere
        mask = torch.full(mask_shape, float('nan'), dtype=data.dtype, device=data.device)
    else:
        mask = torch.empty(mask_shape, dtype=data.dtype, device=data.device).bernoulli_(keep)
        mask.div_(keep)
    return data * mask, mask.expand(data.shape)


register(OpDef('Dropout', _dropout,
               params={'p': Float(0.5, lower=0, upper=1),
                       'mode': Enum(('always', 'training'), 'training'), 'axes': Shape(()),
                       'cudnn_off': Bool(False, optional=True)},
               outputs=('output', 'mask'), visible_outputs=1, mode_dependent=True, random=True,
               infer_shape=lambda p, ins, outs: (ins, [merge(ins[0], outs[0]), ins[0]])))


# ---------------------------------------------------------------------------------------------
# Embedding
# ---------------------------------------------------------------------------------------------
def _embedding(p, data, weight):
    """Rows of weight picked by data (indices clipped to [0, input_dim - 1])."""
    idx = data.long().clamp_(0, p.input_dim - 1)
    # a sparse-grad embedding of a weight that is a leaf of autograd (an executor's argument)
    # gets its gradient as a sparse COO tensor: the looked-up rows only, never a dense one
    sparse = getattr(p, 'sparse_grad', True) and weight.is_leaf and weight.requires_grad
    return F.embedding(idx, weight, sparse=bool(sparse))


def _embedding_shape(p, ins, outs):
    data = ins[0]
    weight = merge(ins[1], (p.input_dim, p.output_dim))
    out = merge(outs[0], tuple(data) + (p.output_dim,)) if data is not None else outs[0]
    if data is None and out is not None:
        data = tuple(out[:-1])
    return [data, weight], [out]


def _embedding_type(p, ins, outs):
    dt = np_dtype(p.dtype)
    return [first(ins[0], np_dtype('float32')), dt], [dt]


register(OpDef('Embedding', _embedding,
               params={'input_dim': Int(lower=1), 'output_dim': Int(lower=1),
                       'dtype': DType('float32', choices=('bfloat16', 'float16', 'float32',
                                                          'float64', 'int32', 'int64', 'int8',
                                                          'uint8')),
                       'sparse_grad': Bool(False)},
               inputs=('data', 'weight'), infer_shape=_embedding_shape,
               infer_type=_embedding_type))


# ---------------------------------------------------------------------------------------------
# softmax family
# ---------------------------------------------------------------------------------------------
def _masked_by_length(data, length, axis, fill):
    steps = torch.arange(data.shape[axis], device=data.device)
    shape = [1] * data.dim()
    shape[axis] = data.shape[axis]
    # length has data's shape without `axis`
    valid = steps.reshape(shape) < length.long().unsqueeze(axis)
    return data.masked_fill(~valid, fill), valid


def _check_axis(name, axis, ndim):
    if not -ndim <= axis < ndim:
        raise MXNetError('%s: axis=%d is out of range for data with %d dimensions (expected '
                         'an axis in [%d, %d])' % (name, axis, ndim, -ndim, ndim - 1))


def _softmax_like(kind):
    def forward(p, data, length=None):
        _check_axis(kind, p.axis, data.dim())
        x = data if p.temperature in (None, 1.0) else data / p.temperature
        if kind == 'softmin':
            x = -x
        valid = None
        if length is not None:
            x, valid = _masked_by_length(x, length, p.axis % data.dim(), float('-inf'))
        dtype = torch_dtype(p.dtype) if p.dtype not in (None, 'None') else None
        fn = torch.log_softmax if kind == 'log_softmax' else torch.softmax
        out = fn(x, dim=p.axis, dtype=dtype)
        if valid is not None and kind != 'log_softmax':
            out = out.masked_fill(~valid, 0)
        return out
    forward.__name__ = kind
    forward.__doc__ = '%s along `axis` of data / temperature.' % kind
    return forward


def _softmax_type(p, ins, outs):
    dt = np_dtype(p.dtype) if p.dtype not in (None, 'None') else first(ins[0], outs[0])
    return [ins[0]] + ins[1:], [dt]


for _kind in ('softmax', 'log_softmax', 'softmin'):
    register(OpDef(_kind, _softmax_like(_kind),
                   params={'axis': Int(-1), 'temperature': Float(None),
                           'dtype': DType('None', choices=('None', 'float16', 'float32',
                                                           'float64')),
                           'use_length': Bool(False, optional=True)},
                   inputs=lambda p: ('data', 'length') if p.use_length else ('data',),
                   infer_shape=lambda p, ins, outs: (ins, [merge(ins[0], outs[0])]),
                   infer_type=_softmax_type))


class _InstanceSoftmaxGradAxis1(torch.autograd.Function):
    """Softmax over the last axis whose backward, like MXNet 1.9.1's CPU kernel for
    SoftmaxActivation(mode='instance') on data with more than two dimensions, uses the softmax
    Jacobian over axis 1: grad = out * (g - sum_axis1(g * out)). (For 2-D data both agree.)"""

    @staticmethod
    def forward(ctx, data):
        out = torch.softmax(data, dim=-1)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        out, = ctx.saved_tensors
        return out * (grad - (grad * out).sum(dim=1, keepdim=True))


def _softmax_activation(p, data):
    """mode='instance': softmax over the last axis; 'channel': over axis 1. For instance mode on
    data with more than two dimensions the gradient is MXNet's (see _InstanceSoftmaxGradAxis1)."""
    if p.mode == 'channel':
        return torch.softmax(data, dim=1)
    if data.dim() > 2 and torch.is_grad_enabled() and data.requires_grad:
        return _InstanceSoftmaxGradAxis1.apply(data)
    return torch.softmax(data, dim=-1)


register(OpDef('SoftmaxActivation', _softmax_activation,
               params={'mode': Enum(('channel', 'instance'), 'instance')},
               infer_shape=same_shape))
