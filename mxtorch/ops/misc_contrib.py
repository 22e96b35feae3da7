"""Smaller operators of MXNet 1.9.1 that fit no other family: arange_like, _rnn_param_concat,
index_copy, index_array, boolean_mask, allclose, round_ste / sign_ste, fft / ifft,
count_sketch, the `_random_*_like` draws, _sample_unique_zipfian, and the NDArray helpers
_zeros_without_dtype, _onehot_encode, _set_value, _copyto, _grad_add and the dense forms of the
`_scatter_*` operators.
"""
import math

import numpy as np
import torch

from ..base import CODE_DTYPES, np_dtype, torch_dtype
from .elemwise import _round_half_away
from .matrix import _concat, _concat_shape
from .params import Bool, Float, Int, Shape, Str
from .random import _DISTRIBUTIONS
from .registry import OpDef, register
from .shapes import fmt, known, merge, require, same_shape, same_type


class _StraightThrough(torch.autograd.Function):
    """`fn(x)` forward; the head gradient passes through unchanged (straight-through)."""

    @staticmethod
    def forward(ctx, x, fn):  # pylint: disable=arguments-differ
        return fn(x)

    @staticmethod
    def backward(ctx, dy):  # pylint: disable=arguments-differ
        return dy, None


register(OpDef('_contrib_round_ste', lambda p, x: _StraightThrough.apply(x, _round_half_away),
               infer_shape=same_shape))
register(OpDef('_contrib_sign_ste', lambda p, x: _StraightThrough.apply(x, torch.sign),
               infer_shape=same_shape))


# ---------------------------------------------------------------------------------------------
# arange_like: start + step * (i // repeat) over the data's shape, or along one axis
# ---------------------------------------------------------------------------------------------
def _arange_like_axis(p, ndim):
    if p.axis is None:
        return None
    axis = p.axis + ndim if p.axis < 0 else p.axis
    require(0 <= axis < ndim, 'arange_like: cannot handle axis=%d for %d-D data', p.axis, ndim)
    return axis


def _arange_like_shape_of(p, shape):
    axis = _arange_like_axis(p, len(shape))
    return tuple(shape) if axis is None else (shape[axis],)


def _arange_like(p, data):
    shape = _arange_like_shape_of(p, data.shape)
    count = int(np.prod(shape))
    values = p.start + p.step * (torch.arange(count, dtype=torch.float64) // p.repeat)
    return values.reshape(shape).to(device=data.device, dtype=data.dtype)


def _arange_like_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    return ins, [merge(outs[0], _arange_like_shape_of(p, ins[0]))]


register(OpDef('_contrib_arange_like', _arange_like,
               params={'start': Float(0.0), 'step': Float(1.0), 'repeat': Int(1), 'ctx': Str(''),
                       'axis': Int(None)},
               infer_shape=_arange_like_shape, head_grad='zero'))

def _rnn_param_concat_shape(p, ins, outs):
    """Concat's rule, except that one or two inputs of unknown size along `dim` (the first
    layer's input weights of both directions) share what the known output leaves equally."""
    unknown = [i for i, s in enumerate(ins) if s is None or not known(s)]
    if len(unknown) == 2 and outs[0] is not None and known(outs[0]):
        first = [s for s in ins if s is not None and known(s)]
        axis = p.dim % len(outs[0])
        rest = outs[0][axis] - sum(s[axis] for s in first)
        require(rest >= 0 and rest % 2 == 0, '_rnn_param_concat: the output has %d along dim '
                '%d, the known inputs already %d', outs[0][axis], p.dim, outs[0][axis] - rest)
        ins = list(ins)
        for i in unknown:
            shape = list(ins[i] if ins[i] is not None else outs[0])
            shape[axis] = rest // 2
            ins[i] = merge(ins[i], tuple(shape)) if ins[i] is not None else tuple(shape)
    return _concat_shape(p, ins, outs)


# the RNN layers' packed parameter vector: Concat's computation
register(OpDef('_rnn_param_concat', _concat, params={'num_args': Int(), 'dim': Int(1)},
               variadic='num_args', infer_shape=_rnn_param_concat_shape))


# ---------------------------------------------------------------------------------------------
# index_copy, index_array, boolean_mask, allclose
# ---------------------------------------------------------------------------------------------
def _index_copy(p, old, index, new):
    require(index.dim() == 1, 'index_copy: index_vector must be 1-D, got shape %s',
            fmt(index.shape))
    require(new.dim() == old.dim() and new.shape[0] == index.shape[0] and
            new.shape[1:] == old.shape[1:], 'index_copy: new_tensor of shape %s does not fit '
            'old_tensor of shape %s with %d indices', fmt(new.shape), fmt(old.shape),
            index.shape[0])
    return old.index_copy(0, index.long(), new)


def _index_copy_shape(p, ins, outs):
    old = merge(ins[0], outs[0])
    return [old, ins[1], ins[2]], [old]


def _index_copy_type(p, ins, outs):
    (old, new), out = same_type(p, [ins[0], ins[2]], outs)
    return [old, ins[1], new], out


register(OpDef('_contrib_index_copy', _index_copy,
               inputs=('old_tensor', 'index_vector', 'new_tensor'),
               infer_shape=_index_copy_shape, infer_type=_index_copy_type))


def _index_array_axes(p, ndim):
    if p.axes is None:
        return tuple(range(ndim))
    axes = tuple(a + ndim if a < 0 else a for a in p.axes)
    require(all(0 <= a < ndim for a in axes), 'index_array: axes=%s out of range for %d-D '
            'data', p.axes, ndim)
    return axes


def _index_array(p, data):
    axes = _index_array_axes(p, data.dim())
    if data.dim() == 0:
        return torch.zeros((0,), dtype=torch.int64, device=data.device)
    grids = torch.meshgrid(*[torch.arange(n, device=data.device) for n in data.shape],
                           indexing='ij')
    return torch.stack([grids[a] for a in axes], -1)


def _index_array_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    return ins, [merge(outs[0], tuple(ins[0]) + (len(_index_array_axes(p, len(ins[0]))),))]


register(OpDef('_contrib_index_array', _index_array, params={'axes': Shape(None)},
               infer_shape=_index_array_shape, head_grad='zero',
               infer_type=lambda p, ins, outs: (ins, [np_dtype('int64')])))


def _boolean_mask(p, data, index):
    require(p.axis == 0, 'boolean_mask: only axis=0 is supported, got axis=%d', p.axis)
    require(index.dim() == 1 and index.shape[0] == data.shape[0], 'boolean_mask: index must '
            'be 1-D with one entry per row of data (%d), got shape %s', data.shape[0],
            fmt(index.shape))
    return data[(index != 0).nonzero().flatten()]


def _boolean_mask_shape(p, ins, outs):
    """The row count depends on the index's values: unknown until the op runs."""
    if ins[0] is None:
        return ins, outs
    return ins, [merge(outs[0], (0,) + tuple(ins[0][1:]))]


register(OpDef('_contrib_boolean_mask', _boolean_mask, params={'axis': Int(0)},
               inputs=('data', 'index'), infer_shape=_boolean_mask_shape,
               infer_type=lambda p, ins, outs: ([ins[0], ins[1]], [ins[0]]))).dynamic_shape = True


def _allclose(p, a, b):
    require(a.shape == b.shape, 'allclose: a of shape %s and b of shape %s differ',
            fmt(a.shape), fmt(b.shape))
    x, y = a.double(), b.double()
    close = (x - y).abs() <= p.atol + p.rtol * y.abs()
    if p.equal_nan:
        close = close | (torch.isnan(x) & torch.isnan(y))
    return close.all().to(torch.uint8).reshape(())


def _allclose_shape(p, ins, outs):
    data = merge(ins[0], ins[1])
    return [data, data], [()]


register(OpDef('_contrib_allclose', _allclose,
               params={'rtol': Float(1e-5), 'atol': Float(1e-8), 'equal_nan': Bool(True)},
               inputs=('a', 'b'), infer_shape=_allclose_shape, head_grad='zero',
               infer_type=lambda p, ins, outs: (ins, [np_dtype('uint8')])))


# ---------------------------------------------------------------------------------------------
# fft / ifft over the last axis: complex values interleaved as (real, imaginary) pairs; ifft
# keeps the real part and does not divide by the length (as MXNet's cuFFT kernels)
# ---------------------------------------------------------------------------------------------
def _fft(p, data):
    spectrum = torch.fft.fft(data.double(), dim=-1)
    out = torch.stack([spectrum.real, spectrum.imag], -1)
    return out.reshape(data.shape[:-1] + (2 * data.shape[-1],)).to(data.dtype)


def _ifft(p, data):
    require(data.shape[-1] % 2 == 0, 'ifft: the last dim (%d) must hold (real, imaginary) '
            'pairs', data.shape[-1])
    pairs = data.double().reshape(data.shape[:-1] + (-1, 2))
    signal = torch.fft.ifft(torch.complex(pairs[..., 0], pairs[..., 1]), dim=-1)
    return (signal.real * pairs.shape[-2]).to(data.dtype)


def _last_dim_times(factor):
    def rule(p, ins, outs):
        if ins[0] is None:
            return ins, outs
        last = int(ins[0][-1] * factor)
        return ins, [merge(outs[0], tuple(ins[0][:-1]) + (last,))]
    return rule


_FFT_PARAMS = {'compute_size': Int(128)}
register(OpDef('_contrib_fft', _fft, params=_FFT_PARAMS, infer_shape=_last_dim_times(2)))
register(OpDef('_contrib_ifft', _ifft, params=_FFT_PARAMS, infer_shape=_last_dim_times(0.5)))


def _count_sketch(p, data, h, s):
    """out[n, h[i]] += s[i] * data[n, i]: a random projection of the last axis to out_dim."""
    require(h.numel() == data.shape[-1] and s.numel() == data.shape[-1], 'count_sketch: h and '
            's must have one entry per input feature (%d)', data.shape[-1])
    flat = data.reshape(-1, data.shape[-1])
    out = flat.new_zeros((flat.shape[0], p.out_dim))
    out = out.index_add(1, h.reshape(-1).long(), flat * s.reshape(1, -1).to(flat.dtype))
    return out.reshape(data.shape[:-1] + (p.out_dim,))


def _count_sketch_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    features = (1, ins[0][-1])
    return [ins[0], merge(ins[1], features), merge(ins[2], features)], \
        [merge(outs[0], tuple(ins[0][:-1]) + (p.out_dim,))]


register(OpDef('_contrib_count_sketch', _count_sketch,
               params={'out_dim': Int(), 'processing_batch_size': Int(32)},
               inputs=('data', 'h', 's'), infer_shape=_count_sketch_shape))


# ---------------------------------------------------------------------------------------------
# _random_*_like: draws shaped and typed like `data`
# ---------------------------------------------------------------------------------------------
def _like_sampler(draw, names):
    def forward(p, data):
        values = [torch.tensor(float(p[n]), dtype=torch.float64, device=data.device)
                  for n in names]
        return draw(tuple(data.shape), *values).to(data.dtype)
    return forward


def _uniform_draw(shape, low, high):
    return torch.empty(shape, dtype=torch.float64, device=low.device).uniform_(
        float(low), float(high))


def _normal_draw(shape, loc, scale):
    return torch.empty(shape, dtype=torch.float64, device=loc.device).normal_(
        float(loc), float(scale))


_LIKE = dict({name: (draw, scalars) for name, (draw, scalars) in _DISTRIBUTIONS.items()},
             uniform=(_uniform_draw, (('low', Float(0.0)), ('high', Float(1.0)))),
             normal=(_normal_draw, (('loc', Float(0.0)), ('scale', Float(1.0)))))
for _dist, (_draw, _scalars) in _LIKE.items():
    register(OpDef('_random_%s_like' % _dist, _like_sampler(_draw, [n for n, _ in _scalars]),
                   params=dict(_scalars), infer_shape=same_shape, random=True,
                   head_grad='zero', aliases=('random_%s_like' % _dist,)))


def _unique_zipfian(p, device, out_shape):
    """Per row of `shape`, shape[-1] distinct classes from the log-uniform (Zipfian)
    distribution over [0, range_max), and how many draws that took (int64)."""
    shape = tuple(p.shape)
    require(len(shape) == 2, '_sample_unique_zipfian: shape must be 2-D (batch, samples), got '
            '%s', shape)
    log_range = math.log(p.range_max + 1)
    rows, tries = [], []
    for _ in range(shape[0]):
        seen, order, count = set(), [], 0
        while len(order) < shape[1]:
            count += 1
            value = int(math.exp(float(torch.rand(())) * log_range)) - 1
            value %= p.range_max
            if value not in seen:
                seen.add(value)
                order.append(value)
        rows.append(order)
        tries.append(count)
    return (torch.tensor(rows, dtype=torch.int64, device=device),
            torch.tensor(tries, dtype=torch.int64, device=device))


register(OpDef('_sample_unique_zipfian', _unique_zipfian, inputs=(), creation=True, random=True,
               params={'range_max': Int(), 'shape': Shape(None)},
               outputs=('output', 'num_tries'),
               infer_shape=lambda p, ins, outs: (ins, [tuple(p.shape), tuple(p.shape[:1])]),
               infer_type=lambda p, ins, outs: (ins, [np_dtype('int64')] * 2)))


# ---------------------------------------------------------------------------------------------
# NDArray helpers
# ---------------------------------------------------------------------------------------------
def _zeros_dtype(p):
    """-1: the dtype the graph infers (float32 when nothing tells), else MXNet's type code."""
    if p.dtype < 0:
        return None
    require(p.dtype in CODE_DTYPES, '_zeros_without_dtype: unknown type code dtype=%d',
            p.dtype)
    return CODE_DTYPES[p.dtype]


def _zeros_without_dtype(p, device, out_shape):
    shape = tuple(out_shape) if out_shape is not None else tuple(p.shape or ())
    require(known(shape) or shape == (), '_zeros_without_dtype: unknown shape %s', fmt(shape))
    return torch.zeros(shape, dtype=torch_dtype(_zeros_dtype(p) or 'float32'), device=device)


def _zeros_without_dtype_type(p, ins, outs):
    given = _zeros_dtype(p)
    return ins, [np_dtype(given) if given is not None else outs[0]]


register(OpDef('_zeros_without_dtype', _zeros_without_dtype, inputs=(), creation=True,
               params={'shape': Shape(None), 'ctx': Str(''), 'dtype': Int(-1)},
               infer_shape=lambda p, ins, outs: (ins, [merge(outs[0], tuple(p.shape or ()))
                                                       if p.shape else outs[0]]),
               infer_type=_zeros_without_dtype_type))


def _onehot_encode(p, lhs, rhs):
    """Rows of zeros shaped like rhs with a 1 at column lhs[i] (rhs's dtype)."""
    require(lhs.dim() == 1 and rhs.dim() == 2 and lhs.shape[0] == rhs.shape[0],
            '_onehot_encode: lhs must be 1-D with one index per row of the 2-D rhs, got %s and '
            '%s', fmt(lhs.shape), fmt(rhs.shape))
    out = torch.zeros_like(rhs)
    return out.scatter_(1, lhs.long().reshape(-1, 1), 1)


register(OpDef('_onehot_encode', _onehot_encode, inputs=('lhs', 'rhs'), head_grad='zero',
               infer_shape=lambda p, ins, outs: (ins, [merge(outs[0], ins[1])]),
               infer_type=lambda p, ins, outs: (ins, [ins[1]])))


def _set_value(p, device, out_shape):
    """`src` everywhere in the array given as out= (a one-element array broadcast into it)."""
    return torch.full(tuple(out_shape or (1,)), p.src, dtype=torch.float32, device=device)


register(OpDef('_set_value', _set_value, inputs=(), creation=True, params={'src': Float()},
               infer_shape=lambda p, ins, outs: (ins, outs),
               infer_type=lambda p, ins, outs: (ins, [outs[0] if outs[0] is not None
                                                      else np_dtype('float32')])))

register(OpDef('_copyto', lambda p, data: data.clone(), infer_shape=same_shape))
register(OpDef('_grad_add', lambda p, lhs, rhs: lhs + rhs, inputs=('lhs', 'rhs'),
               infer_shape=same_shape, differentiable=False))


# dense forms of the operators MXNet keeps for sparse storage
def _scalar_param():
    return {'scalar': Float(1.0), 'is_int': Bool(True)}


def _cast_like(data, out):
    return out if out.dtype == data.dtype else out.to(data.dtype)


register(OpDef('_scatter_plus_scalar', lambda p, x: _cast_like(x, x + p.scalar),
               params=_scalar_param(), infer_shape=same_shape))
register(OpDef('_scatter_minus_scalar', lambda p, x: _cast_like(x, x - p.scalar),
               params=_scalar_param(), infer_shape=same_shape))
register(OpDef('_scatter_elemwise_div', lambda p, lhs, rhs: _cast_like(lhs, lhs / rhs),
               inputs=('lhs', 'rhs'), infer_shape=same_shape))


def _scatter_set_nd(p, lhs, rhs, indices):
    """lhs with the elements at `indices` (M, N...) replaced by rhs (N...)."""
    require(tuple(lhs.shape) == tuple(p.shape), '_scatter_set_nd: lhs of shape %s must have '
            'shape=%s', fmt(lhs.shape), p.shape)
    index = tuple(indices.long())
    return lhs.index_put(index, rhs.to(lhs.dtype))


def _scatter_set_nd_shape(p, ins, outs):
    lhs = merge(merge(ins[0], outs[0]), tuple(p.shape))
    return [lhs, ins[1], ins[2]], [lhs]


def _scatter_set_nd_type(p, ins, outs):
    (lhs, rhs), out = same_type(p, ins[:2], outs)
    return [lhs, rhs, ins[2]], out


register(OpDef('_scatter_set_nd', _scatter_set_nd, params={'shape': Shape()},
               inputs=('lhs', 'rhs', 'indices'), infer_shape=_scatter_set_nd_shape,
               infer_type=_scatter_set_nd_type))
