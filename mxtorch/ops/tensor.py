"""Shape, layout and indexing operators."""
import functools

import numpy as np
import torch

from ..base import MXNetError, np_dtype, torch_dtype
from .params import Bool, DType, Float, Int, Shape, Str
from .registry import OpDef, register
from .shapes import check, known, merge, prod, same_shape


# ---------------------------------------------------------------------------------------------
# Reshape
# ---------------------------------------------------------------------------------------------
def reshape_target(src, codes, reverse=False):
    """The output shape of MXNet's Reshape for input shape `src` and special `codes`.

    Codes: n > 0 -> n; 0 -> copy the input dim; -1 -> inferred (at most one); -2 -> copy all
    remaining input dims; -3 -> product of the next two input dims; -4 a b -> split the next input
    dim into a*b (one of a, b may be -1). reverse applies the codes right to left.
    """
    src = tuple(src)
    codes = tuple(codes)
    if reverse:
        src, codes = src[::-1], codes[::-1]
    out, infer_at, i, cur = [], -1, 0, 0

    def take(what):
        nonlocal cur
        if cur >= len(src):
            raise MXNetError('Reshape: code %s at position %d has no input dim left (input %s, '
                             'shape %s)' % (what, i, src, codes))
        cur += 1
        return src[cur - 1]

    while i < len(codes):
        c = codes[i]
        if c == 0:
            out.append(take(0))
        elif c == -1:
            if infer_at >= 0:
                raise MXNetError('Reshape: at most one -1 is allowed in shape %s' % (codes,))
            infer_at = len(out)
            out.append(1)
            if cur < len(src):
                cur += 1
        elif c == -2:
            out.extend(src[cur:])
            cur = len(src)
        elif c == -3:
            d1 = take(-3)
            d2 = take(-3)
            out.append(d1 * d2)
        elif c == -4:
            if i + 2 >= len(codes):
                raise MXNetError('Reshape: -4 must be followed by two dims in shape %s' % (codes,))
            d0 = take(-4)
            d1, d2 = codes[i + 1], codes[i + 2]
            if d1 == -1 and d2 == -1:
                raise MXNetError('Reshape: -4 split dims cannot both be -1 in %s' % (codes,))
            if d1 == -1:
                d1 = d0 // d2
            if d2 == -1:
                d2 = d0 // d1
            if d1 * d2 != d0:
                raise MXNetError('Reshape: cannot split dim %d into %d x %d' % (d0, d1, d2))
            out.extend([d1, d2])
            i += 2
        elif c > 0:
            out.append(c)
            if cur < len(src):
                cur += 1
        else:
            raise MXNetError('Reshape: invalid code %d in shape %s' % (c, codes))
        i += 1
    total = prod(src)
    if infer_at >= 0:
        rest = prod(out)
        if rest == 0 or total % rest:
            raise MXNetError('Reshape: cannot infer -1 in shape %s for input %s' % (codes, src))
        out[infer_at] = total // rest
    if prod(out) != total:
        raise MXNetError('Reshape: target shape %s (from %s) has size %d, the input %s has %d'
                         % (tuple(out[::-1] if reverse else out), codes, prod(out),
                            src[::-1] if reverse else src, total))
    return tuple(out[::-1]) if reverse else tuple(out)


def _legacy_target(p, src):
    """The deprecated target_shape / keep_highest form."""
    target = list(p.target_shape)
    if p.keep_highest:
        target = [src[0]] + target
    if target.count(0) > 1:
        raise MXNetError('Reshape: target_shape may hold at most one 0, got %s' % (p.target_shape,))
    if 0 in target:
        rest = prod(d for d in target if d)
        target[target.index(0)] = prod(src) // rest
    return tuple(target)


def _reshape_out(p, src):
    if not p.shape and p.target_shape:
        return _legacy_target(p, src)
    return _cached_target(tuple(src), tuple(p.shape), bool(p.reverse))


@functools.lru_cache(maxsize=4096)
def _cached_target(src, codes, reverse):
    """reshape_target, remembered: a bound graph reshapes the same shapes on every call."""
    return reshape_target(src, codes, reverse)


def _reshape(p, data):
    """Reshape with MXNet's special codes (a view when the memory allows)."""
    return data.reshape(_reshape_out(p, data.shape))


def _reshape_shape(p, ins, outs):
    data, out = ins[0], outs[0]
    if data is not None and not known(data) and known(out) and list(data).count(0) == 1:
        rest = prod(d for d in data if d)      # one unknown input dim: the output's size fixes it
        if rest and prod(out) % rest == 0:
            data = tuple(d if d else prod(out) // rest for d in data)
    if not known(data):
        return ins, outs
    return [data], [merge(out, _reshape_out(p, data))]


register(OpDef('Reshape', _reshape,
               params={'shape': Shape(()), 'reverse': Bool(False), 'target_shape': Shape(()),
                       'keep_highest': Bool(False)},
               infer_shape=_reshape_shape, aliases=('reshape',)))


def _flatten(p, data):
    """(N, d1, d2, ...) -> (N, d1*d2*...)."""
    return data.reshape(data.shape[0], -1) if data.dim() != 2 else data.reshape(data.shape)


def _flatten_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return ins, outs
    out = (s[0], prod(s[1:]) if all(s[1:]) else 0)
    return ins, [merge(outs[0], out)]


register(OpDef('Flatten', _flatten, infer_shape=_flatten_shape, aliases=('flatten',)))


# ---------------------------------------------------------------------------------------------
# Cast
# ---------------------------------------------------------------------------------------------
def _cast(p, data):
    """Convert to dtype; float -> int truncates toward zero."""
    return data.to(torch_dtype(p.dtype))


register(OpDef('Cast', _cast, params={'dtype': DType()}, infer_shape=same_shape,
               infer_type=lambda p, ins, outs: (ins, [np_dtype(p.dtype)]),
               aliases=('cast',))).converts_dtype = True


# ---------------------------------------------------------------------------------------------
# Creation: no inputs. A 0 in `shape` is an unknown dim the graph infers from consumers.
# ---------------------------------------------------------------------------------------------
_ALL_DTYPES = ('bfloat16', 'bool', 'float16', 'float32', 'float64', 'int32', 'int64', 'int8',
               'uint8')


def _creation_shape(p, out_shape):
    shape = tuple(out_shape) if out_shape is not None else tuple(p.shape)
    if not known(shape) and shape != ():
        raise MXNetError('cannot create an array of unknown shape %s; give every dim' % (shape,))
    return shape


def _zeros(p, device, out_shape):
    """An array of zeros."""
    return torch.zeros(_creation_shape(p, out_shape), dtype=torch_dtype(p.dtype), device=device)


def _ones(p, device, out_shape):
    """An array of ones."""
    return torch.ones(_creation_shape(p, out_shape), dtype=torch_dtype(p.dtype), device=device)


def _full(p, device, out_shape):
    """An array filled with `value`."""
    return torch.full(_creation_shape(p, out_shape), p.value, dtype=torch_dtype(p.dtype),
                      device=device)


def _shape_param_rule(p, ins, outs):
    """The `shape` parameter; a 0 or -1 dim is unknown, filled from the consumers."""
    return ins, [merge(outs[0], tuple(max(d, 0) for d in p.shape))]


def _dtype_param_rule(p, ins, outs):
    return ins, [np_dtype(p.dtype)]


for _name, _fn, _extra in (('_zeros', _zeros, {}), ('_ones', _ones, {}),
                           ('_full', _full, {'value': Float()})):
    register(OpDef(_name, _fn, inputs=(), creation=True,
                   params=dict({'shape': Shape(()), 'ctx': Str(''),
                                'dtype': DType('float32', choices=_ALL_DTYPES)}, **_extra),
                   infer_shape=_shape_param_rule, infer_type=_dtype_param_rule))


def arange_values(start, stop, step, repeat, dtype):
    """arange's values (NumPy, before the cast to dtype): as many as [start, stop) holds in
    steps of `step`; an integer dtype counts from int(start) in steps of int(step), as MXNet."""
    start, stop = (0.0, start) if stop is None else (start, stop)
    values = np.arange(start, stop, step, dtype=np.float64)
    if np.dtype(dtype).kind in 'iu':
        values = int(start) + np.arange(len(values), dtype=np.int64) * int(step)
    if repeat != 1:
        values = np.repeat(values, int(repeat))
    return values


def _arange_values(p):
    return arange_values(p.start, p.stop, p.step, p.repeat, p.dtype)


def _arange(p, device, out_shape):
    """Evenly spaced values in [start, stop), each repeated `repeat` times."""
    return torch.as_tensor(_arange_values(p), dtype=torch_dtype(p.dtype), device=device)


register(OpDef('_arange', _arange, inputs=(), creation=True,
               params={'start': Float(), 'stop': Float(None), 'step': Float(1.0),
                       'repeat': Int(1), 'infer_range': Bool(False), 'ctx': Str(''),
                       'dtype': DType('float32', choices=_ALL_DTYPES)},
               infer_shape=lambda p, ins, outs: (ins, [(len(_arange_values(p)),)]),
               infer_type=_dtype_param_rule))


def _eye(p, device, out_shape):
    """An N x M matrix (M = N when 0) with ones on diagonal k."""
    m = p.M if p.M > 0 else p.N
    out = torch.zeros(p.N, m, dtype=torch_dtype(p.dtype), device=device)
    rows = torch.arange(p.N, device=device)
    cols = rows + p.k
    keep = (cols >= 0) & (cols < m)
    out[rows[keep], cols[keep]] = 1
    return out


register(OpDef('_eye', _eye, inputs=(), creation=True,
               params={'N': Int(), 'M': Int(0), 'k': Int(0), 'ctx': Str(''),
                       'dtype': DType('float32', choices=_ALL_DTYPES)},
               infer_shape=lambda p, ins, outs: (ins, [(p.N, p.M if p.M > 0 else p.N)]),
               infer_type=_dtype_param_rule))


def _linspace_values(p):
    if p.num < 0:
        raise MXNetError('_linspace: num must be >= 0, got num=%d' % p.num)
    if p.num == 1:
        return np.array([p.start], dtype=np.float64)
    step = (p.stop - p.start) / ((p.num - 1) if p.endpoint else p.num)
    return p.start + step * np.arange(p.num, dtype=np.float64)


def _linspace(p, device, out_shape):
    """`num` evenly spaced values from start to stop (stop included when endpoint), computed in
    double precision and then cast to dtype (integers truncate)."""
    return torch.as_tensor(_linspace_values(p), device=device).to(torch_dtype(p.dtype))


register(OpDef('_linspace', _linspace, inputs=(), creation=True,
               params={'start': Float(), 'stop': Float(), 'num': Int(),
                       'endpoint': Bool(True), 'ctx': Str(''),
                       'dtype': DType('float32', choices=_ALL_DTYPES)},
               infer_shape=lambda p, ins, outs: (ins, [(len(_linspace_values(p)),)]),
               infer_type=_dtype_param_rule))
