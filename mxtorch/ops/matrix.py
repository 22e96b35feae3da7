"""Layout and combination operators: transpose, expand_dims, Concat, SliceChannel, slice, tile,
repeat, stack, broadcast_*, where, dot, batch_dot, Sequence* ...

Each operator has a shape function from (partial) input shapes to its output shape that checks the
parameters with MXNetErrors naming the operator and parameter; the forward reuses it for the
imperative checks, and the shape rule (wrapped by `_rule`) for graph inference, where unknown
dims are 0. Forwards return views where torch can (permute, narrow, split, expand).
"""
import functools

import torch

from ..base import MXNetError
from .params import Bool, Enum, Float, Int, Shape
from .registry import OpDef, register
from .shapes import ShapeError, check, first, fmt, known, merge, prod, require, same_type


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _axis(op, name, axis, ndim, allow_negative=True):
    """`axis` as an index in [0, ndim); negative values count from the end when allowed."""
    low = -ndim if allow_negative else 0
    require(low <= axis < ndim, '%s: %s=%d is out of range [%d, %d) for an input with %d dims',
            op, name, axis, low, ndim, ndim)
    return axis % ndim


def _with_dim(shape, axis, size):
    return tuple(shape[:axis]) + (size,) + tuple(shape[axis + 1:])


def _without_dim(shape, axis):
    return tuple(shape[:axis]) + tuple(shape[axis + 1:])


def _agree(a, b):
    """Two partial dims agree when equal or when either is unknown (0)."""
    return not a or not b or a == b


def _dtype_names(arrays):
    return ', '.join(str(a.dtype).replace('torch.', '') for a in arrays)


def _same_dtype(op, arrays):
    require(len({a.dtype for a in arrays}) == 1, '%s: all inputs must have one dtype, got %s',
            op, _dtype_names(arrays))


def _rule(op):
    """Decorator for shape rules: their errors become ShapeErrors starting with the operator's
    name, which the graph pass reports with the node's name."""
    def wrap(fn):
        @functools.wraps(fn)
        def rule(p, ins, outs):
            try:
                return fn(p, ins, outs)
            except (MXNetError, ShapeError) as err:
                text = str(err)
                raise ShapeError(text if text.startswith(op) else '%s: %s' % (op, text)) from None
        return rule
    return wrap


def _data_rule(op, out_of, partial=True):
    """Rule of a one-input op: the output shape from the input shape, also from a partial one
    (unknown dims stay unknown) unless partial=False."""
    @_rule(op)
    def rule(p, ins, outs):
        data = ins[0]
        if data is None or not (partial or known(data)):
            return ins, outs
        return ins, [merge(outs[0], out_of(p, data))]
    return rule


def _pair_rule(op, out_of, partial=False):
    """Rule of a two-input op whose output shape follows from both inputs; from partial ones
    too if `partial` (a function of (p, lhs, rhs): when they are complete enough)."""
    @_rule(op)
    def rule(p, ins, outs):
        lhs, rhs = ins[0], ins[1]
        if lhs is None or rhs is None:
            return ins, outs
        ready = partial(p, lhs, rhs) if callable(partial) else partial
        if not (ready or (known(lhs) and known(rhs))):
            return ins, outs
        return ins, [merge(outs[0], out_of(p, lhs, rhs))]
    return rule


def _tied_type(free, fill_free=False):
    """Type rule: inputs at the `free` positions keep their own dtype (fill_free: unknown ones
    take the shared dtype); all other inputs and the outputs share one dtype."""
    def rule(p, ins, outs):
        tied = [t for i, t in enumerate(ins) if i not in free]
        _, new_outs = same_type(p, tied, outs)
        shared = new_outs[0]
        new_ins = [(first(t, shared) if fill_free else t) if i in free else shared
                   for i, t in enumerate(ins)]
        return new_ins, new_outs
    return rule


# ---------------------------------------------------------------------------------------------
# transpose, SwapAxis: permutations, inferred both ways
# ---------------------------------------------------------------------------------------------
def _transpose_axes(p, ndim):
    if not p.axes:
        return tuple(range(ndim - 1, -1, -1))
    require(sorted(p.axes) == list(range(ndim)),
            'transpose: axes=%s must be a permutation of 0..%d for an input with %d dims',
            p.axes, ndim - 1, ndim)
    return tuple(p.axes)


def _swap_axes(p, ndim):
    d1 = _axis('SwapAxis', 'dim1', p.dim1, ndim)
    d2 = _axis('SwapAxis', 'dim2', p.dim2, ndim)
    axes = list(range(ndim))
    axes[d1], axes[d2] = d2, d1
    return tuple(axes)


def _permutation_rule(op, axes_of):
    """Output dim i is input dim axes[i]; a known side fills the other."""
    @_rule(op)
    def rule(p, ins, outs):
        data, out = ins[0], outs[0]
        if data is None and out is None:
            return ins, outs
        axes = axes_of(p, len(data if data is not None else out))
        if data is not None:
            out = merge(out, tuple(data[a] for a in axes))
        back = [0] * len(axes)
        for i, a in enumerate(axes):
            back[a] = out[i]
        return [merge(data, tuple(back))], [out]
    return rule


def _transpose(p, data):
    """Permute the axes (axes=() reverses them)."""
    return data.permute(_transpose_axes(p, data.dim()))


def _swapaxis(p, data):
    """Swap axes dim1 and dim2."""
    return data.permute(_swap_axes(p, data.dim()))


register(OpDef('transpose', _transpose, params={'axes': Shape(())},
               infer_shape=_permutation_rule('transpose', _transpose_axes)))
register(OpDef('SwapAxis', _swapaxis, params={'dim1': Int(0), 'dim2': Int(0)},
               infer_shape=_permutation_rule('SwapAxis', _swap_axes), aliases=('swapaxes',)))


# ---------------------------------------------------------------------------------------------
# expand_dims, squeeze
# ---------------------------------------------------------------------------------------------
def _expand_axis(p, ndim):
    """Position of the new axis in the output (axis may be negative: -1 appends)."""
    require(-ndim - 1 <= p.axis <= ndim, 'expand_dims: axis=%d is out of range [%d, %d] for an '
            'input with %d dims', p.axis, -ndim - 1, ndim, ndim)
    return p.axis % (ndim + 1)


def _expand_dims(p, data):
    """Insert a size-1 axis at `axis`."""
    return data.unsqueeze(_expand_axis(p, data.dim()))


@_rule('expand_dims')
def _expand_dims_shape(p, ins, outs):
    data, out = ins[0], outs[0]
    if data is not None:
        axis = _expand_axis(p, len(data))
        out = merge(out, tuple(data[:axis]) + (1,) + tuple(data[axis:]))
    if out is not None:
        data = merge(data, _without_dim(out, _expand_axis(p, len(out) - 1)))
    return [data], [out]


register(OpDef('expand_dims', _expand_dims, params={'axis': Int()},
               infer_shape=_expand_dims_shape))


def _squeeze_shape(p, shape):
    """`shape` without the size-1 axes (all of them when axis is None); (1,) if none is left."""
    if p.axis is None:
        axes = {i for i, d in enumerate(shape) if d == 1}
    else:
        axes = [_axis('squeeze', 'axis', a, len(shape)) for a in p.axis]
        require(len(set(axes)) == len(axes), 'squeeze: axis=%s names an axis twice', p.axis)
        for a in axes:
            require(shape[a] == 1, 'squeeze: axis %d has size %d; only size-1 axes can be '
                    'squeezed (input shape %s)', a, shape[a], fmt(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes) or (1,)


def _squeeze(p, data):
    """Remove size-1 axes."""
    return data.reshape(_squeeze_shape(p, data.shape))


register(OpDef('squeeze', _squeeze, params={'axis': Shape(None)},
               infer_shape=_data_rule('squeeze', _squeeze_shape, partial=False)))


# ---------------------------------------------------------------------------------------------
# Concat, stack
# ---------------------------------------------------------------------------------------------
def _concat(p, *args):
    """Join arrays along `dim`; all other dims must match."""
    axis = _axis('Concat', 'dim', p.dim, args[0].dim())
    reference = _with_dim(args[0].shape, axis, 0)
    for i, a in enumerate(args):
        require(a.dim() == args[0].dim() and _with_dim(a.shape, axis, 0) == reference,
                'Concat: input %d of shape %s does not match input 0 of shape %s outside '
                'dim=%d', i, fmt(a.shape), fmt(args[0].shape), p.dim)
    _same_dtype('Concat', args)
    return torch.cat(args, axis)


@_rule('Concat')
def _concat_shape(p, ins, outs):
    """Dims other than `dim` are shared by all; the output size along `dim` is the sum, and a
    single unknown input size along `dim` is what the known output leaves for it."""
    given = [s for s in list(ins) + list(outs) if s is not None]
    if not given:
        return ins, outs
    axis = _axis('Concat', 'dim', p.dim, len(given[0]))
    shared = None
    for s in given:
        shared = merge(shared, _with_dim(s, axis, 0))
    sizes = [s[axis] if s is not None else 0 for s in ins]
    total = outs[0][axis] if outs[0] is not None else 0
    unknown = [i for i, n in enumerate(sizes) if not n]
    if not unknown:
        check(_agree(total, sum(sizes)), 'Concat: inputs add up to %d along dim %d, the output '
              'has %d', sum(sizes), p.dim, total)
        total = sum(sizes)
    elif len(unknown) == 1 and total:
        rest = total - sum(sizes)
        check(rest > 0, 'Concat: the output has %d along dim %d, the known inputs already %d',
              total, p.dim, sum(sizes))
        sizes[unknown[0]] = rest
    new_ins = [merge(s, _with_dim(shared, axis, n)) for s, n in zip(ins, sizes)]
    return new_ins, [merge(outs[0], _with_dim(shared, axis, total))]


register(OpDef('Concat', _concat, params={'num_args': Int(), 'dim': Int(1)},
               variadic='num_args', infer_shape=_concat_shape, aliases=('concat',)))


def _stack_axis(p, ndim):
    """Position of the new axis among the ndim + 1 output axes."""
    return _axis('stack', 'axis', p.axis, ndim + 1)


def _stack(p, *args):
    """Join same-shape arrays along a new axis."""
    for i, a in enumerate(args):
        require(a.shape == args[0].shape, 'stack: input %d has shape %s, input 0 has %s', i,
                fmt(a.shape), fmt(args[0].shape))
    _same_dtype('stack', args)
    return torch.stack(args, _stack_axis(p, args[0].dim()))


@_rule('stack')
def _stack_shape(p, ins, outs):
    item, out = None, outs[0]
    for s in ins:
        item = merge(item, s)
    if out is not None:
        item = merge(item, _without_dim(out, _stack_axis(p, len(out) - 1)))
    if item is None:
        return ins, outs
    axis = _stack_axis(p, len(item))
    return [item] * len(ins), [merge(out, item[:axis] + (p.num_args,) + item[axis:])]


register(OpDef('stack', _stack, params={'axis': Int(0), 'num_args': Int()},
               variadic='num_args', infer_shape=_stack_shape))


# ---------------------------------------------------------------------------------------------
# SliceChannel (split), _split_v2
# ---------------------------------------------------------------------------------------------
def _numbered_outputs(count):
    return tuple('output%d' % i for i in range(count))


def _split_count(p):
    require(p.num_outputs >= 1, 'SliceChannel: num_outputs must be >= 1, got %d',
            p.num_outputs)
    return p.num_outputs


def _split_part(p, shape):
    """(axis, size of each part along it; 0 when unknown), checking divisibility."""
    axis = _axis('SliceChannel', 'axis', p.axis, len(shape))
    size, n = shape[axis], _split_count(p)
    require(size % n == 0, 'SliceChannel: axis %d of size %d cannot be split into '
            'num_outputs=%d equal parts (input shape %s)', p.axis, size, n, fmt(shape))
    require(not (p.squeeze_axis and size) or size == n, 'SliceChannel: squeeze_axis=True needs '
            'axis %d (size %d) to have size num_outputs=%d', p.axis, size, n)
    return axis, size // n


def _one_or_tuple(parts):
    return parts[0] if len(parts) == 1 else tuple(parts)


def _slice_channel(p, data):
    """Split into num_outputs equal parts along `axis` (squeeze_axis drops the size-1 axis)."""
    axis, part = _split_part(p, data.shape)
    parts = data.unbind(axis) if p.squeeze_axis else data.split(part, axis)
    return _one_or_tuple(parts)


@_rule('SliceChannel')
def _slice_channel_shape(p, ins, outs):
    data, out = ins[0], None
    for o in outs:
        out = merge(out, o)
    if out is not None:
        ndim = len(out) + (1 if p.squeeze_axis else 0)
        axis = _axis('SliceChannel', 'axis', p.axis, ndim)
        rest = out[axis:] if p.squeeze_axis else out[axis + 1:]
        part = 1 if p.squeeze_axis else out[axis]
        data = merge(data, tuple(out[:axis]) + (part * p.num_outputs,) + tuple(rest))
    if data is None:
        return ins, outs
    axis, part = _split_part(p, data)
    out = merge(out, _without_dim(data, axis) if p.squeeze_axis else _with_dim(data, axis, part))
    return [data], [out] * p.num_outputs


register(OpDef('SliceChannel', _slice_channel,
               params={'num_outputs': Int(lower=1, count=True), 'axis': Int(1),
                       'squeeze_axis': Bool(False)},
               outputs=lambda p: _numbered_outputs(_split_count(p)),
               infer_shape=_slice_channel_shape, aliases=('split',)))


def _split_v2_count(p):
    count = p.sections if p.sections > 0 else len(p.indices)
    require(count >= 1, '_split_v2: give sections > 0 or at least one index in indices')
    return count


def _split_v2_sizes(p, shape):
    """(axis, part sizes): `sections` near-equal parts (the first ones one larger), or parts
    starting at each of `indices` (which starts at 0) and ending at the next one."""
    axis = _axis('_split_v2', 'axis', p.axis, len(shape))
    size = shape[axis]
    if p.sections > 0:
        base, extra = divmod(size, _split_v2_count(p))
        sizes = [base + 1] * extra + [base] * (p.sections - extra)
    else:
        bounds = list(p.indices) + [size]
        require(bounds[0] == 0, '_split_v2: indices=%s must start at 0', p.indices)
        require(all(a <= b for a, b in zip(bounds, bounds[1:])), '_split_v2: indices=%s must '
                'be increasing and at most the axis size %d', p.indices, size)
        sizes = [b - a for a, b in zip(bounds, bounds[1:])]
    require(not p.squeeze_axis or all(n == 1 for n in sizes), '_split_v2: squeeze_axis=True '
            'needs parts of size 1, got sizes %s', sizes)
    return axis, sizes


def _split_v2(p, data):
    """Split along `axis` at `indices`, or into `sections` parts."""
    axis, sizes = _split_v2_sizes(p, data.shape)
    parts = data.split(sizes, axis)
    if p.squeeze_axis:
        parts = [part.squeeze(axis) for part in parts]
    return _one_or_tuple(parts)


@_rule('_split_v2')
def _split_v2_shape(p, ins, outs):
    data = ins[0]
    if not known(data):
        return ins, outs
    axis, sizes = _split_v2_sizes(p, data)
    new = [_without_dim(data, axis) if p.squeeze_axis else _with_dim(data, axis, n)
           for n in sizes]
    return ins, [merge(o, n) for o, n in zip(outs, new)]


register(OpDef('_split_v2', _split_v2,
               params={'indices': Shape(), 'axis': Int(1), 'squeeze_axis': Bool(False),
                       'sections': Int(0, count=True)},
               outputs=lambda p: _numbered_outputs(_split_v2_count(p)),
               infer_shape=_split_v2_shape))


# ---------------------------------------------------------------------------------------------
# slice (crop), slice_axis, slice_like
# ---------------------------------------------------------------------------------------------
def _slice_ranges(p, shape):
    """range() of the kept indices on each leading axis (Python slice semantics: None entries
    are open ends, negative indices count from the end, out-of-range bounds are clipped)."""
    n = len(p.begin)
    require(len(p.end) == n, 'slice: begin=%s and end=%s must have one length', p.begin, p.end)
    require(not p.step or len(p.step) == n, 'slice: step=%s must be empty or as long as '
            'begin=%s', p.step, p.begin)
    require(n <= len(shape), 'slice: begin=%s has more entries than the input has dims (%s)',
            p.begin, fmt(shape))
    ranges = []
    for i in range(n):
        step = p.step[i] if p.step and p.step[i] is not None else 1
        require(step != 0, 'slice: step[%d] must not be 0 (step=%s)', i, p.step)
        ranges.append(range(*slice(p.begin[i], p.end[i], step).indices(shape[i])))
    return ranges


def _slice_shape(p, shape):
    ranges = _slice_ranges(p, shape)
    return tuple(len(r) for r in ranges) + tuple(shape[len(ranges):])


def _slice(p, data):
    """data[begin:end:step] on the leading axes; a view unless a step is negative."""
    index, flipped = [], []
    for axis, r in enumerate(_slice_ranges(p, data.shape)):
        start, step = r.start, r.step
        if step < 0:
            flipped.append(axis)
            start, step = data.shape[axis] - 1 - start, -step
        index.append(slice(start, start + len(r) * step, step))
    source = data.flip(flipped) if flipped else data
    return source[tuple(index)]


register(OpDef('slice', _slice,
               params={'begin': Shape(allow_none=True), 'end': Shape(allow_none=True),
                       'step': Shape((), allow_none=True)},
               infer_shape=_data_rule('slice', _slice_shape), aliases=('crop',)))


def _slice_region(p, shape):
    """(index, flipped axes): positive-step slices covering slice()'s region of `shape`; the
    values written there must be flipped on the axes whose step is negative."""
    index, flipped = [], []
    for axis, r in enumerate(_slice_ranges(p, shape)):
        if r.step < 0:
            flipped.append(axis)
            r = r[::-1]
        index.append(slice(r.start, r.start + len(r) * r.step, r.step) if len(r) else
                     slice(0, 0))
    return tuple(index), flipped


def _slice_assign(p, lhs, rhs):
    """lhs with its slice(begin, end, step) region replaced by rhs (a new array)."""
    index, flipped = _slice_region(p, lhs.shape)
    region = _slice_shape(p, tuple(lhs.shape))
    require(tuple(rhs.shape) == region, '_slice_assign: rhs of shape %s does not match the '
            'region of shape %s that begin=%s, end=%s select', fmt(rhs.shape), fmt(region),
            p.begin, p.end)
    out = lhs.clone()
    out[index] = rhs.flip(flipped) if flipped else rhs
    return out


def _slice_assign_scalar(p, data):
    """data with its slice(begin, end, step) region set to `scalar` (a new array)."""
    index, _ = _slice_region(p, data.shape)
    out = data.clone()
    out[index] = p.scalar
    return out


def _slice_assign_shape(p, ins, outs):
    shape = merge(ins[0], outs[0])
    return [shape] + list(ins[1:]), [shape]


_SLICE_PARAMS = {'begin': Shape(allow_none=True), 'end': Shape(allow_none=True),
                 'step': Shape((), allow_none=True)}
register(OpDef('_slice_assign', _slice_assign, params=_SLICE_PARAMS, inputs=('lhs', 'rhs'),
               infer_shape=_slice_assign_shape, aliases=('_crop_assign',)))
register(OpDef('_slice_assign_scalar', _slice_assign_scalar,
               params=dict(_SLICE_PARAMS, scalar=Float(0.0)),
               infer_shape=_slice_assign_shape, aliases=('_crop_assign_scalar',)))


def _slice_axis_range(p, shape):
    """(axis, begin, end) with negatives resolved; end None is the axis size."""
    axis = _axis('slice_axis', 'axis', p.axis, len(shape))
    size = shape[axis]
    begin = p.begin + size if p.begin < 0 else p.begin
    end = size if p.end is None else (p.end + size if p.end < 0 else p.end)
    require(0 <= begin < end <= size, 'slice_axis: begin=%d, end=%s select nothing valid from '
            'axis %d of size %d', p.begin, p.end, p.axis, size)
    return axis, begin, end


def _slice_axis_shape(p, shape):
    axis = _axis('slice_axis', 'axis', p.axis, len(shape))
    if not shape[axis]:
        return tuple(shape)
    axis, begin, end = _slice_axis_range(p, shape)
    return _with_dim(shape, axis, end - begin)


def _slice_axis(p, data):
    """data[begin:end] along `axis` (a view)."""
    axis, begin, end = _slice_axis_range(p, data.shape)
    return data.narrow(axis, begin, end - begin)


register(OpDef('slice_axis', _slice_axis,
               params={'axis': Int(), 'begin': Int(), 'end': Int(None)},
               infer_shape=_data_rule('slice_axis', _slice_axis_shape)))


def _slice_like_shape(p, shape, like):
    """`shape` with the dims on `axes` (all axes when empty) cut to those of `like`."""
    if not p.axes:
        require(len(shape) == len(like), 'slice_like: without axes, data %s and shape_like %s '
                'must have one number of dims', fmt(shape), fmt(like))
        axes = range(len(shape))
    else:
        axes = [_axis('slice_like', 'axes', a, len(shape)) for a in p.axes]
        for a in axes:
            require(a < len(like), 'slice_like: axis %d does not exist in shape_like %s', a,
                    fmt(like))
    out = list(shape)
    for a in axes:
        require(not shape[a] or like[a] <= shape[a],
                'slice_like: axis %d of shape_like %s is larger than that of data %s', a,
                fmt(like), fmt(shape))
        out[a] = like[a]
    return tuple(out)


def _slice_like(p, data, shape_like):
    """data cut to the size of shape_like on `axes` (all axes when empty), from the start."""
    out = _slice_like_shape(p, data.shape, shape_like.shape)
    return data[tuple(slice(0, n) for n in out)]


register(OpDef('slice_like', _slice_like, params={'axes': Shape(())},
               inputs=('data', 'shape_like'),
               infer_shape=_pair_rule('slice_like', _slice_like_shape, partial=True),
               infer_type=_tied_type(free=(1,))))


# ---------------------------------------------------------------------------------------------
# tile, repeat, reverse
# ---------------------------------------------------------------------------------------------
def _tile_reps(p, ndim):
    """reps and the input's dims padded with leading 1s to one length -> (reps, ndim)."""
    for r in p.reps:
        require(r > 0, 'tile: reps=%s must be positive', p.reps)
    n = max(ndim, len(p.reps))
    return (1,) * (n - len(p.reps)) + tuple(p.reps), n


def _tile_shape(p, shape):
    reps, n = _tile_reps(p, len(shape))
    padded = (1,) * (n - len(shape)) + tuple(shape)
    return tuple(d * r for d, r in zip(padded, reps))


def _tile(p, data):
    """Repeat the whole array reps[i] times along axis i (numpy.tile)."""
    reps, _ = _tile_reps(p, data.dim())
    return data.repeat(reps)


register(OpDef('tile', _tile, params={'reps': Shape()},
               infer_shape=_data_rule('tile', _tile_shape)))


def _repeat_shape(p, shape):
    require(p.repeats >= 0, 'repeat: repeats=%d must not be negative', p.repeats)
    if p.axis is None:
        return (prod(shape) * p.repeats,)
    axis = _axis('repeat', 'axis', p.axis, len(shape))
    return _with_dim(shape, axis, shape[axis] * p.repeats)


def _repeat(p, data):
    """Repeat each element `repeats` times along `axis` (of the flattened array if None)."""
    _repeat_shape(p, data.shape)
    if p.axis is None:
        return data.reshape(-1).repeat_interleave(p.repeats)
    return data.repeat_interleave(p.repeats, dim=p.axis % data.dim())


register(OpDef('repeat', _repeat, params={'repeats': Int(), 'axis': Int(None)},
               infer_shape=_data_rule('repeat', _repeat_shape)))


def _reverse_dims(p, ndim):
    """Axes to flip: those listed an odd number of times (non-negative, as MXNet)."""
    for a in p.axis:
        _axis('reverse', 'axis', a, ndim, allow_negative=False)
    return [a for a in sorted(set(p.axis)) if p.axis.count(a) % 2]


def _reverse(p, data):
    """Reverse the order of elements along each axis in `axis`."""
    return data.flip(_reverse_dims(p, data.dim()))


@_rule('reverse')
def _reverse_shape(p, ins, outs):
    s = merge(ins[0], outs[0])
    if s is not None:
        _reverse_dims(p, len(s))
    return [s], [s]


register(OpDef('reverse', _reverse, params={'axis': Shape()}, infer_shape=_reverse_shape,
               aliases=('flip',)))


# ---------------------------------------------------------------------------------------------
# broadcast_to, broadcast_axis, broadcast_like (expanded views), reshape_like
# ---------------------------------------------------------------------------------------------
def _broadcast_check(op, shape, target):
    require(len(shape) == len(target), '%s: an input of shape %s cannot be broadcast to %s',
            op, fmt(shape), fmt(target))
    for have, want in zip(shape, target):
        require(have in (1, 0, want) or not want, '%s: an input of shape %s cannot be broadcast '
                'to %s', op, fmt(shape), fmt(target))
    return tuple(target)


def _broadcast_to_shape(p, shape):
    """The `shape` parameter with its 0 entries taken from the input."""
    require(len(p.shape) == len(shape), 'broadcast_to: an input of shape %s cannot be broadcast '
            'to shape=%s', fmt(shape), p.shape)
    target = tuple(want or have for have, want in zip(shape, p.shape))
    return _broadcast_check('broadcast_to', shape, target)


def _broadcast_to(p, data):
    """Broadcast size-1 axes to `shape` (0 keeps the input's dim)."""
    return data.expand(_broadcast_to_shape(p, data.shape))


register(OpDef('broadcast_to', _broadcast_to, params={'shape': Shape(())},
               infer_shape=_data_rule('broadcast_to', _broadcast_to_shape)))


def _broadcast_axis_shape(p, shape):
    """Each axis in `axis` (of size 1) becomes the matching entry of `size`."""
    require(len(p.axis) == len(p.size), 'broadcast_axis: axis=%s and size=%s must have one '
            'length', p.axis, p.size)
    out = list(shape)
    for a, n in zip(p.axis, p.size):
        a = _axis('broadcast_axis', 'axis', a, len(shape), allow_negative=False)
        require(out[a] == 1, 'broadcast_axis: axis %d has size %d; only size-1 axes can be '
                'broadcast (input shape %s)', a, out[a], fmt(shape))
        out[a] = n
    return tuple(out)


def _broadcast_axis(p, data):
    """Broadcast the size-1 axes in `axis` to the sizes in `size`."""
    return data.expand(_broadcast_axis_shape(p, data.shape))


register(OpDef('broadcast_axis', _broadcast_axis, params={'axis': Shape(()), 'size': Shape(())},
               infer_shape=_data_rule('broadcast_axis', _broadcast_axis_shape, partial=False),
               aliases=('broadcast_axes',)))


def _broadcast_like_shape(p, lhs, rhs):
    """rhs's shape, or lhs's with the lhs_axes dims taken from rhs's rhs_axes dims."""
    if p.lhs_axes is None or p.rhs_axes is None:
        return _broadcast_check('broadcast_like', lhs, rhs)
    require(len(p.lhs_axes) == len(p.rhs_axes), 'broadcast_like: lhs_axes=%s and rhs_axes=%s '
            'must have one length', p.lhs_axes, p.rhs_axes)
    require(len(p.lhs_axes) > 0, 'broadcast_like: lhs_axes and rhs_axes must not be empty')
    target = list(lhs)
    for la, ra in zip(p.lhs_axes, p.rhs_axes):
        target[_axis('broadcast_like', 'lhs_axes', la, len(lhs))] = \
            rhs[_axis('broadcast_like', 'rhs_axes', ra, len(rhs))]
    return _broadcast_check('broadcast_like', lhs, target)


def _broadcast_like(p, lhs, rhs):
    """Broadcast lhs to the shape of rhs (or on the given axes only)."""
    return lhs.expand(_broadcast_like_shape(p, lhs.shape, rhs.shape))


register(OpDef('broadcast_like', _broadcast_like,
               params={'lhs_axes': Shape(None), 'rhs_axes': Shape(None)},
               inputs=('lhs', 'rhs'),
               infer_shape=_pair_rule('broadcast_like', _broadcast_like_shape),
               infer_type=_tied_type(free=(1,))))


def _dim_range(side, begin, end, ndim):
    """[begin, end) over ndim dims; None is an open end, negatives count from the end."""
    b = 0 if begin is None else (begin + ndim if begin < 0 else begin)
    e = ndim if end is None else (end + ndim if end < 0 else end)
    require(0 <= b < e <= ndim, 'reshape_like: %s_begin=%s, %s_end=%s select no dims of a '
            '%d-d %s', side, begin, side, end, ndim, side)
    return b, e


def _reshape_like_shape(p, lhs, rhs):
    """lhs's shape with dims [lhs_begin, lhs_end) replaced by rhs's dims [rhs_begin, rhs_end)."""
    lb, le = _dim_range('lhs', p.lhs_begin, p.lhs_end, len(lhs))
    rb, re = _dim_range('rhs', p.rhs_begin, p.rhs_end, len(rhs))
    out = tuple(lhs[:lb]) + tuple(rhs[rb:re]) + tuple(lhs[le:])
    require(prod(out) == prod(lhs), 'reshape_like: lhs of shape %s (size %d) cannot become %s '
            '(size %d)', fmt(lhs), prod(lhs), fmt(out), prod(out))
    return out


def _reshape_like(p, lhs, rhs):
    """lhs reshaped to (part of) rhs's shape."""
    return lhs.reshape(_reshape_like_shape(p, lhs.shape, rhs.shape))


register(OpDef('reshape_like', _reshape_like,
               params={'lhs_begin': Int(None), 'lhs_end': Int(None), 'rhs_begin': Int(None),
                       'rhs_end': Int(None)},
               inputs=('lhs', 'rhs'),
               infer_shape=_pair_rule('reshape_like', _reshape_like_shape),
               infer_type=_tied_type(free=(1,))))


# ---------------------------------------------------------------------------------------------
# diag, where
# ---------------------------------------------------------------------------------------------
def _diag_axes(p, ndim):
    a1 = _axis('diag', 'axis1', p.axis1, ndim)
    a2 = _axis('diag', 'axis2', p.axis2, ndim)
    require(a1 != a2, 'diag: axis1=%d and axis2=%d name one axis', p.axis1, p.axis2)
    return a1, a2


def _diag_shape(p, shape):
    if len(shape) == 1:
        n = shape[0] + abs(p.k)
        return (n, n)
    a1, a2 = _diag_axes(p, len(shape))
    rows, cols = shape[a1], shape[a2]
    length = min(rows, cols - p.k) if p.k >= 0 else min(rows + p.k, cols)
    require(length >= 0, 'diag: k=%d is out of range for a (%d, %d) plane', p.k, rows, cols)
    return tuple(d for i, d in enumerate(shape) if i not in (a1, a2)) + (length,)


def _diag(p, data):
    """1-D: a square matrix with data on diagonal k. N-D: diagonal k of the (axis1, axis2)
    planes, as a new last axis (a view)."""
    if data.dim() == 1:
        return torch.diag(data, p.k)
    _diag_shape(p, tuple(data.shape))
    a1, a2 = _diag_axes(p, data.dim())
    return torch.diagonal(data, p.k, a1, a2)


register(OpDef('diag', _diag, params={'k': Int(0), 'axis1': Int(0), 'axis2': Int(1)},
               infer_shape=_data_rule('diag', _diag_shape, partial=False)))


def _where_check(condition, x):
    """True when condition has x's shape; False when it is 1-D selecting rows of x."""
    if tuple(condition) == tuple(x):
        return True
    require(len(condition) == 1 and len(x) >= 1 and _agree(condition[0], x[0]),
            'where: condition of shape %s must have the shape of x %s or be 1-D of length %s',
            fmt(condition), fmt(x), x[0] if len(x) else '?')
    return False


def _where(p, condition, x, y):
    """x where condition is non-zero, else y; a 1-D condition picks whole rows."""
    require(x.shape == y.shape, 'where: x of shape %s and y of shape %s must have one shape',
            fmt(x.shape), fmt(y.shape))
    _same_dtype('where', (x, y))
    if not _where_check(condition.shape, x.shape):
        condition = condition.reshape((-1,) + (1,) * (x.dim() - 1))
    return torch.where(condition != 0, x, y)


@_rule('where')
def _where_shape(p, ins, outs):
    condition, x, y = ins
    if not known(condition):         # as MXNet: nothing is inferred before the condition is
        return ins, outs
    s = merge(merge(x, y), outs[0])
    if s is not None:                # (MXNet checks x against the condition without filling it)
        if len(condition) == len(s):
            merge(condition, s)
        else:
            _where_check(condition, s)
    return [condition, s, s], [s]


register(OpDef('where', _where, inputs=('condition', 'x', 'y'), infer_shape=_where_shape,
               infer_type=_tied_type(free=(0,))))


# ---------------------------------------------------------------------------------------------
# dot, batch_dot
# ---------------------------------------------------------------------------------------------
def _require_float(op, lhs, rhs):
    require(lhs.dtype == rhs.dtype and lhs.dtype.is_floating_point, '%s: inputs must be '
            'floating point of one dtype, got %s', op, _dtype_names((lhs, rhs)))


def _dot_split(shape, contract_first):
    """(kept dims, contracted dims) of a dot operand; a 1-D operand is contracted whole."""
    if len(shape) == 1:
        return (), tuple(shape)
    if contract_first:
        return tuple(shape[1:]), tuple(shape[:1])
    return tuple(shape[:-1]), tuple(shape[-1:])


def _dot_shape(p, lhs, rhs):
    """Kept lhs dims + kept rhs dims; (1,) for two vectors."""
    lhs_kept, lhs_sum = _dot_split(lhs, p.transpose_a)
    rhs_kept, rhs_sum = _dot_split(rhs, not p.transpose_b)
    require(not (known(lhs_sum) and known(rhs_sum)) or prod(lhs_sum) == prod(rhs_sum),
            'dot: shapes %s and %s do not match for transpose_a=%s, transpose_b=%s',
            fmt(lhs), fmt(rhs), p.transpose_a, p.transpose_b)
    return (lhs_kept + rhs_kept) or (1,)


def _dot(p, lhs, rhs):
    """Matrix product contracting lhs's last axis (first with transpose_a) with rhs's first
    axis (last with transpose_b); N-D operands are flattened to matrices around that axis."""
    out_shape = _dot_shape(p, lhs.shape, rhs.shape)
    _require_float('dot', lhs, rhs)
    a = lhs.reshape(lhs.shape[0], -1).t() if p.transpose_a else lhs.reshape(-1, lhs.shape[-1])
    b = rhs.reshape(-1, rhs.shape[-1]).t() if p.transpose_b else rhs.reshape(rhs.shape[0], -1)
    return (a @ b).reshape(out_shape)


def _batch_dot_shape(p, lhs, rhs):
    """Shared batch dims + (rows of lhs, cols of rhs) after the optional transposes."""
    require(len(lhs) >= 3 and len(lhs) == len(rhs), 'batch_dot: needs two arrays with one '
            'number (>= 3) of dims, got %s and %s', fmt(lhs), fmt(rhs))
    require(all(_agree(a, b) for a, b in zip(lhs[:-2], rhs[:-2])), 'batch_dot: the batch dims '
            'of %s and %s differ', fmt(lhs), fmt(rhs))
    rows, lhs_inner = (lhs[-1], lhs[-2]) if p.transpose_a else (lhs[-2], lhs[-1])
    rhs_inner, cols = (rhs[-1], rhs[-2]) if p.transpose_b else (rhs[-2], rhs[-1])
    require(_agree(lhs_inner, rhs_inner), 'batch_dot: shapes %s and %s do not match for '
            'transpose_a=%s, transpose_b=%s', fmt(lhs), fmt(rhs), p.transpose_a, p.transpose_b)
    return tuple(a or b for a, b in zip(lhs[:-2], rhs[:-2])) + (rows, cols)


def _batch_dot(p, lhs, rhs):
    """Batched matrix product over the leading dims."""
    _batch_dot_shape(p, lhs.shape, rhs.shape)
    _require_float('batch_dot', lhs, rhs)
    a = lhs.transpose(-1, -2) if p.transpose_a else lhs
    b = rhs.transpose(-1, -2) if p.transpose_b else rhs
    return torch.matmul(a, b)


def _batch_dot_partial(p, lhs, rhs):
    """As MXNet, batch_dot infers from partial shapes only when lhs's last dim and rhs's
    second-last dim are known, whatever the transposes (other ranks go to the full check)."""
    if len(lhs) < 3 or len(lhs) != len(rhs):
        return True
    return bool(lhs[-1] and rhs[-2])


for _name, _fn, _shape, _partial in (('dot', _dot, _dot_shape, True),
                                     ('batch_dot', _batch_dot, _batch_dot_shape,
                                      _batch_dot_partial)):
    register(OpDef(_name, _fn, inputs=('lhs', 'rhs'),
                   params={'transpose_a': Bool(False), 'transpose_b': Bool(False),
                           'forward_stype': Enum(('csr', 'default', 'row_sparse'), None)},
                   infer_shape=_pair_rule(_name, _shape, partial=_partial)))


# ---------------------------------------------------------------------------------------------
# SequenceMask, SequenceLast, SequenceReverse: time axis `axis`, batch axis the other of 0/1
# ---------------------------------------------------------------------------------------------
def _sequence_check(op, p, shape, axes):
    require(len(shape) >= 2, '%s: data must have 2 or more dims, got %s', op, fmt(shape))
    require(p.axis in axes, '%s: axis=%d is not supported (allowed: %s)', op, p.axis,
            ', '.join(str(a) for a in axes))
    return shape[1 - p.axis]


def _sequence_lengths(op, p, data, sequence_length):
    batch = data.shape[1 - p.axis]
    require(tuple(sequence_length.shape) == (batch,), '%s: sequence_length must have shape '
            '(%d,), got %s', op, batch, fmt(sequence_length.shape))
    return sequence_length.long()   # truncates fractional lengths, as MXNet's cast


def _valid_steps(data, lengths, axis):
    """Bool mask broadcastable to data: True at steps before each sequence's length."""
    steps = torch.arange(data.shape[axis], device=data.device)
    valid = steps[:, None] < lengths[None, :] if axis == 0 else steps[None, :] < lengths[:, None]
    return valid.reshape(valid.shape + (1,) * (data.dim() - 2))


def _sequence_mask(p, data, sequence_length=None):
    """Set the steps at or after each sequence's length to `value`."""
    _sequence_check('SequenceMask', p, data.shape, (0, 1))
    if sequence_length is None:
        return data.view_as(data)
    lengths = _sequence_lengths('SequenceMask', p, data, sequence_length)
    value = p.value if data.is_floating_point() else int(p.value)
    return data.masked_fill(~_valid_steps(data, lengths, p.axis), value)


def _sequence_last(p, data, sequence_length=None):
    """The last valid step of each sequence (the last step without lengths)."""
    _sequence_check('SequenceLast', p, data.shape, (0, 1))
    if sequence_length is None:
        return data.select(p.axis, -1)
    lengths = _sequence_lengths('SequenceLast', p, data, sequence_length)
    last = (lengths - 1).clamp(0, data.shape[p.axis] - 1)
    batch = torch.arange(last.shape[0], device=data.device)
    return data[last, batch] if p.axis == 0 else data[batch, last]


def _sequence_reverse(p, data, sequence_length=None):
    """Reverse the first `length` steps of each sequence (all steps without lengths)."""
    _sequence_check('SequenceReverse', p, data.shape, (0,))
    if sequence_length is None:
        return data.flip(0)
    total = data.shape[0]
    lengths = _sequence_lengths('SequenceReverse', p, data, sequence_length).clamp(0, total)
    steps = torch.arange(total, device=data.device)[:, None]
    source = torch.where(steps < lengths[None, :], lengths[None, :] - 1 - steps, steps)
    return data[source, torch.arange(data.shape[1], device=data.device)[None, :]]


def _sequence_rule(op, axes, drop_axis):
    @_rule(op)
    def rule(p, ins, outs):
        data = ins[0]
        if data is None:
            return ins, outs
        batch = _sequence_check(op, p, data, axes)
        out = _without_dim(data, p.axis) if drop_axis else tuple(data)
        lengths = [merge(ins[1], (batch,))] if p.use_sequence_length else []
        return [data] + lengths, [merge(outs[0], out)]
    return rule


def _sequence_inputs(p):
    return ('data', 'sequence_length') if p.use_sequence_length else ('data',)


for _name, _fn, _axes, _extra in (
        ('SequenceMask', _sequence_mask, (0, 1), {'value': Float(0.0)}),
        ('SequenceLast', _sequence_last, (0, 1), {}),
        ('SequenceReverse', _sequence_reverse, (0,), {})):
    register(OpDef(_name, _fn, params=dict({'use_sequence_length': Bool(False)}, **_extra,
                                           axis=Int(0)),
                   inputs=_sequence_inputs,
                   infer_shape=_sequence_rule(_name, _axes, _name == 'SequenceLast'),
                   infer_type=_tied_type(free=(1,), fill_free=True)))
