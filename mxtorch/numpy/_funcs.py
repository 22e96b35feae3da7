"""mx.np's functions: NumPy's names over torch, with MXNet's NumPy dtype rules.

Element-wise functions come from tables (name -> torch function); reductions, shape
manipulation and the rest are written out below. Each runs torch on the tensors behind the
arrays (recorded by mx.autograd while recording) and returns mx.np.ndarrays.

Dtype rules (MXNet 1.9.1's): two arrays promote as NumPy does; a Python scalar is cast to the
array's dtype first (int32 * 0.5 -> zeros; a bool array takes int64); true division of integers
gives float32; float-valued functions of integer arrays are cast back to the integer dtype
(sqrt([4, 9]) -> [2, 3]), of bool arrays give float32; comparisons and logical functions give
bool.
"""
import builtins
import math

import numpy as _onp
import torch

from ..base import MXNetError, torch_dtype, integer_types, numeric_types
from ..context import current_context
from ..ndarray.ndarray import NDArray
from .multiarray import ndarray, wrap, tensor_of, _grad_scope, array

_SCALARS = numeric_types + (bool, _onp.generic)


# ---- helpers -----------------------------------------------------------------------------------
def _ctx(*xs):
    for x in xs:
        if isinstance(x, NDArray):
            return x.context
    return current_context()


def _as_tensor(x, ctx=None):
    """The tensor of an array; a NumPy array or list becomes a tensor (keeping NumPy's dtype for
    NumPy arrays, float32 for lists)."""
    if isinstance(x, NDArray):
        return x._tensor
    if isinstance(x, (list, tuple)):
        return tensor_of(x, ctx)
    return tensor_of(x, ctx)


def _finish(result, ctx, out=None):
    if out is not None:
        from .. import autograd
        with torch.set_grad_enabled(autograd._prepare_write(out._tensor, result)):
            out._tensor.copy_(result.to(out._tensor.dtype).expand_as(out._tensor))
        return out
    return wrap(result, ctx)


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, integer_types) else tuple(axis)
    for a in axes:
        if not -ndim <= a < builtins.max(ndim, 1):
            raise ValueError('axis %d is out of bounds for array of dimension %d' % (a, ndim))
    return tuple(a % builtins.max(ndim, 1) for a in axes)


def _is_float(t):
    return t.is_floating_point() or t.is_complex()


# ---- element-wise: one input ---------------------------------------------------------------------
_UNARY_FLOAT = {       # float-valued: integer inputs computed in float64, cast back
    'exp': torch.exp, 'expm1': torch.expm1, 'exp2': torch.exp2, 'log': torch.log,
    'log2': torch.log2, 'log10': torch.log10, 'log1p': torch.log1p, 'sqrt': torch.sqrt,
    'cbrt': lambda t: torch.sign(t) * torch.abs(t).pow(1.0 / 3), 'sin': torch.sin,
    'cos': torch.cos, 'tan': torch.tan, 'arcsin': torch.asin, 'arccos': torch.acos,
    'arctan': torch.atan, 'sinh': torch.sinh, 'cosh': torch.cosh, 'tanh': torch.tanh,
    'arcsinh': torch.asinh, 'arccosh': torch.acosh, 'arctanh': torch.atanh,
    'degrees': torch.rad2deg, 'radians': torch.deg2rad, 'rad2deg': torch.rad2deg,
    'deg2rad': torch.deg2rad, 'reciprocal': torch.reciprocal, 'rsqrt': torch.rsqrt,
    'sigmoid': torch.sigmoid, 'erf': torch.erf, 'erfinv': torch.erfinv, 'gammaln': torch.lgamma,
    'gamma': lambda t: torch.exp(torch.lgamma(t)) * torch.where(
        (t < 0) & (torch.floor(t / 2) * 2 != torch.floor(t)), -1.0, 1.0),
}
_UNARY_SAME = {        # dtype-preserving
    'negative': torch.neg, 'absolute': torch.abs, 'abs': torch.abs, 'fabs': torch.abs,
    'sign': torch.sign, 'square': torch.square, 'floor': torch.floor, 'ceil': torch.ceil,
    'trunc': torch.trunc, 'fix': torch.trunc, 'rint': torch.round, 'positive': lambda t: t + 0,
    'relu': torch.relu,
}
_UNARY_BOOL = {
    'isnan': torch.isnan, 'isinf': torch.isinf, 'isfinite': torch.isfinite,
    'isposinf': torch.isposinf, 'isneginf': torch.isneginf, 'signbit': torch.signbit,
    'logical_not': torch.logical_not,
}


def _unary(name, fn, kind):
    def func(x, out=None, **kwargs):
        if isinstance(x, _SCALARS) and not isinstance(x, NDArray):
            x = array(x)
        t, ctx = _as_tensor(x), _ctx(x)
        with _grad_scope():
            if kind == 'bool':
                result = fn(t)
            elif kind == 'same' or _is_float(t):
                if t.dtype == torch.bool and name in ('negative', 'square', 'sign'):
                    raise TypeError('%s is not supported for boolean arrays' % name)
                result = fn(t)
            elif t.dtype == torch.bool:
                result = fn(t.to(torch.float32))
            else:
                result = fn(t.to(torch.float64)).to(t.dtype)
        return _finish(result, ctx, out)
    func.__name__ = func.__qualname__ = name
    func.__doc__ = 'Element-wise %s of an array (mx.np, NumPy semantics).' % name
    return func


def _invert(x, out=None):
    t = _as_tensor(x)
    return _finish(torch.logical_not(t) if t.dtype == torch.bool else torch.bitwise_not(t),
                   _ctx(x), out)


# ---- element-wise: two inputs -------------------------------------------------------------------
def _scalar_dtype(t):
    return torch.int64 if t.dtype == torch.bool else t.dtype


def _operands(x1, x2):
    """(t1, t2, result dtype, ctx): a scalar is cast to the other operand's dtype."""
    ctx = _ctx(x1, x2)
    s1 = isinstance(x1, _SCALARS) and not isinstance(x1, NDArray)
    s2 = isinstance(x2, _SCALARS) and not isinstance(x2, NDArray)
    if s1 and s2:
        x1 = array(x1, ctx=ctx)
        s1 = False
    if s1 or s2:
        t = _as_tensor(x2 if s1 else x1, ctx)
        scalar = x1 if s1 else x2
        dt = t.dtype if isinstance(scalar, (bool, _onp.bool_)) and t.dtype == torch.bool \
            else _scalar_dtype(t)
        st = torch.tensor(scalar, device=t.device).to(dt)
        t = t.to(dt)
        return (st, t, dt, ctx) if s1 else (t, st, dt, ctx)
    t1, t2 = _as_tensor(x1, ctx), _as_tensor(x2, ctx)
    if t1.device != t2.device:
        raise MXNetError('operands live on different devices: %s and %s'
                         % (t1.device, t2.device))
    return t1, t2, torch.promote_types(t1.dtype, t2.dtype), ctx


_BINARY = {            # name -> (torch function, kind); kind: same, float, bool, logical, int
    'add': (torch.add, 'same'), 'subtract': (torch.sub, 'same'),
    'multiply': (torch.mul, 'same'), 'true_divide': (torch.true_divide, 'float'),
    'divide': (torch.true_divide, 'float'), 'floor_divide': (torch.floor_divide, 'same'),
    'mod': (torch.remainder, 'same'), 'remainder': (torch.remainder, 'same'),
    'fmod': (torch.fmod, 'same'), 'power': (torch.pow, 'same'),
    'maximum': (torch.maximum, 'same'), 'minimum': (torch.minimum, 'same'),
    'fmax': (torch.fmax, 'same'), 'fmin': (torch.fmin, 'same'),
    'hypot': (torch.hypot, 'float'), 'arctan2': (torch.atan2, 'float'),
    'copysign': (torch.copysign, 'float'), 'ldexp': (lambda a, b: a * torch.pow(2.0, b), 'float'),
    'equal': (torch.eq, 'bool'), 'not_equal': (torch.ne, 'bool'),
    'greater': (torch.gt, 'bool'), 'greater_equal': (torch.ge, 'bool'),
    'less': (torch.lt, 'bool'), 'less_equal': (torch.le, 'bool'),
    'logical_and': (torch.logical_and, 'bool'), 'logical_or': (torch.logical_or, 'bool'),
    'logical_xor': (torch.logical_xor, 'bool'),
    'bitwise_and': (torch.bitwise_and, 'int'), 'bitwise_or': (torch.bitwise_or, 'int'),
    'bitwise_xor': (torch.bitwise_xor, 'int'), 'left_shift': (torch.bitwise_left_shift, 'int'),
    'right_shift': (torch.bitwise_right_shift, 'int'), 'gcd': (torch.gcd, 'int'),
    'lcm': (torch.lcm, 'int'),
}


def _binary(name, fn, kind):
    def func(x1, x2, out=None, **kwargs):
        if not isinstance(x1, (NDArray,) + _SCALARS + (_onp.ndarray, list, tuple)) or \
                not isinstance(x2, (NDArray,) + _SCALARS + (_onp.ndarray, list, tuple)):
            raise TypeError('%s: type %s and %s are not supported'
                            % (name, type(x1).__name__, type(x2).__name__))
        t1, t2, dt, ctx = _operands(x1, x2)
        with _grad_scope():
            if kind == 'bool':
                result = fn(t1, t2)
            elif kind == 'int':
                result = fn(t1.to(dt), t2.to(dt))
            else:
                calc = dt
                if kind == 'float' and not (dt.is_floating_point or dt.is_complex):
                    calc = torch.float32
                elif dt == torch.bool and name not in ('maximum', 'minimum', 'multiply'):
                    calc = torch.int64 if name != 'add' else torch.bool
                if name == 'add' and calc == torch.bool:
                    result = torch.logical_or(t1, t2)
                else:
                    result = fn(t1.to(calc), t2.to(calc))
        return _finish(result, ctx, out)
    func.__name__ = func.__qualname__ = name
    func.__doc__ = 'Element-wise %s of two arrays or an array and a scalar (broadcasting).' % name
    return func


# ---- reductions ---------------------------------------------------------------------------------
def _sum_dtype(t, dtype):
    if dtype is not None:
        return torch_dtype(dtype)
    return torch.int64 if t.dtype == torch.bool else t.dtype


def _reduce(name, fn, dtype_rule):
    def func(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
        t = _as_tensor(a)
        axes = _axes(axis, t.dim())
        with _grad_scope():
            if dtype_rule == 'sum':
                dt = _sum_dtype(t, dtype)
                result = fn(t.to(dt) if dt.is_floating_point else t, axes, keepdims).to(dt)
            elif dtype_rule == 'mean':
                dt = torch_dtype(dtype) if dtype is not None else (
                    t.dtype if _is_float(t) else torch.float32)
                result = fn(t.to(dt if dt.is_floating_point else torch.float64), axes,
                            keepdims, **kwargs).to(dt)
            else:
                if t.numel() == 0 and dtype_rule == 'same':
                    raise ValueError('zero-size array to reduction operation %s which has no '
                                     'identity' % name)
                result = fn(t, axes, keepdims)
        return _finish(result, _ctx(a), out)
    func.__name__ = func.__qualname__ = name
    func.__doc__ = '%s of the array elements over the given axis (mx.np).' % name
    return func


def _amax(t, axes, keepdims):
    return torch.amax(t, dim=axes, keepdim=keepdims) if t.dim() else t.clone()


def _amin(t, axes, keepdims):
    return torch.amin(t, dim=axes, keepdim=keepdims) if t.dim() else t.clone()


def _sum(t, axes, keepdims):
    return torch.sum(t, dim=axes, keepdim=keepdims) if t.dim() else t.clone()


def _prod(t, axes, keepdims):
    result = t
    for a in sorted(axes, reverse=True):
        result = torch.prod(result, dim=a, keepdim=keepdims)
    return result


def _mean(t, axes, keepdims):
    return torch.mean(t, dim=axes, keepdim=keepdims) if t.dim() else t.clone()


def _var(t, axes, keepdims, ddof=0):
    if not t.dim():
        return torch.zeros_like(t)
    return torch.var(t, dim=axes, correction=ddof, keepdim=keepdims)


def _std(t, axes, keepdims, ddof=0):
    return torch.sqrt(_var(t, axes, keepdims, ddof))


def _all(t, axes, keepdims):
    return torch.all(t.bool(), dim=axes, keepdim=keepdims) if t.dim() else t.bool()


def _any(t, axes, keepdims):
    return torch.any(t.bool(), dim=axes, keepdim=keepdims) if t.dim() else t.bool()


def _arg(fn):
    def func(a, axis=None, out=None, keepdims=False):
        t = _as_tensor(a)
        if axis is None:
            result = fn(t.reshape(-1), dim=0)
            if keepdims:
                result = result.reshape((1,) * t.dim())
        else:
            result = fn(t, dim=_axes(axis, t.dim())[0], keepdim=keepdims)
        return _finish(result.to(torch.int64), _ctx(a), out)
    return func


argmax = _arg(torch.argmax)
argmin = _arg(torch.argmin)


def cumsum(a, axis=None, dtype=None, out=None):
    t = _as_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    with _grad_scope():
        result = torch.cumsum(t, dim=axis).to(_sum_dtype(t, dtype))
    return _finish(result, _ctx(a), out)


def cumprod(a, axis=None, dtype=None, out=None):
    t = _as_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    with _grad_scope():
        result = torch.cumprod(t, dim=axis).to(_sum_dtype(t, dtype))
    return _finish(result, _ctx(a), out)


def average(a, axis=None, weights=None, returned=False, out=None):
    if weights is None:
        avg = mean(a, axis=axis)
        count = _as_tensor(a).numel() / builtins.max(avg.size, 1)
        return (avg, full_scalar(avg, count)) if returned else avg
    w = _as_tensor(weights)
    t = _as_tensor(a)
    if w.shape != t.shape:
        shape = [1] * t.dim()
        shape[_axes(axis, t.dim())[0]] = w.numel()
        w = w.reshape(shape)
    with _grad_scope():
        total = torch.sum(w.expand_as(t).to(t.dtype), dim=_axes(axis, t.dim()))
        avg = torch.sum(t * w, dim=_axes(axis, t.dim())) / total
    result = _finish(avg, _ctx(a), out)
    return (result, wrap(total, _ctx(a))) if returned else result


def full_scalar(like, value):
    return wrap(torch.full(like.shape, value, dtype=like._tensor.dtype,
                           device=like._tensor.device), like.context)


# ---- shapes ----------------------------------------------------------------------------------
def reshape(a, newshape, order='C'):
    t = _as_tensor(a)
    shape = (int(newshape),) if isinstance(newshape, integer_types) else \
        tuple(int(s) for s in newshape)
    if builtins.sum(1 for s in shape if s == -1) > 1:
        raise MXNetError('reshape: can only specify one unknown dimension (-1), got %s'
                         % (shape,))
    if builtins.any(s < -1 for s in shape):
        raise MXNetError('reshape: invalid dimension in %s (mx.np.reshape takes -1 at most '
                         'once; see npx.reshape for MXNet\'s special codes)' % (shape,))
    known = int(_onp.prod([s for s in shape if s != -1])) if shape else 1
    if (-1 not in shape and known != t.numel()) or (
            -1 in shape and (known == 0 or t.numel() % known)):
        raise MXNetError('Cannot reshape array of size %d into shape %s' % (t.numel(), shape))
    with _grad_scope():
        return wrap(t.reshape(shape), _ctx(a))


def ravel(x, order='C'):
    return reshape(x, -1)


def flatten(a, order='C'):
    return wrap(_as_tensor(a).reshape(-1).clone(), _ctx(a))


def transpose(a, axes=None, *more):
    t = _as_tensor(a)
    if more:
        axes = (axes,) + more
    if axes is None or axes == ():
        axes = tuple(reversed(range(t.dim())))
    elif isinstance(axes, integer_types) and t.dim() == 1:
        axes = (axes,)
    with _grad_scope():
        return wrap(t.permute(*_axes(axes, t.dim())), _ctx(a))


def swapaxes(a, axis1, axis2):
    with _grad_scope():
        return wrap(_as_tensor(a).transpose(axis1, axis2), _ctx(a))


def moveaxis(a, source, destination):
    with _grad_scope():
        return wrap(torch.movedim(_as_tensor(a), source, destination), _ctx(a))


def rollaxis(a, axis, start=0):
    n = _as_tensor(a).dim()
    axis, start = axis % n, start % (n + 1)
    if axis < start:
        start -= 1
    return moveaxis(a, axis, start)


def expand_dims(a, axis):
    t = _as_tensor(a)
    axes = sorted(_axes(axis, t.dim() + len((axis,) if isinstance(axis, int) else axis)))
    with _grad_scope():
        for ax in axes:
            t = t.unsqueeze(ax)
        return wrap(t, _ctx(a))


def squeeze(a, axis=None):
    t = _as_tensor(a)
    if axis is None:
        shape = [d for d in t.shape if d != 1]
    else:
        axes = _axes(axis, t.dim())
        for ax in axes:
            if t.shape[ax] != 1:
                raise MXNetError('cannot select an axis to squeeze out which has size not '
                                 'equal to one (axis %d has size %d)' % (ax, t.shape[ax]))
        shape = [d for i, d in enumerate(t.shape) if i not in axes]
    with _grad_scope():
        return wrap(t.reshape(shape), _ctx(a))


def broadcast_to(array_, shape):
    t = _as_tensor(array_)
    shape = (shape,) if isinstance(shape, integer_types) else tuple(shape)
    try:
        with _grad_scope():
            return wrap(t.expand(shape).clone(), _ctx(array_))
    except RuntimeError as err:
        raise MXNetError('broadcast_to: cannot broadcast an array of shape %s to %s: %s'
                         % (tuple(t.shape), shape, err)) from None


def broadcast_arrays(*args):
    shape = torch.broadcast_shapes(*[tuple(_as_tensor(a).shape) for a in args])
    return [broadcast_to(a, shape) for a in args]


def _seq(arrays, ctx=None):
    return [_as_tensor(a, ctx) for a in arrays]


def concatenate(seq, axis=0, out=None):
    ts = _seq(seq)
    with _grad_scope():
        if axis is None:
            result = torch.cat([t.reshape(-1) for t in ts])
        else:
            result = torch.cat(ts, dim=axis)
    return _finish(result, _ctx(*seq), out)


concat = concatenate


def append(arr, values, axis=None):
    if axis is None:
        return concatenate([ravel(array_like(arr)), ravel(array_like(values, arr))])
    return concatenate([arr, values], axis=axis)


def array_like(x, like=None):
    return x if isinstance(x, NDArray) else wrap(_as_tensor(x), _ctx(like))


def stack(arrays, axis=0, out=None):
    with _grad_scope():
        return _finish(torch.stack(_seq(arrays), dim=axis), _ctx(*arrays), out)


def vstack(arrays, out=None):
    with _grad_scope():
        return _finish(torch.vstack(_seq(arrays)), _ctx(*arrays), out)


row_stack = vstack


def hstack(arrays):
    with _grad_scope():
        return wrap(torch.hstack(_seq(arrays)), _ctx(*arrays))


def dstack(arrays):
    with _grad_scope():
        return wrap(torch.dstack(_seq(arrays)), _ctx(*arrays))


def column_stack(tup):
    with _grad_scope():
        return wrap(torch.column_stack(_seq(tup)), _ctx(*tup))


def _split(a, indices_or_sections, axis, even):
    t = _as_tensor(a)
    n = t.shape[axis]
    if isinstance(indices_or_sections, integer_types):
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError('number sections must be larger than 0.')
        if even and n % sections:
            raise ValueError('array split does not result in an equal division')
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        points = list(_onp.cumsum(sizes)[:-1])
    else:
        points = [builtins.min(builtins.max(int(p), 0), n) for p in indices_or_sections]
    bounds = [0] + points + [n]
    with _grad_scope():
        return [wrap(t.narrow(axis, lo, builtins.max(hi - lo, 0)), _ctx(a))
                for lo, hi in zip(bounds[:-1], bounds[1:])]


def split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, True)


def array_split(ary, indices_or_sections, axis=0):
    return _split(ary, indices_or_sections, axis, False)


def hsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=1 if ary.ndim > 1 else 0)


def vsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=0)


def dsplit(ary, indices_or_sections):
    return split(ary, indices_or_sections, axis=2)


def tile(A, reps):  # pylint: disable=invalid-name
    reps = (reps,) if isinstance(reps, integer_types) else tuple(reps)
    with _grad_scope():
        return wrap(_as_tensor(A).tile(reps), _ctx(A))


def repeat(a, repeats, axis=None):
    t = _as_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    with _grad_scope():
        return wrap(torch.repeat_interleave(t, repeats if isinstance(repeats, int) else
                                            _as_tensor(repeats).long(), dim=axis), _ctx(a))


def flip(m, axis=None, out=None):
    t = _as_tensor(m)
    with _grad_scope():
        return _finish(torch.flip(t, _axes(axis, t.dim())), _ctx(m), out)


def fliplr(m):
    return flip(m, 1)


def flipud(m):
    return flip(m, 0)


def roll(a, shift, axis=None):
    t = _as_tensor(a)
    with _grad_scope():
        if axis is None:
            return wrap(torch.roll(t.reshape(-1), shift).reshape(t.shape), _ctx(a))
        return wrap(torch.roll(t, shift, axis), _ctx(a))


def rot90(m, k=1, axes=(0, 1)):
    with _grad_scope():
        return wrap(torch.rot90(_as_tensor(m), k, list(axes)), _ctx(m))


def atleast_1d(*arys):
    res = [a if a.ndim >= 1 else reshape(a, (1,)) for a in arys]
    return res[0] if len(res) == 1 else res


def atleast_2d(*arys):
    res = [wrap(torch.atleast_2d(_as_tensor(a)), _ctx(a)) for a in arys]
    return res[0] if len(res) == 1 else res


def atleast_3d(*arys):
    res = [wrap(torch.atleast_3d(_as_tensor(a)), _ctx(a)) for a in arys]
    return res[0] if len(res) == 1 else res


# ---- selection and sorting ---------------------------------------------------------------------
def where(condition, x=None, y=None):
    if x is None and y is None:
        return nonzero(condition)
    c = _as_tensor(condition).bool()
    t1, t2, dt, ctx = _operands(x, y)
    with _grad_scope():
        return wrap(torch.where(c.to(t1.device), t1.to(dt), t2.to(dt)), _ctx(condition, x, y))


def nonzero(a):
    return tuple(wrap(i, _ctx(a)) for i in torch.nonzero(_as_tensor(a), as_tuple=True))


def argwhere(a):
    return wrap(torch.argwhere(_as_tensor(a)), _ctx(a))


def flatnonzero(a):
    return wrap(torch.nonzero(_as_tensor(a).reshape(-1)).reshape(-1), _ctx(a))


def clip(a, a_min=None, a_max=None, out=None):
    if a_min is None and a_max is None:
        raise ValueError('array_clip: must set either max or min')
    t = _as_tensor(a)
    lo = a_min if a_min is None or isinstance(a_min, _SCALARS) else _as_tensor(a_min)
    hi = a_max if a_max is None or isinstance(a_max, _SCALARS) else _as_tensor(a_max)
    with _grad_scope():
        return _finish(torch.clamp(t, lo, hi).to(t.dtype), _ctx(a), out)


def take(a, indices, axis=None, mode='raise', out=None):
    t = _as_tensor(a)
    idx = _as_tensor(indices).long() if not isinstance(indices, integer_types) else \
        torch.tensor(indices)
    if axis is None:
        t, axis = t.reshape(-1), 0
    n = t.shape[axis]
    if mode == 'wrap':
        idx = idx % n
    elif mode == 'clip':
        idx = idx.clamp(0, n - 1)
    elif ((idx >= n) | (idx < -n)).any():
        raise IndexError('take: index out of bounds for axis %d with size %d' % (axis, n))
    with _grad_scope():
        result = torch.index_select(t, axis, (idx % n).reshape(-1).to(t.device))
        shape = t.shape[:axis] + idx.shape + t.shape[axis + 1:]
        return _finish(result.reshape(shape), _ctx(a), out)


def sort(a, axis=-1, kind=None, order=None):
    t = _as_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    with _grad_scope():
        return wrap(torch.sort(t, dim=axis, stable=True)[0], _ctx(a))


def argsort(a, axis=-1, kind=None, order=None):
    t = _as_tensor(a)
    if axis is None:
        t, axis = t.reshape(-1), 0
    return wrap(torch.sort(t, dim=axis, stable=True)[1], _ctx(a))


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None):
    results = _onp.unique(ar.asnumpy(), return_index, return_inverse, return_counts, axis)
    if not isinstance(results, tuple):
        return array(results, dtype=results.dtype, ctx=_ctx(ar))
    return tuple(array(r, dtype=r.dtype, ctx=_ctx(ar)) for r in results)


def diag(v, k=0):
    with _grad_scope():
        return wrap(torch.diag(_as_tensor(v), k), _ctx(v))


def diagonal(a, offset=0, axis1=0, axis2=1):
    with _grad_scope():
        return wrap(torch.diagonal(_as_tensor(a), offset, axis1, axis2), _ctx(a))


def diagflat(v, k=0):
    with _grad_scope():
        return wrap(torch.diagflat(_as_tensor(v), k), _ctx(v))


def tril(m, k=0):
    with _grad_scope():
        return wrap(torch.tril(_as_tensor(m), k), _ctx(m))


def triu(m, k=0):
    with _grad_scope():
        return wrap(torch.triu(_as_tensor(m), k), _ctx(m))


def trace(a, offset=0, axis1=0, axis2=1, out=None):
    with _grad_scope():
        return _finish(torch.diagonal(_as_tensor(a), offset, axis1, axis2).sum(-1), _ctx(a), out)


def pad(x, pad_width, mode='constant', **kwargs):
    t = _as_tensor(x)
    width = _onp.broadcast_to(_onp.asarray(pad_width, dtype=_onp.int64), (t.dim(), 2))
    torch_pad = [int(v) for pair in reversed(width.tolist()) for v in pair]
    tmode = mode
    if tmode != 'constant':
        res = _onp.pad(x.asnumpy(), width, mode=mode)
        return array(res, dtype=res.dtype, ctx=_ctx(x))
    with _grad_scope():
        result = torch.nn.functional.pad(t, torch_pad, value=kwargs.get('constant_values', 0))
    return wrap(result, _ctx(x))


def meshgrid(*xi, **kwargs):
    indexing = kwargs.get('indexing', 'xy')
    grids = torch.meshgrid(*_seq(xi), indexing=indexing)
    return [wrap(g.clone(), _ctx(*xi)) for g in grids]


def diff(a, n=1, axis=-1, prepend=None, append=None):  # pylint: disable=redefined-outer-name
    with _grad_scope():
        return wrap(torch.diff(_as_tensor(a), n, axis), _ctx(a))


def ediff1d(ary, to_end=None, to_begin=None):
    return diff(ravel(ary))


def around(x, decimals=0, out=None):
    t = _as_tensor(x)
    with _grad_scope():
        result = torch.round(t, decimals=decimals) if _is_float(t) else t.clone()
    return _finish(result, _ctx(x), out)


round_ = around


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    t = _as_tensor(x)
    result = torch.nan_to_num(t, nan, posinf, neginf)
    if not copy:
        x._tensor.copy_(result)
        return x
    return wrap(result, _ctx(x))


def count_nonzero(a, axis=None):
    return wrap(torch.count_nonzero(_as_tensor(a), dim=axis), _ctx(a))


def percentile(a, q, axis=None, out=None, overwrite_input=None, interpolation='linear',
               keepdims=False):
    return quantile(a, true_divide(q, 100) if isinstance(q, NDArray) else
                    _onp.asarray(q) / 100.0, axis, out, interpolation=interpolation,
                    keepdims=keepdims)


def quantile(a, q, axis=None, out=None, overwrite_input=None, interpolation='linear',
             keepdims=False):
    t = _as_tensor(a)
    qt = torch.as_tensor(q.asnumpy() if isinstance(q, NDArray) else _onp.asarray(q),
                         dtype=t.dtype, device=t.device)
    result = torch.quantile(t, qt, dim=axis, keepdim=keepdims, interpolation=interpolation)
    return _finish(result, _ctx(a), out)


def median(a, axis=None, out=None, overwrite_input=None, keepdims=False):
    return quantile(a, 0.5, axis, out, keepdims=keepdims)


def interp(x, xp, fp, left=None, right=None, period=None):
    res = _onp.interp(x.asnumpy() if isinstance(x, NDArray) else x, xp.asnumpy(), fp.asnumpy(),
                      left, right, period)
    return array(res, dtype=fp.dtype, ctx=_ctx(xp))


def copy(a):
    return a.copy()


def shape(a):
    return tuple(_as_tensor(a).shape)


def size(a, axis=None):
    t = _as_tensor(a)
    return t.numel() if axis is None else t.shape[axis]


def ndim(a):
    return _as_tensor(a).dim()


def may_share_memory(a, b, max_work=None):
    return a._tensor.untyped_storage().data_ptr() == b._tensor.untyped_storage().data_ptr()


def array_equal(a1, a2, equal_nan=False):
    t1, t2 = _as_tensor(a1), _as_tensor(a2)
    return t1.shape == t2.shape and bool(torch.equal(t1.to(t2.dtype), t2))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    return bool(isclose(a, b, rtol, atol, equal_nan).all())


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    t1, t2, dt, ctx = _operands(a, b)
    calc = dt if dt.is_floating_point else torch.float64
    return wrap(torch.isclose(t1.to(calc), t2.to(calc), rtol, atol, equal_nan), ctx)


def bincount(x, weights=None, minlength=0):
    w = None if weights is None else _as_tensor(weights)
    return wrap(torch.bincount(_as_tensor(x).long(), w, minlength), _ctx(x))


def histogram(a, bins=10, range=None,  # pylint: disable=redefined-builtin
              normed=None, weights=None, density=None):
    hist, edges = _onp.histogram(a.asnumpy(), bins if isinstance(bins, int) else bins.asnumpy(),
                                 range, weights=weights, density=density)
    return array(hist, dtype=hist.dtype), array(edges, dtype=a.dtype)


def insert(arr, obj, values, axis=None):
    res = _onp.insert(arr.asnumpy(), obj.asnumpy() if isinstance(obj, NDArray) else obj,
                      values.asnumpy() if isinstance(values, NDArray) else values, axis)
    return array(res, dtype=res.dtype, ctx=_ctx(arr))


def delete(arr, obj, axis=None):
    res = _onp.delete(arr.asnumpy(), obj.asnumpy() if isinstance(obj, NDArray) else obj, axis)
    return array(res, dtype=res.dtype, ctx=_ctx(arr))


def resize(a, new_shape):
    res = _onp.resize(a.asnumpy(), new_shape)
    return array(res, dtype=res.dtype, ctx=_ctx(a))


def fill_diagonal(a, val, wrap_=False):
    with torch.no_grad():
        n = builtins.min(a.shape)
        idx = torch.arange(n, device=a._tensor.device)
        a._tensor[(idx,) * a.ndim] = torch.as_tensor(val, dtype=a._tensor.dtype)


def tril_indices(n, k=0, m=None):
    rows, cols = _onp.tril_indices(n, k, m)
    return array(rows, dtype=rows.dtype), array(cols, dtype=cols.dtype)


def triu_indices(n, k=0, m=None):
    rows, cols = _onp.triu_indices(n, k, m)
    return array(rows, dtype=rows.dtype), array(cols, dtype=cols.dtype)


def unravel_index(indices, shape, order='C'):
    res = _onp.unravel_index(indices.asnumpy() if isinstance(indices, NDArray) else indices,
                             shape, order)
    return tuple(array(r, dtype=_onp.int64) for r in res)


def ravel_multi_index(multi_index, dims, mode='raise', order='C'):
    res = _onp.ravel_multi_index(tuple(m.asnumpy() if isinstance(m, NDArray) else m
                                       for m in multi_index), dims, mode=mode, order=order)
    return array(res, dtype=_onp.int64)


# ---- products -----------------------------------------------------------------------------------
def _matmul_operands(a, b):
    t1, t2, dt, ctx = _operands(a, b)
    return t1.to(dt), t2.to(dt), ctx


def dot(a, b, out=None):
    t1, t2, ctx = _matmul_operands(a, b)
    with _grad_scope():
        if t1.dim() == 0 or t2.dim() == 0:
            result = t1 * t2
        elif t2.dim() == 1:
            result = torch.tensordot(t1, t2, dims=([t1.dim() - 1], [0]))
        else:
            result = torch.tensordot(t1, t2, dims=([t1.dim() - 1], [t2.dim() - 2]))
    return _finish(result, ctx, out)


def matmul(a, b, out=None, **kwargs):
    t1, t2, ctx = _matmul_operands(a, b)
    if t1.dim() == 0 or t2.dim() == 0:
        raise MXNetError('matmul: an input is a scalar (0-d array); use multiply')
    with _grad_scope():
        return _finish(torch.matmul(t1, t2), ctx, out)


def vdot(a, b):
    t1, t2, ctx = _matmul_operands(a, b)
    with _grad_scope():
        return wrap(torch.sum(t1.reshape(-1) * t2.reshape(-1)), ctx)


def inner(a, b):
    t1, t2, ctx = _matmul_operands(a, b)
    with _grad_scope():
        return wrap(torch.inner(t1, t2), ctx)


def outer(a, b):
    t1, t2, ctx = _matmul_operands(a, b)
    with _grad_scope():
        return wrap(torch.outer(t1.reshape(-1), t2.reshape(-1)), ctx)


def tensordot(a, b, axes=2):
    t1, t2, ctx = _matmul_operands(a, b)
    with _grad_scope():
        return wrap(torch.tensordot(t1, t2, dims=axes), ctx)


def kron(a, b):
    t1, t2, ctx = _matmul_operands(a, b)
    with _grad_scope():
        return wrap(torch.kron(t1, t2), ctx)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    t1, t2, ctx = _matmul_operands(a, b)
    with _grad_scope():
        return wrap(torch.linalg.cross(t1, t2, dim=-1 if axis is None else axis), ctx)


def einsum(*operands, **kwargs):
    subscripts, arrays = operands[0], operands[1:]
    out = kwargs.get('out')
    with _grad_scope():
        return _finish(torch.einsum(subscripts, *_seq(arrays)), _ctx(*arrays), out)


# ---- the tables, installed as functions ------------------------------------------------------
_g = globals()
for _name, _fn in _UNARY_FLOAT.items():
    _g[_name] = _unary(_name, _fn, 'float')
for _name, _fn in _UNARY_SAME.items():
    _g[_name] = _unary(_name, _fn, 'same')
for _name, _fn in _UNARY_BOOL.items():
    _g[_name] = _unary(_name, _fn, 'bool')
for _name, (_fn, _kind) in _BINARY.items():
    _g[_name] = _binary(_name, _fn, _kind)
invert = bitwise_not = _invert          # noqa: F821
_REDUCTIONS = {'sum': (_sum, 'sum'), 'prod': (_prod, 'sum'), 'mean': (_mean, 'mean'),
               'std': (_std, 'mean'), 'var': (_var, 'mean'), 'max': (_amax, 'same'),
               'min': (_amin, 'same'), 'amax': (_amax, 'same'), 'amin': (_amin, 'same'),
               'all': (_all, 'bool'), 'any': (_any, 'bool')}
for _name, (_fn, _rule) in _REDUCTIONS.items():
    _g[_name] = _reduce(_name, _fn, _rule)


def _std_var(name):
    base = _g[name]

    def func(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return base(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, ddof=ddof)
    func.__name__ = func.__qualname__ = name
    return func


std = _std_var('std')
var = _std_var('var')
alltrue, sometrue = _g['all'], _g['any']
nansum = _g['sum']
nanprod = _g['prod']
del _name, _fn, _kind, _rule

METHODS = (
    'sum', 'prod', 'mean', 'std', 'var', 'max', 'min', 'all', 'any', 'argmax', 'argmin',
    'cumsum', 'transpose', 'swapaxes', 'flatten', 'ravel', 'squeeze', 'repeat', 'tile',
    'clip', 'take', 'sort', 'argsort', 'round', 'dot', 'nonzero', 'diagonal', 'trace',
    'expand_dims', 'broadcast_to', 'split', 'flip', 'abs', 'sign', 'exp', 'log', 'sqrt',
    'square', 'sin', 'cos', 'tanh', 'sigmoid', 'relu', 'floor', 'ceil', 'trunc', 'rint',
    'reciprocal', 'zeros_like', 'ones_like', 'moveaxis', 'fix', 'degrees', 'radians',
)
round = around  # pylint: disable=redefined-builtin


def _zeros_like(a, dtype=None):
    from .multiarray import zeros_like as zl
    return zl(a, dtype)


def _ones_like(a, dtype=None):
    from .multiarray import ones_like as ol
    return ol(a, dtype)


zeros_like, ones_like = _zeros_like, _ones_like


def _install_methods():
    for name in METHODS:
        func = _g[name]

        def method(self, *args, _func=func, **kwargs):
            return _func(self, *args, **kwargs)
        method.__name__ = method.__qualname__ = name
        method.__doc__ = func.__doc__
        setattr(ndarray, name, method)


_install_methods()
pi, e, inf, nan, newaxis = math.pi, math.e, float('inf'), float('nan'), None
PZERO, NZERO, euler_gamma = 0.0, -0.0, 0.5772156649015329
