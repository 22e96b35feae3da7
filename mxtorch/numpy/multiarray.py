"""mx.np.ndarray: MXNet's NumPy-compatible array, an NDArray handle with NumPy semantics.

* zero-dim arrays exist (`a.sum()` and `a[0, 0]` have shape ());
* indexing follows NumPy: basic indexing gives a view that writes through, advanced indexing
  (integer arrays, lists, boolean masks) copies;
* arithmetic follows MXNet's NumPy promotion: two arrays promote as NumPy does; a Python scalar
  keeps the array's dtype (a bool array becomes int64); true division of integers gives float32;
  comparisons give bool arrays;
* lists and scalars become float32 unless a dtype is given; a NumPy array keeps its dtype.

Every function acts on the torch tensors behind the handles, so mx.autograd records through them.
"""
import numpy as _onp
import torch

from ..base import MXNetError, np_dtype, torch_dtype, integer_types, numeric_types
from ..context import Context, current_context, context_of
from ..ndarray.ndarray import NDArray


def _recording():
    from .. import autograd
    return autograd.is_recording()


def _grad_scope():
    return torch.set_grad_enabled(_recording())


def wrap(tensor, ctx=None):
    """An mx.np.ndarray over `tensor` (no copy)."""
    arr = ndarray.__new__(ndarray)
    arr._tensor = tensor
    arr._ctx = ctx if ctx is not None else context_of(tensor.device)
    arr.writable = True
    arr._grad = None
    return arr


def tensor_of(x, ctx=None, dtype=None):
    """The torch tensor behind an array, or a new one for a scalar/list/NumPy array."""
    if isinstance(x, NDArray):
        return x._tensor
    device = (ctx or current_context()).torch_device
    if isinstance(x, torch.Tensor):
        return x.to(device)
    if isinstance(x, _onp.ndarray):
        return torch.from_numpy(_onp.array(x, order="C", copy=True)).to(device)
    return torch.as_tensor(_onp.asarray(x, dtype=np_dtype(dtype or 'float32')), device=device)


def _index_part(k, device):
    if isinstance(k, NDArray):
        t = k._tensor
        return t.to(device) if t.dtype == torch.bool else t.long().to(device)
    if isinstance(k, _onp.ndarray):
        t = torch.from_numpy(_onp.array(k, order="C", copy=True))
        return (t if t.dtype == torch.bool else t.long()).to(device)
    if isinstance(k, list):
        a = _onp.asarray(k)
        return torch.as_tensor(a if a.dtype == bool else a.astype(_onp.int64), device=device)
    if isinstance(k, (bool, _onp.bool_)):
        return torch.tensor(bool(k), device=device)
    if isinstance(k, integer_types):
        return int(k)
    if isinstance(k, slice) or k is None or k is Ellipsis:
        return k
    raise IndexError('mx.np.ndarray does not support index type %s' % type(k).__name__)


def _torch_index(key, device):
    """(torch index, whether basic: ints, slices, None and Ellipsis only)."""
    parts = key if isinstance(key, tuple) else (key,)
    out = tuple(_index_part(k, device) for k in parts)
    basic = all(isinstance(k, (int, slice)) or k is None or k is Ellipsis for k in out)
    if any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in out):
        return tuple(_Reversed(k) if isinstance(k, slice) and k.step is not None and k.step < 0
                     else k for k in out), False
    return (out if isinstance(key, tuple) else out[0]), basic


class _Reversed:
    """A negative-step slice: torch has no negative strides, so it is gathered (a copy)."""
    __slots__ = ('slc',)

    def __init__(self, slc):
        self.slc = slc


def _apply_index(t, index):
    parts = index if isinstance(index, tuple) else (index,)
    if not any(isinstance(k, _Reversed) for k in parts):
        return t[index]
    # expand an Ellipsis so that each part knows its axis
    n_axes = sum(1 for k in parts if k is not None and k is not Ellipsis and not (
        isinstance(k, torch.Tensor) and k.dtype == torch.bool))
    n_axes += sum(k.dim() - 1 for k in parts if isinstance(k, torch.Tensor) and
                  k.dtype == torch.bool)
    expanded = []
    for k in parts:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (t.dim() - n_axes))
        else:
            expanded.append(k)
    axis, fixed, reversed_axes = 0, [], []
    for k in expanded:
        if isinstance(k, _Reversed):
            fixed.append(slice(None))
            reversed_axes.append((len(fixed) - 1, axis, k.slc))
        else:
            fixed.append(k)
        if k is not None:
            axis += k.dim() if isinstance(k, torch.Tensor) and k.dtype == torch.bool else 1
    for _, ax, slc in reversed_axes:       # gather those axes first, then index the rest
        picks = torch.tensor(list(range(t.shape[ax]))[slc], dtype=torch.long, device=t.device)
        t = torch.index_select(t, ax, picks)
    return t[tuple(fixed)]


class ndarray(NDArray):  # pylint: disable=invalid-name
    """An array with NumPy semantics over a torch.Tensor (see the module's docstring)."""
    __slots__ = ()
    _np_array = True

    # ---- properties ---------------------------------------------------------------------------
    @property
    def dtype(self):
        return np_dtype(self._tensor.dtype)

    @property
    def T(self):
        return self.transpose()

    @property
    def itemsize(self):
        return self._tensor.element_size()

    @property
    def nbytes(self):
        return self._tensor.element_size() * self._tensor.numel()

    @property
    def device(self):
        return self._ctx

    def __repr__(self):
        a = self.asnumpy()
        body = _onp.array2string(a, separator=', ', prefix='array(')
        if a.dtype in (_onp.float32, _onp.bool_):     # MXNet's np leaves its default out
            body = 'array(%s)' % body
        else:
            body = 'array(%s, dtype=%s)' % (body, a.dtype)
        if self._ctx.device_type != 'cpu':
            body = body[:-1] + ', ctx=%s)' % self._ctx
        return body

    def __str__(self):
        return str(self.asnumpy())

    def __len__(self):
        if self.ndim == 0:
            raise TypeError('len() of unsized object')
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError('iteration over a 0-d array')
        return super().__iter__()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.ndim == 0 and not self._tensor.is_floating_point():
            return int(self.item())
        raise TypeError('only integer scalar arrays can be converted to a scalar index')

    def __bool__(self):
        if self.size == 0:
            return False
        if self.size > 1:
            raise ValueError('The truth value of an ndarray with multiple elements is '
                             'ambiguous.')
        return bool(self.item())

    # ---- conversion ---------------------------------------------------------------------------
    def item(self, *args):
        return self.asnumpy().item(*args)

    def tolist(self):
        return self.asnumpy().tolist()

    def asscalar(self):
        return self.item()

    def as_nd_ndarray(self):
        """A classic NDArray sharing this array's memory."""
        from ..ndarray.ndarray import _wrap
        return _wrap(self._tensor, self._ctx)

    def as_np_ndarray(self):
        return self

    def copy(self, order='C'):
        return wrap(self._tensor.clone() if _recording() else self._tensor.detach().clone(),
                    self._ctx)

    def astype(self, dtype, order='K', casting='unsafe', subok=True, copy=True):
        dt = torch_dtype(dtype if dtype is not None else 'float32')
        if not copy and dt == self._tensor.dtype:
            return self
        with _grad_scope():
            return wrap(self._tensor.to(dt, copy=True), self._ctx)

    def as_in_context(self, context):
        if context == self._ctx:
            return self
        return self.copyto(context)

    as_in_ctx = as_in_context

    def to_device(self, device):
        return self.as_in_context(device)

    def copyto(self, other):
        if isinstance(other, Context):
            return wrap(self._tensor.detach().to(other.torch_device, copy=True), other)
        return super().copyto(other)

    def detach(self):
        return wrap(self._tensor.detach(), self._ctx)

    def attach_grad(self, grad_req='write', stype=None):
        from .. import autograd
        autograd.mark_variables([self], [wrap(torch.zeros_like(self._tensor), self._ctx)],
                                grad_req)

    # ---- indexing -----------------------------------------------------------------------------
    def __getitem__(self, key):
        if isinstance(key, NDArray) and key.ndim == 0 and not key._tensor.is_floating_point() \
                and key._tensor.dtype != torch.bool:
            key = int(key.item())
        index, basic = _torch_index(key, self._tensor.device)
        with _grad_scope():
            result = _apply_index(self._tensor, index)
        return wrap(result, self._ctx)

    def __setitem__(self, key, value):
        if not self.writable:
            raise ValueError('Failed to assign to a readonly ndarray')
        from .. import autograd
        index, _ = _torch_index(key, self._tensor.device)
        src = value._tensor if isinstance(value, NDArray) else None
        with torch.set_grad_enabled(autograd._prepare_write(self._tensor, src)):
            if src is None:
                if isinstance(value, (numeric_types, bool, _onp.generic)):
                    src = value
                else:
                    src = torch.as_tensor(_onp.asarray(value), device=self._tensor.device)
            if isinstance(src, torch.Tensor):
                src = src.to(self._tensor.device, self._tensor.dtype)
                region = self._tensor[index].shape
                while src.dim() > len(region) and src.shape[0] == 1:
                    src = src[0]
            self._tensor[index] = src

    # ---- shapes -------------------------------------------------------------------------------
    def reshape(self, *args, **kwargs):
        from . import _funcs
        shape = args[0] if len(args) == 1 else args
        if not args:
            shape = kwargs.pop('newshape', kwargs.pop('shape', None))
        kwargs.pop('order', None)
        if kwargs:
            raise TypeError('reshape() got unexpected keyword arguments %s' % sorted(kwargs))
        return _funcs.reshape(self, shape)

    # ---- operators ----------------------------------------------------------------------------
    def _op(name, reflected=False):  # pylint: disable=no-self-argument
        def method(self, other):
            from . import _funcs
            if not isinstance(other, (NDArray, numeric_types, bool, _onp.generic, _onp.ndarray,
                                      list, tuple)):
                return NotImplemented
            func = getattr(_funcs, name)
            return func(other, self) if reflected else func(self, other)
        method.__name__ = name
        return method

    __add__ = _op('add')
    __radd__ = _op('add', True)
    __sub__ = _op('subtract')
    __rsub__ = _op('subtract', True)
    __mul__ = _op('multiply')
    __rmul__ = _op('multiply', True)
    __truediv__ = _op('true_divide')
    __rtruediv__ = _op('true_divide', True)
    __floordiv__ = _op('floor_divide')
    __rfloordiv__ = _op('floor_divide', True)
    __mod__ = _op('mod')
    __rmod__ = _op('mod', True)
    __pow__ = _op('power')
    __rpow__ = _op('power', True)
    __matmul__ = _op('matmul')
    __rmatmul__ = _op('matmul', True)
    __and__ = _op('bitwise_and')
    __rand__ = _op('bitwise_and', True)
    __or__ = _op('bitwise_or')
    __ror__ = _op('bitwise_or', True)
    __xor__ = _op('bitwise_xor')
    __rxor__ = _op('bitwise_xor', True)
    __lshift__ = _op('left_shift')
    __rshift__ = _op('right_shift')
    __eq__ = _op('equal')
    __ne__ = _op('not_equal')
    __lt__ = _op('less')
    __le__ = _op('less_equal')
    __gt__ = _op('greater')
    __ge__ = _op('greater_equal')
    __div__ = __truediv__
    __rdiv__ = __rtruediv__
    del _op

    def _inplace(self, other, name):
        from . import _funcs
        from .. import autograd
        if not self.writable:
            raise ValueError('trying to modify a readonly ndarray')
        autograd._prepare_write(self._tensor)
        result = getattr(_funcs, name)(self, other)
        autograd._refuse_inplace(result._tensor)
        with torch.no_grad():
            self._tensor.copy_(result._tensor.to(self._tensor.dtype))
        return self

    def __iadd__(self, o): return self._inplace(o, 'add')
    def __isub__(self, o): return self._inplace(o, 'subtract')
    def __imul__(self, o): return self._inplace(o, 'multiply')
    def __itruediv__(self, o): return self._inplace(o, 'true_divide')
    def __ifloordiv__(self, o): return self._inplace(o, 'floor_divide')
    def __imod__(self, o): return self._inplace(o, 'mod')
    def __ipow__(self, o): return self._inplace(o, 'power')
    __idiv__ = __itruediv__

    def __neg__(self):
        from . import _funcs
        return _funcs.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        from . import _funcs
        return _funcs.absolute(self)

    def __invert__(self):
        from . import _funcs
        return _funcs.invert(self)

    __hash__ = NDArray.__hash__


# ---- creation ----------------------------------------------------------------------------------
def _dtype_or_default(dtype):
    return torch_dtype(dtype if dtype is not None else 'float32')


def _device(ctx):
    return (ctx or current_context()).torch_device


def _shape(shape):
    if isinstance(shape, integer_types):
        return (int(shape),)
    if shape is None:
        raise TypeError('shape must be an int or a tuple of ints, got None')
    return tuple(int(s) for s in shape)


def array(object, dtype=None, ctx=None, copy=True):  # pylint: disable=redefined-builtin
    """A new mx.np.ndarray holding a copy of `object` (lists and scalars become float32 unless
    `dtype` says otherwise; NumPy arrays and ndarrays keep their dtype)."""
    ctx = ctx or current_context()
    if isinstance(object, NDArray):
        t = object._tensor.detach()
        return wrap(t.to(ctx.torch_device, _dtype_or_default(dtype) if dtype is not None
                         else t.dtype, copy=True), ctx)
    if isinstance(object, _onp.ndarray):
        a = object if dtype is None else object.astype(np_dtype(dtype))
    else:
        try:
            a = _onp.array(object, dtype=np_dtype(dtype) if dtype is not None else None)
        except (TypeError, ValueError) as err:
            raise TypeError('source_array must be array like object: %s' % err) from None
        if dtype is None:
            a = a.astype(_onp.float32)
    if a.dtype == _onp.float64 and dtype is None and not isinstance(object, _onp.ndarray):
        a = a.astype(_onp.float32)
    return wrap(torch.from_numpy(_onp.array(a, order="C", copy=True)).to(ctx.torch_device), ctx)


def asarray(obj, dtype=None, ctx=None):
    if isinstance(obj, ndarray) and (dtype is None or np_dtype(dtype) == obj.dtype):
        return obj
    return array(obj, dtype=dtype, ctx=ctx)


def _created(fill, shape, dtype, ctx, order='C'):
    ctx = ctx or current_context()
    return wrap(fill(_shape(shape), dtype=_dtype_or_default(dtype), device=ctx.torch_device), ctx)


def zeros(shape, dtype=None, order='C', ctx=None):
    return _created(torch.zeros, shape, dtype, ctx)


def ones(shape, dtype=None, order='C', ctx=None):
    return _created(torch.ones, shape, dtype, ctx)


def empty(shape, dtype=None, order='C', ctx=None):
    return _created(torch.zeros, shape, dtype, ctx)


def full(shape, fill_value, dtype=None, order='C', ctx=None, out=None):
    ctx = ctx or current_context()
    if isinstance(fill_value, NDArray):
        value = fill_value._tensor.to(ctx.torch_device)
        dt = _dtype_or_default(dtype) if dtype is not None else value.dtype
        result = wrap(value.to(dt).expand(_shape(shape)).clone(), ctx)
    else:
        result = wrap(torch.full(_shape(shape), fill_value, dtype=_dtype_or_default(dtype),
                                 device=ctx.torch_device), ctx)
    if out is not None:
        out._tensor.copy_(result._tensor)
        return out
    return result


def _like(fill):
    def like(a, dtype=None, order='C', ctx=None, out=None, **kwargs):
        dt = torch_dtype(dtype) if dtype is not None else a._tensor.dtype
        ctx = ctx or a.context
        result = wrap(fill(a, dt, ctx.torch_device, **kwargs), ctx)
        if out is not None:
            out._tensor.copy_(result._tensor)
            return out
        return result
    return like


zeros_like = _like(lambda a, dt, dev: torch.zeros(a.shape, dtype=dt, device=dev))
ones_like = _like(lambda a, dt, dev: torch.ones(a.shape, dtype=dt, device=dev))
empty_like = _like(lambda a, dt, dev: torch.zeros(a.shape, dtype=dt, device=dev))


def full_like(a, fill_value, dtype=None, order='C', ctx=None, out=None):
    return _like(lambda a, dt, dev, value: torch.full(a.shape, value, dtype=dt, device=dev))(
        a, dtype, order, ctx, out, value=fill_value)


def arange(start, stop=None, step=1, dtype=None, ctx=None):
    """Evenly spaced values in [start, stop) (float32 unless `dtype` says otherwise)."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError('arange: step must not be 0')
    values = _onp.arange(start, stop, step, dtype=_onp.float64)
    return array(values, dtype=dtype if dtype is not None else 'float32', ctx=ctx)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, ctx=None):
    values, step = _onp.linspace(start, stop, int(num), endpoint=endpoint, retstep=True,
                                 axis=axis)
    result = array(values, dtype=dtype if dtype is not None else 'float32', ctx=ctx)
    return (result, step) if retstep else result


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0, ctx=None):
    values = _onp.logspace(start, stop, int(num), endpoint=endpoint, base=base, axis=axis)
    return array(values, dtype=dtype if dtype is not None else 'float32', ctx=ctx)


def eye(N, M=None, k=0, dtype=None, ctx=None, **kwargs):  # pylint: disable=invalid-name
    return array(_onp.eye(N, M, k), dtype=dtype if dtype is not None else 'float32', ctx=ctx)


def identity(n, dtype=None, ctx=None):
    return eye(n, dtype=dtype, ctx=ctx)


def tri(N, M=None, k=0, dtype=None, ctx=None):  # pylint: disable=invalid-name
    return array(_onp.tri(N, M, k), dtype=dtype if dtype is not None else 'float32', ctx=ctx)


def indices(dimensions, dtype=None, ctx=None):
    return array(_onp.indices(dimensions), dtype=dtype if dtype is not None else 'int64',
                 ctx=ctx)


def from_numpy(ndarray_, zero_copy=True):  # pylint: disable=unused-argument
    return array(ndarray_, dtype=ndarray_.dtype)


def shares_memory(a, b, max_work=None):
    return a._tensor.untyped_storage().data_ptr() == b._tensor.untyped_storage().data_ptr()


may_share_memory = shares_memory


def _as_np(nd):
    """NDArray.as_np_ndarray: an mx.np.ndarray sharing a classic NDArray's memory."""
    if getattr(nd, 'stype', 'default') != 'default':
        raise ValueError('as_np_ndarray: only dense (default storage) arrays convert, got %s'
                         % nd.stype)
    return wrap(nd._tensor, nd._ctx)


NDArray.as_np_ndarray = _as_np
