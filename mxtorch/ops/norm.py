"""Normalisation layers beyond BatchNorm: LayerNorm, InstanceNorm, GroupNorm, L2Normalization."""
import torch

from .params import Bool, Enum, Float, Int
from .registry import OpDef, register
from .shapes import merge, require


def _axis(op, axis, ndim):
    require(-ndim <= axis < ndim, '%s: axis=%d is out of range for %d-D data', op, axis, ndim)
    return axis % ndim


def _check_rank(op, ndim, minimum=3):
    require(ndim >= minimum, '%s: data must have at least %d dims (batch, channel, spatial...), '
            'got %d-D data', op, minimum, ndim)


# ---------------------------------------------------------------------------------------------
# LayerNorm
# ---------------------------------------------------------------------------------------------
def _layer_norm(p, data, gamma, beta):
    """Normalise along `axis`: (x - mean) / sqrt(var + eps) * gamma + beta (biased var).
    Outputs (out, mean, std) with std = sqrt(var + eps); mean/std keep `axis` as size 1."""
    axis = _axis('LayerNorm', p.axis, data.dim())
    last = data.dim() - 1
    x = data if axis == last else data.movedim(axis, -1)
    out, mean, rstd = torch.native_layer_norm(x, (x.shape[-1],), gamma, beta, p.eps)
    if axis != last:
        out, mean, rstd = (t.movedim(-1, axis) for t in (out, mean, rstd))
    return out, mean.to(data.dtype), rstd.reciprocal().to(data.dtype)


def _layer_norm_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    if data is None:
        return ins, outs
    axis = _axis('LayerNorm', p.axis, len(data))
    vec = (data[axis],)
    stats = tuple(1 if i == axis else d for i, d in enumerate(data))
    return [data, merge(ins[1], vec), merge(ins[2], vec)], [data, stats, stats]


register(OpDef('LayerNorm', _layer_norm,
               params={'axis': Int(-1), 'eps': Float(1e-5), 'output_mean_var': Bool(False)},
               inputs=('data', 'gamma', 'beta'), outputs=('output', 'mean', 'std'),
               visible_outputs=lambda p: 3 if p.output_mean_var else 1,
               infer_shape=_layer_norm_shape))


# ---------------------------------------------------------------------------------------------
# InstanceNorm
# ---------------------------------------------------------------------------------------------
def _instance_norm(p, data, gamma, beta):
    """Normalise each (sample, channel) plane over its spatial axes (biased var), then
    * gamma + beta per channel. Outputs (out, mean, var); mean/var (N, C) are hidden."""
    _check_rank('InstanceNorm', data.dim())
    spatial = tuple(range(2, data.dim()))
    var, mean = torch.var_mean(data, dim=spatial, keepdim=True, correction=0)
    per_channel = (1, -1) + (1,) * len(spatial)
    out = (data - mean) * torch.rsqrt(var + p.eps) * gamma.reshape(per_channel) \
        + beta.reshape(per_channel)
    return out, mean.reshape(data.shape[:2]), var.reshape(data.shape[:2])


def _instance_norm_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    if data is None:
        return ins, outs
    _check_rank('InstanceNorm', len(data))
    vec = (data[1],)
    stats = tuple(data[:2])
    return [data, merge(ins[1], vec), merge(ins[2], vec)], [data, stats, stats]


register(OpDef('InstanceNorm', _instance_norm, params={'eps': Float(1e-3)},
               inputs=('data', 'gamma', 'beta'), outputs=('output', 'mean', 'var'),
               visible_outputs=1, infer_shape=_instance_norm_shape))


# ---------------------------------------------------------------------------------------------
# GroupNorm
# ---------------------------------------------------------------------------------------------
def _check_groups(p, shape):
    _check_rank('GroupNorm', len(shape))
    require(p.num_groups > 0 and (not shape[1] or shape[1] % p.num_groups == 0),
            'GroupNorm: the %d channels must be a multiple of num_groups=%d', shape[1],
            p.num_groups)


def _group_norm(p, data, gamma, beta):
    """Split the channels into num_groups groups and normalise each (sample, group) over its
    channels and spatial axes; gamma/beta have one value per group (MXNet 1.9.1).
    Outputs (out, mean, std) with mean/std of shape (N, num_groups)."""
    _check_groups(p, data.shape)
    n, groups = data.shape[0], p.num_groups
    grouped = data.reshape(n, groups, -1)
    normed, mean, rstd = torch.native_layer_norm(grouped, (grouped.shape[-1],), None, None,
                                                 p.eps)
    out = normed * gamma.reshape(1, groups, 1) + beta.reshape(1, groups, 1)
    return (out.reshape(data.shape), mean.reshape(n, groups).to(data.dtype),
            rstd.reciprocal().reshape(n, groups).to(data.dtype))


def _group_norm_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    if data is None:
        return ins, outs
    _check_groups(p, data)
    vec = (p.num_groups,)
    stats = (data[0], p.num_groups)
    return [data, merge(ins[1], vec), merge(ins[2], vec)], [data, stats, stats]


register(OpDef('GroupNorm', _group_norm,
               params={'num_groups': Int(1), 'eps': Float(1e-5), 'output_mean_var': Bool(False)},
               inputs=('data', 'gamma', 'beta'), outputs=('output', 'mean', 'std'),
               visible_outputs=lambda p: 3 if p.output_mean_var else 1,
               infer_shape=_group_norm_shape))


# ---------------------------------------------------------------------------------------------
# L2Normalization
# ---------------------------------------------------------------------------------------------
def _l2_axes(p, ndim):
    if p.mode == 'instance':
        return tuple(range(1, ndim))
    _check_rank('L2Normalization (mode=%s)' % p.mode, ndim)
    return (1,) if p.mode == 'channel' else tuple(range(2, ndim))


def _l2_norm_shape(p, shape):
    """Shape of the hidden norm output: (N,) for instance, the channel axis kept as 1 for
    channel, (N, C) for spatial."""
    if p.mode == 'instance':
        return tuple(shape[:1])
    if p.mode == 'channel':
        return (shape[0], 1) + tuple(shape[2:])
    return tuple(shape[:2])


def _l2_normalization(p, data):
    """x / sqrt(sum x^2 + eps), the sum over all but the batch axis (instance), the channel
    axis (channel) or the spatial axes (spatial). Outputs (out, hidden norm)."""
    axes = _l2_axes(p, data.dim())
    squares = data * data
    norm = torch.sqrt((squares.sum(dim=axes, keepdim=True) if axes else squares) + p.eps)
    return data / norm, norm.reshape(_l2_norm_shape(p, data.shape))


def _l2_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    if data is None:
        return ins, outs
    _l2_axes(p, len(data))
    return [data], [data, _l2_norm_shape(p, data)]


register(OpDef('L2Normalization', _l2_normalization,
               params={'eps': Float(1e-10),
                       'mode': Enum(('channel', 'instance', 'spatial'), 'instance')},
               outputs=('output', 'norm'), visible_outputs=1, infer_shape=_l2_shape))
