"""Gathering and scattering: pick, one_hot, take, batch_take, gather_nd, scatter_nd, shape_array,
size_array.

Index arrays may have any dtype; float indices are truncated toward zero. Gradients flow to the
data (summed where an element is read several times), never to the indices.
"""
import torch

from .. import inference_graph
from ..base import MXNetError, np_dtype, torch_dtype
from .params import Bool, DType, Enum, Float, Int, Shape
from .registry import OpDef, register
from .shapes import ShapeError, first, known, merge, prod
from .reduce import at_least_1d, normalize_axis


def _fit_index(index, size, mode):
    """Integer positions from an index array: wrapped (Python modulo) or clipped to [0, size)."""
    index = index.long()
    if mode == 'wrap':
        return torch.remainder(index, size)
    return index.clamp(0, size - 1)


def _require_in_range(op_name, index, size, allow_negative, error=MXNetError):
    """MXNetError unless every index addresses an element of an axis of `size` (a number, or a
    tensor broadcasting against index); negative ones count from the end where allowed. Values
    of meta tensors (shape inference) are unknown and not checked. Returns the index to use:
    while an inference graph is traced (inference_graph.py) the check is part of the graph, as
    indices moved one past the end where out of range, which the indexing then refuses."""
    if index.is_meta:
        return index
    sizes = torch.as_tensor(size, device=index.device).expand(index.shape)
    bad = (index >= sizes) | (index < (-sizes if allow_negative else 0))
    if inference_graph.tracing():
        return torch.where(bad, sizes, index)
    if bool(bad.any()):
        raise error('%s: index %d is out of bounds for an axis of size %d'
                    % (op_name, int(index[bad][0]), int(sizes[bad][0])))
    return index


def _data_and_index_type(p, ins, outs):
    """Output dtype = data dtype; the index dtype is free."""
    data = first(ins[0], outs[0])
    return [data] + list(ins[1:]), [data]


# ---------------------------------------------------------------------------------------------
# pick
# ---------------------------------------------------------------------------------------------
def _pick(p, data, index):
    """out[i] = data[i, index[i]] along `axis` (index: data's shape without that axis)."""
    if p.axis is None:
        raise MXNetError('pick: axis=None is not supported; give an axis')
    axis = normalize_axis('pick', p.axis, data.dim())
    kept = list(data.shape)
    kept[axis] = 1
    if index.numel() != prod(kept):
        raise MXNetError('pick: index has %d elements, expected %d (data shape %s without axis %d)'
                         % (index.numel(), prod(kept), tuple(data.shape), axis))
    positions = _fit_index(index.reshape(kept), data.shape[axis], p.mode)
    out = torch.gather(data, axis, positions)
    return out if p.keepdims else at_least_1d(out.squeeze(axis))


def _pick_shape(p, ins, outs):
    data, index = ins
    if data is None or p.axis is None:
        return ins, outs
    axis = normalize_axis('pick', p.axis, len(data))
    without_axis = tuple(data[:axis]) + tuple(data[axis + 1:]) or (1,)
    if index is None:
        index = without_axis
    elif all(data) and all(index) and prod(index) != prod(without_axis):
        raise ShapeError('index shape %s does not match data %s without axis %d'
                         % (index, data, axis))
    out = tuple(data[:axis]) + (1,) + tuple(data[axis + 1:]) if p.keepdims else without_axis
    return [data, index], [merge(outs[0], out)]


register(OpDef('pick', _pick,
               params={'axis': Int(-1, optional=True), 'keepdims': Bool(False),
                       'mode': Enum(('clip', 'wrap'), 'clip')},
               inputs=('data', 'index'), infer_shape=_pick_shape,
               infer_type=_data_and_index_type, aliases=('choose_element_0index',)))


# ---------------------------------------------------------------------------------------------
# one_hot
# ---------------------------------------------------------------------------------------------
def _one_hot(p, indices):
    """on_value where the last axis equals the index, off_value elsewhere (out-of-range or
    negative indices: a row of off_value); values are cast to dtype (integers truncate)."""
    if p.depth < 0:
        raise MXNetError('one_hot: depth must be >= 0, got depth=%d' % p.depth)
    classes = torch.arange(p.depth, device=indices.device)
    hot = indices.long().unsqueeze(-1) == classes
    on = torch.tensor(p.on_value, dtype=torch.float64, device=indices.device)
    off = torch.tensor(p.off_value, dtype=torch.float64, device=indices.device)
    return torch.where(hot, on, off).to(torch_dtype(p.dtype))


def _when_known(out_shape):
    """A shape rule that gives the output shape out_shape(p, *input shapes) once every input
    shape is known (what running the forward on meta tensors gives, without them)."""
    def rule(p, ins, outs):
        if not all(known(s) for s in ins):
            return ins, outs
        return ins, [out_shape(p, *ins)]
    return rule


def _one_hot_shape(p, indices):
    if p.depth < 0:
        raise MXNetError('one_hot: depth must be >= 0, got depth=%d' % p.depth)
    return tuple(indices) + (p.depth,)


register(OpDef('one_hot', _one_hot,
               params={'depth': Int(), 'on_value': Float(1.0), 'off_value': Float(0.0),
                       'dtype': DType('float32', choices=('bfloat16', 'float16', 'float32',
                                                          'float64', 'int32', 'int64', 'int8',
                                                          'uint8'))},
               inputs=('indices',), infer_shape=_when_known(_one_hot_shape),
               infer_type=lambda p, ins, outs: (ins, [np_dtype(p.dtype)])))


# ---------------------------------------------------------------------------------------------
# take, batch_take
# ---------------------------------------------------------------------------------------------
def _take(p, a, indices):
    """Slices of `a` along `axis` at `indices`: out shape a[:axis] + indices + a[axis+1:].
    mode clip (default; -1 -> 0), wrap, or raise (an error for indices outside [0, size))."""
    axis = normalize_axis('take', p.axis, a.dim())
    size = a.shape[axis]
    if p.mode == 'raise':
        positions = indices.long()
        positions = _require_in_range('take', positions, size, allow_negative=False)
    else:
        positions = _fit_index(indices, size, p.mode)
    out = torch.index_select(a, axis, positions.reshape(-1))
    return out.reshape(a.shape[:axis] + indices.shape + a.shape[axis + 1:])


def _take_shape(p, a, indices):
    axis = normalize_axis('take', p.axis, len(a))
    return tuple(a[:axis]) + tuple(indices) + tuple(a[axis + 1:])


register(OpDef('take', _take,
               params={'axis': Int(0), 'mode': Enum(('clip', 'raise', 'wrap'), 'clip')},
               inputs=('a', 'indices'), infer_type=_data_and_index_type,
               infer_shape=_when_known(_take_shape)))


def _batch_take(p, a, indices):
    """out[i] = a[i, indices[i]] for the rows of `a` (its last axis), indices clipped."""
    rows = a.reshape(-1, a.shape[-1])
    if indices.numel() != rows.shape[0]:
        raise MXNetError('batch_take: indices has %d elements, expected %d (one per row of a %s)'
                         % (indices.numel(), rows.shape[0], tuple(a.shape)))
    positions = _fit_index(indices.reshape(-1, 1), rows.shape[1], 'clip')
    return torch.gather(rows, 1, positions).reshape(indices.shape)


def _batch_take_type(p, ins, outs):
    data = first(ins[0], outs[0])
    index = np_dtype('int32')
    if ins[1] is not None and ins[1] != index:
        raise ShapeError('batch_take: indices must be int32, got %s' % ins[1])
    return [data, index], [data]


def _batch_take_shape(p, ins, outs):
    a, indices = ins
    if not (known(a) and known(indices)) or not a:
        return ins, outs
    if prod(indices) != prod(a[:-1]):
        raise MXNetError('batch_take: indices has %d elements, expected %d (one per row of a %s)'
                         % (prod(indices), prod(a[:-1]), tuple(a)))
    return ins, [tuple(indices)]


register(OpDef('batch_take', _batch_take, inputs=('a', 'indices'),
               infer_type=_batch_take_type, infer_shape=_batch_take_shape,
               differentiable=False))


# ---------------------------------------------------------------------------------------------
# gather_nd, scatter_nd: indices (M, Y...) address the first M axes of the data
# ---------------------------------------------------------------------------------------------
def _positions_nd(op_name, indices, shape, error=MXNetError):
    """The M index tensors of `indices` (M, Y...) into `shape`; negative ones count from the end."""
    indices = indices.long()
    m = indices.shape[0]
    if m > len(shape):
        raise MXNetError('%s: indices address %d axes, but the data has only %d'
                         % (op_name, m, len(shape)))
    sizes = torch.tensor(shape[:m], device=indices.device)
    indices = _require_in_range(op_name, indices,
                                sizes.reshape((m,) + (1,) * (indices.dim() - 1)),
                                allow_negative=True, error=error)
    return tuple(indices)


def _gather_nd(p, data, indices):
    """out[y...] = data[indices[0, y...], ..., indices[M-1, y...]]: shape Y... + data[M:]
    (an index out of range is an IndexError, as MXNet's)."""
    return data[_positions_nd('gather_nd', indices, data.shape, IndexError)]


def _scatter_nd(p, data, indices):
    """An array of `shape`, zero except out[indices[:, y...]] = data[y...] (the last write wins
    where indices repeat); data shape is indices.shape[1:] + shape[M:]."""
    positions = _positions_nd('scatter_nd', indices, p.shape)
    expected = tuple(indices.shape[1:]) + tuple(p.shape[indices.shape[0]:])
    if tuple(data.shape) != expected:
        raise MXNetError('scatter_nd: data has shape %s, expected %s for indices %s and shape=%s'
                         % (tuple(data.shape), expected, tuple(indices.shape), p.shape))
    out = torch.zeros(p.shape, dtype=data.dtype, device=data.device)
    return out.index_put(positions, data)


register(OpDef('gather_nd', _gather_nd, inputs=('data', 'indices'),
               infer_type=_data_and_index_type))
register(OpDef('scatter_nd', _scatter_nd, params={'shape': Shape()},
               inputs=('data', 'indices'), infer_type=_data_and_index_type))


# ---------------------------------------------------------------------------------------------
# shape_array, size_array
# ---------------------------------------------------------------------------------------------
def _shape_array(p, data):
    """The shape of data as a 1-D int64 array."""
    return torch.tensor(data.shape, dtype=torch.int64, device=data.device)


def _size_array(p, data):
    """The number of elements of data, shape (1,), int64."""
    return torch.tensor([data.numel()], dtype=torch.int64, device=data.device)


def _int64_output(p, ins, outs):
    return ins, [np_dtype('int64')]


register(OpDef('shape_array', _shape_array, infer_type=_int64_output, head_grad='zero',
               infer_shape=lambda p, ins, outs: (ins, [(len(ins[0]),) if ins[0] else outs[0]])))
register(OpDef('size_array', _size_array, infer_type=_int64_output, head_grad='zero',
               infer_shape=lambda p, ins, outs: (ins, [(1,)])))
