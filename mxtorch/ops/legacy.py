"""Old and auxiliary operators still found in checkpoints: Convolution_v1, Pooling_v1,
BatchNorm_v1 (the pre-1.0 layers, computed by today's forwards), amp_cast / amp_multicast (the
casts AMP inserts), im2col / col2im, cast_storage and fill_element_0index.

The v1 operators have their own (smaller) parameter schemas; their forward and shape rules are
those of Convolution / Pooling / BatchNorm, called with the v1 params completed by the current
operator's defaults.
"""
import torch

from ..base import MXNetError, np_dtype, torch_dtype
from . import conv, nn
from .params import Bool, DType, Enum, Int, Params, Shape
from .registry import OpDef, get_op, register
from .shapes import merge, prod, require, same_shape


def _completed(name, **extra):
    """A function mapping a v1 operator's params to the params of its successor `name`."""
    defaults = {k: v.default for k, v in get_op(name).params.items() if not v.required}

    def convert(p):
        return Params(defaults, **dict(p, **extra))
    return convert


# ---------------------------------------------------------------------------------------------
# Convolution_v1: Convolution's schema, forward and shape rule
# ---------------------------------------------------------------------------------------------
register(OpDef('Convolution_v1', conv._convolution, params=get_op('Convolution').params,
               inputs=conv._conv_inputs, infer_shape=conv._convolution_shape))


# ---------------------------------------------------------------------------------------------
# Pooling_v1: max/avg/sum, valid/full conventions; no hidden workspace output
# ---------------------------------------------------------------------------------------------
_pooling_params = _completed('Pooling')


def _pooling_v1(p, data):
    """Pooling over the zero-padded data (max takes the padding's zeros into account too), with
    Pooling's window conventions; avg divides every window's sum by the kernel's area, also
    where a full-convention window is clipped."""
    v2 = _pooling_params(p)
    if any(p.pad) and not p.global_pool:
        data = torch.nn.functional.pad(data, [v for pd in reversed(p.pad) for v in (pd, pd)])
        v2 = Params(v2, pad=())
    if p.pool_type == 'avg' and not p.global_pool:      # the sum over the kernel's area
        return conv._pooling(Params(v2, pool_type='sum'), data) / prod(p.kernel)
    out = conv._pooling(v2, data)
    return out[0] if isinstance(out, tuple) else out


def _pooling_v1_shape(p, ins, outs):
    return conv._pooling_shape(_pooling_params(p), ins, outs)


register(OpDef('Pooling_v1', _pooling_v1,
               params={'kernel': Shape(()), 'pool_type': Enum(('avg', 'max', 'sum'), 'max'),
                       'global_pool': Bool(False),
                       'pooling_convention': Enum(('full', 'valid'), 'valid'),
                       'stride': Shape(()), 'pad': Shape(())},
               infer_shape=_pooling_v1_shape))


# ---------------------------------------------------------------------------------------------
# BatchNorm_v1: channel axis 1; hidden outputs (mean, var), var the variance itself
# ---------------------------------------------------------------------------------------------
_batch_norm_params = _completed('BatchNorm', axis=1)


def _moving_stats_with_batch_gradient(p, data, gamma, beta, moving_mean, moving_var):
    """Normalisation by the moving statistics whose gradient is the training one, with the
    moving statistics standing for the batch ones: what MXNet 1.9.1's BatchNorm_v1 backward
    computes after an inference forward pass (its saved mean/var are then the moving ones)."""
    axes = [0] + list(range(2, data.dim()))
    shape = (1, -1) + (1,) * (data.dim() - 2)
    batch_mean = data.mean(dim=axes, keepdim=True)
    mean = moving_mean.reshape(shape) + (batch_mean - batch_mean.detach())
    centred = data - mean
    batch_var = centred.pow(2).mean(dim=axes, keepdim=True)
    var = moving_var.reshape(shape) + (batch_var - batch_var.detach())
    weight = nn.fixed_gamma(gamma) if p.fix_gamma else gamma
    return centred * torch.rsqrt(var + p.eps) * weight.reshape(shape) + beta.reshape(shape)


def _batch_norm_v1(p, data, gamma, beta, moving_mean, moving_var, *, train):
    """BatchNorm over axis 1. Outputs (out, mean, var): the batch mean and biased variance in
    training, the moving ones otherwise. After an inference pass the gradient is MXNet's
    training formula evaluated at the moving statistics (not the plain affine map's)."""
    if not train and not p.use_global_stats and torch.is_grad_enabled() and any(
            t.requires_grad for t in (data, gamma, beta)):
        out = _moving_stats_with_batch_gradient(p, data, gamma, beta, moving_mean, moving_var)
        return out, moving_mean, moving_var
    v2 = _batch_norm_params(p)
    out, mean, inv_std = nn._batch_norm(v2, data, gamma, beta, moving_mean, moving_var,
                                        train=train)
    if train and not p.use_global_stats:
        return out, mean, inv_std.pow(-2) - p.eps
    return out, mean, moving_var


def _batch_norm_v1_update_aux(p, aux, outputs):
    if p.use_global_stats:
        return
    for moving, batch in zip(aux, outputs[1:3]):
        moving.lerp_(batch.detach().to(moving.dtype), 1 - p.momentum)


register(OpDef('BatchNorm_v1', _batch_norm_v1,
               params={k: v for k, v in get_op('BatchNorm').params.items()
                       if k not in ('axis', 'cudnn_off')},
               inputs=('data', 'gamma', 'beta'), aux=('moving_mean', 'moving_var'),
               outputs=('output', 'mean', 'var'),
               visible_outputs=lambda p: 3 if p.output_mean_var else 1,
               mode_dependent=True, update_aux=_batch_norm_v1_update_aux,
               infer_shape=lambda p, ins, outs: nn._batch_norm_shape(_batch_norm_params(p), ins,
                                                                     outs),
               infer_type=nn._batch_norm_type,
               init_hints={'moving_mean': '["zero", {}]', 'moving_var': '["one", {}]'}))


# ---------------------------------------------------------------------------------------------
# amp_cast / amp_multicast
# ---------------------------------------------------------------------------------------------
_AMP_CASTABLE = tuple(np_dtype(t) for t in ('float16', 'float32', 'bfloat16'))
_FLOATS = tuple(np_dtype(t) for t in ('float16', 'bfloat16', 'float32', 'float64'))
_WIDTH = {t: i for i, t in enumerate(_FLOATS)}


def _amp_cast(p, data):
    """Cast float16/bfloat16/float32 data to dtype; other dtypes pass unchanged. The gradient
    is cast back to the input's dtype."""
    if np_dtype(data.dtype) in _AMP_CASTABLE:
        return data.to(torch_dtype(p.dtype))
    return data


def _amp_cast_type(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    return ins, [np_dtype(p.dtype) if ins[0] in _AMP_CASTABLE else ins[0]]


def _multicast_target(dtypes, narrow):
    floats = [t for t in dtypes if t in _WIDTH]
    if not floats:
        return None
    return (min if narrow else max)(floats, key=_WIDTH.get)


def _amp_multicast(p, *data):
    """Cast every floating input to the widest floating dtype among them (the narrowest with
    cast_narrow); other inputs pass unchanged."""
    target = _multicast_target([np_dtype(x.dtype) for x in data], p.cast_narrow)
    outs = tuple(x.to(torch_dtype(target)) if np_dtype(x.dtype) in _WIDTH else x for x in data)
    return outs if len(outs) > 1 else outs[0]


def _amp_multicast_type(p, ins, outs):
    if any(t is None for t in ins):
        return ins, outs
    target = _multicast_target(ins, p.cast_narrow)
    return ins, [target if t in _WIDTH else t for t in ins]


def _amp_multicast_shape(p, ins, outs):
    shapes = [merge(i, o) for i, o in zip(ins, outs)]
    return shapes, shapes


def _multicast_outputs(p):
    n = p.num_outputs
    return ('output',) if n == 1 else tuple('output%d' % i for i in range(n))


register(OpDef('amp_cast', _amp_cast,
               params={'dtype': DType(choices=('bfloat16', 'float16', 'float32', 'float64',
                                               'int32', 'int64', 'int8', 'uint8'))},
               infer_shape=same_shape, infer_type=_amp_cast_type)).amp_cast_input = lambda k: 0
get_op('amp_cast').converts_dtype = True
register(OpDef('amp_multicast', _amp_multicast,
               params={'num_outputs': Int(), 'cast_narrow': Bool(False)},
               variadic='num_outputs', outputs=_multicast_outputs,
               infer_shape=_amp_multicast_shape,
               infer_type=_amp_multicast_type)).amp_cast_input = lambda k: k
get_op('amp_multicast').converts_dtype = True


# ---------------------------------------------------------------------------------------------
# im2col / col2im
# ---------------------------------------------------------------------------------------------
def _blocks(op, p, spatial):
    """Number of sliding blocks along each spatial dim."""
    kernel, stride, dilate, pad = conv.window_geometry(op, p, len(spatial) + 2)
    counts = []
    for x, k, s, d, pd in zip(spatial, kernel, stride, dilate, pad):
        span = d * (k - 1) + 1
        require(not x or span <= x + 2 * pd, '%s: the dilated kernel (%d) exceeds the padded '
                'input (%d)', op, span, x + 2 * pd)
        counts.append((x + 2 * pd - span) // s + 1 if x else 0)
    return tuple(counts)


def _unfold(x, kernel, stride, dilate, pad):
    """(N, C, *spatial) -> (N, C * prod(kernel), blocks): torch's Tensor.unfold per spatial dim
    (any rank, any dtype, differentiable)."""
    rank = len(kernel)
    x = torch.nn.functional.pad(x, [v for pd in reversed(pad) for v in (pd, pd)]) \
        if any(pad) else x
    for i, (k, s, d) in enumerate(zip(kernel, stride, dilate)):
        x = x.unfold(2 + i, d * (k - 1) + 1, s)[..., ::d]
    n, c = x.shape[:2]
    blocks = x.shape[2:2 + rank]
    order = (0, 1) + tuple(range(2 + rank, 2 + 2 * rank)) + tuple(range(2, 2 + rank))
    return x.permute(order).reshape(n, c * prod(kernel), prod(blocks))


def _im2col(p, data):
    """Extract the sliding blocks of data (N, C, *spatial) as columns:
    (N, C * prod(kernel), number of blocks), C outermost in each column."""
    kernel, stride, dilate, pad = conv.window_geometry('im2col', p, data.dim())
    _blocks('im2col', p, tuple(data.shape[2:]))
    return _unfold(data, kernel, stride, dilate, pad)


def _col2im_channels(p, cols):
    size = prod(p.kernel)
    require(cols[1] % size == 0, 'col2im: data.shape[1]=%d must be a multiple of '
            'prod(kernel)=%d', cols[1], size)
    return cols[1] // size


def _col2im(p, data):
    """Sum the columns (N, C * prod(kernel), blocks) back into an image (N, C, *output_size):
    the adjoint of im2col (overlapping cells add up)."""
    require(data.dim() == 3, 'col2im: data must be 3-D (batch, channels * kernel, blocks), got '
            '%d-D data', data.dim())
    require(len(p.output_size) == len(p.kernel), 'col2im: output_size=%s must have one entry '
            'per kernel dim (kernel=%s)', p.output_size, p.kernel)
    kernel, stride, dilate, pad = conv.window_geometry('col2im', p, len(p.kernel) + 2)
    blocks = prod(_blocks('col2im', p, tuple(p.output_size)))
    require(data.shape[2] == blocks, 'col2im: data has %d blocks, output_size=%s gives %d',
            data.shape[2], p.output_size, blocks)
    n, c = data.shape[0], _col2im_channels(p, data.shape)
    padded = tuple(x + 2 * pd for x, pd in zip(p.output_size, pad))
    cells = torch.arange(prod(padded), device=data.device).reshape((1, 1) + padded)
    index = _unfold(cells, kernel, stride, dilate, (0,) * len(kernel)).reshape(-1)
    image = data.new_zeros((n, c, prod(padded))).index_add(
        2, index, data.reshape(n, c, -1))
    image = image.reshape((n, c) + padded)
    crop = (slice(None), slice(None)) + tuple(slice(pd, pd + x)
                                              for x, pd in zip(p.output_size, pad))
    return image[crop]


def _im2col_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    counts = _blocks('im2col', p, tuple(data[2:]))
    blocks = prod(counts) if all(counts) else 0
    return ins, [merge(outs[0], (data[0], data[1] * prod(p.kernel), blocks))]


def _col2im_shape(p, ins, outs):
    cols = ins[0]
    if cols is None:
        return ins, outs
    require(len(cols) == 3, 'col2im: data must be 3-D (batch, channels * kernel, blocks), got '
            '%d-D data', len(cols))
    channels = _col2im_channels(p, cols) if cols[1] else 0
    blocks = prod(_blocks('col2im', p, tuple(p.output_size)))
    return [merge(cols, (cols[0], cols[1], blocks))], \
        [merge(outs[0], (cols[0], channels) + tuple(p.output_size))]


_PATCH = {'kernel': Shape(), 'stride': Shape(()), 'dilate': Shape(()), 'pad': Shape(())}
register(OpDef('im2col', _im2col, params=_PATCH, infer_shape=_im2col_shape))
register(OpDef('col2im', _col2im, params=dict(_PATCH, output_size=Shape()),
               infer_shape=_col2im_shape))


# ---------------------------------------------------------------------------------------------
# cast_storage, fill_element_0index
# ---------------------------------------------------------------------------------------------
def _cast_storage(p, data):
    """The same values (a copy); the output's storage type is `stype` (ops/sparse.py)."""
    return data.clone()


def _cast_storage_shape(p, ins, outs):
    return same_shape(p, ins, outs)


def _fill_element_0index(p, lhs, mhs, rhs):
    """A copy of lhs (rows, cols) with element rhs[i] of row i set to mhs[i]."""
    index = rhs.long().reshape(-1, 1)
    return lhs.scatter(1, index, mhs.reshape(-1, 1).to(lhs.dtype))


def _fill_element_shape(p, ins, outs):
    lhs = merge(ins[0], outs[0])
    rows = None if lhs is None else (lhs[0],)
    return [lhs, merge(ins[1], rows), merge(ins[2], rows)], [lhs]


register(OpDef('cast_storage', _cast_storage,
               params={'stype': Enum(('csr', 'default', 'row_sparse'))},
               infer_shape=_cast_storage_shape))
register(OpDef('fill_element_0index', _fill_element_0index, inputs=('lhs', 'mhs', 'rhs'),
               infer_shape=_fill_element_shape,
               infer_type=lambda p, ins, outs: (ins, [ins[0] if ins[0] is not None
                                                      else outs[0]])))
