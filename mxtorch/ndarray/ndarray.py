"""NDArray: a mutable handle over a torch.Tensor, with MXNet's classic semantics.

* basic indexing that selects one contiguous block (ints and a slice on leading axes) returns a
  view that writes through; other basic indexing (`x[:, 1]`) and advanced indexing copy;
* there are no 0-d arrays: a scalar result has shape (1,);
* arithmetic broadcasts; a scalar is first cast to the array's dtype (int32 * 0.5 -> zeros);
* every operator function (`mx.nd.<op>`) and NDArray method runs the registered operator's
  forward (ops/), the same code the symbolic executor runs.
"""
from contextlib import nullcontext
import ctypes

import numpy as np
import torch
import torch.utils.dlpack

from ..base import (MXNetError, default_dtype, dtype_type, np_dtype, torch_dtype, integer_types,
                    numeric_types)
from ..context import Context, current_context, context_of
from .. import engine, int_grad, profiler
from .alloc import zeros as lazy_zeros
from ..ops.params import Params
from ..ops.registry import get_op

py_slice = slice      # MXNet's alias for the built-in, kept for `from mxnet.ndarray.ndarray import`
# while mxnet is aliased (mxtorch.compat), one-element results of asnumpy() are this ndarray
# subclass, so that MXNet-era `'%f' % loss.mean().asnumpy()` keeps working on NumPy 2
LEGACY_SIZE1 = [None]
# MXNet's storage-type ids (as in Symbol attributes such as __storage_type__)
_STORAGE_TYPE_STR_TO_ID = {'undefined': -1, 'default': 0, 'row_sparse': 1, 'csr': 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}


def _ctx_of_tensor(tensor):
    return context_of(tensor.device)


class NDArray:
    """A handle over a torch.Tensor and the Context it lives on."""
    __slots__ = ('_tensor', '_ctx', 'writable', '_grad', '_grad_req', '_fresh', '__weakref__')
    __array_priority__ = 1000.0
    _np_array = False          # True for mx.np.ndarray (mxtorch/numpy)

    def __init__(self, tensor=None, ctx=None, writable=True, handle=None):
        if handle is None and isinstance(tensor, ctypes.c_void_p):
            handle = tensor                # MXNet's positional NDArray(handle, writable)
        if handle is not None:             # MXNet's NDArray(handle=...), from base._LIB
            from ..capi import take_tensor
            tensor = take_tensor(handle)
        if not isinstance(tensor, torch.Tensor):
            raise TypeError('NDArray wraps a torch.Tensor, got %s' % type(tensor).__name__)
        self._tensor = tensor
        self._ctx = ctx if ctx is not None else _ctx_of_tensor(tensor)
        self.writable = writable
        self._grad = None

    # ---- basic properties ----------------------------------------------------------------------
    @property
    def shape(self):
        return tuple(self._tensor.shape)

    @property
    def size(self):
        return self._tensor.numel()

    @property
    def ndim(self):
        return self._tensor.dim()

    @property
    def dtype(self):
        return dtype_type(self._tensor.dtype)

    @property
    def context(self):
        return self._ctx

    ctx = context

    @property
    def stype(self):
        return 'default'

    @property
    def handle(self):
        return self

    @property
    def grad(self):
        return self._grad

    @property
    def _fresh_grad(self):
        """Whether backward wrote this variable's gradient since the flag was last cleared."""
        return getattr(self, '_fresh', False)

    @_fresh_grad.setter
    def _fresh_grad(self, value):
        self._fresh = bool(value)

    @property
    def T(self):
        if self.ndim < 2:
            return self.copy()
        return _wrap(self._tensor.permute(*reversed(range(self.ndim))).contiguous(), self._ctx)

    def __repr__(self):
        shape = 'x'.join(str(d) for d in self.shape)
        return '\n%s\n<NDArray %s @%s>' % (self.asnumpy(), shape, self._ctx)

    __str__ = __repr__

    def __len__(self):
        return self.shape[0]

    def __hash__(self):
        return id(self)

    def __bool__(self):
        engine.wait_for(self._tensor)
        if self.size == 1:
            return bool(self._tensor.item())
        if self.size == 0:
            return False
        raise ValueError('The truth value of an NDArray with multiple elements is ambiguous.')

    def __iter__(self):
        for i in range(self.shape[0]):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        a = self.asnumpy()
        return a if dtype is None else a.astype(dtype)

    # ---- conversion and copies ---------------------------------------------------------------
    def asnumpy(self):
        engine.wait_for(self._tensor)
        t = self._tensor.detach()
        if t.dtype == torch.bfloat16:
            out = t.cpu().view(torch.int16).numpy().view(np_dtype('bfloat16')).copy()
        else:
            out = t.cpu().numpy().copy() if t.device.type == 'cpu' else t.cpu().numpy()
        if LEGACY_SIZE1[0] is not None and out.size == 1 and out.ndim:
            return out.view(LEGACY_SIZE1[0])     # float()/int() work, as in NumPy 1.x
        return out

    def asscalar(self):
        if self.size != 1:
            raise ValueError('The current array is not a scalar')
        return self.asnumpy().reshape(())[()]

    def copy(self):
        copied = self._tensor.detach().clone()
        engine.carry(self._tensor, copied)
        return _wrap(copied, self._ctx)

    def copyto(self, other):
        """Copy into an NDArray (returned) or onto a Context (a new array)."""
        if isinstance(other, NDArray):
            if other is self:
                return other
            if other.shape != self.shape:
                raise ValueError('copyto: shape mismatch, target has %s, source has %s'
                                 % (other.shape, self.shape))
            from .. import autograd
            with torch.set_grad_enabled(autograd._prepare_write(other._tensor, self._tensor)):
                other._tensor.copy_(self._tensor)
            engine.carry(self._tensor, other._tensor)
            return other
        if isinstance(other, Context):
            copied = self._tensor.detach().to(other.torch_device, copy=True)
            engine.carry(self._tensor, copied)
            return _wrap(copied, other)
        raise TypeError('copyto does not support type %s' % type(other).__name__)

    def to_dlpack_for_read(self):
        return to_dlpack_for_read(self)

    to_dlpack_for_write = to_dlpack_for_read

    def as_in_context(self, context):
        if context == self._ctx:
            return self
        return self.copyto(context)

    def astype(self, dtype, copy=True):
        if dtype is None:  # as MXNet: a new float32 array, or self where NumPy's default matches
            if not copy and self._tensor.dtype == torch.float64:
                return self
            dtype = 'float32'
        dt = torch_dtype(dtype)
        if not copy and dt == self._tensor.dtype:
            return self
        converted = self._tensor.detach().to(dt, copy=True)
        engine.carry(self._tensor, converted)
        return _wrap(converted, self._ctx)

    def tostype(self, stype):
        from .sparse import cast_to
        return cast_to(self, stype)

    def detach(self):
        return _wrap(self._tensor.detach(), self._ctx)

    def wait_to_read(self):
        engine.wait_for(self._tensor)
        if self._tensor.is_cuda:
            torch.cuda.current_stream(self._tensor.device).synchronize()

    wait_to_write = wait_to_read

    def as_nd_ndarray(self):
        return self

    def attach_grad(self, grad_req='write', stype=None):
        """Record gradients for this array in `mx.autograd` scopes; read them from `.grad`."""
        from .. import autograd
        if stype is not None and stype != 'default':
            from .sparse import zeros as sparse_zeros
            grad = sparse_zeros(stype, self.shape, ctx=self._ctx, dtype=self.dtype)
        else:
            grad = _wrap(torch.zeros_like(self._tensor), self._ctx)
        autograd.mark_variables([self], [grad], grad_req)

    def backward(self, out_grad=None, retain_graph=False, train_mode=True):
        from .. import autograd
        autograd.backward([self], None if out_grad is None else [out_grad], retain_graph,
                          train_mode)

    # ---- shape manipulation -------------------------------------------------------------------
    def reshape(self, *shape, **kwargs):
        """Reshape with MXNet's special codes (0, -1, -2, -3, -4); a view when possible."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        elif not shape:
            shape = kwargs.pop('shape')
        reverse = kwargs.pop('reverse', False)
        if kwargs:
            raise TypeError('reshape() got unexpected arguments %s' % sorted(kwargs))
        shape = tuple(int(d) for d in shape)
        if all(d > 0 for d in shape) and int(np.prod(shape)) != self.size:
            raise ValueError('Cannot reshape array of size %d into shape %s' % (self.size, shape))
        from ..ops.tensor import reshape_target
        target = reshape_target(self.shape, shape, reverse)
        out = _wrap(self._tensor.reshape(target), self._ctx)
        if _recording() and int_grad.involved([self._tensor], [out._tensor]):
            out._tensor, = int_grad.follow(lambda t: t.reshape(target), [self._tensor],
                                           [out._tensor])
        if _recording():                   # recorded as a Reshape, as MXNet records it
            from .. import autograd
            op = get_op('Reshape')
            autograd._record_op(op, op.parse_params({'shape': target}), [self._tensor],
                                [out._tensor])
        return out

    def flatten(self, inplace=False):
        """(d0, d1*...*dk); with inplace, a view sharing this array's memory."""
        return self.reshape((0, -1)) if inplace else invoke('Flatten', [self])

    def expand_dims(self, axis, inplace=False):
        """A new axis of size 1 at `axis`; with inplace, a view sharing this array's memory."""
        if not inplace:
            return invoke('expand_dims', [self], axis=axis)
        if not -self.ndim - 1 <= axis <= self.ndim:
            raise ValueError('axis %d is out of range for %dd array' % (axis, self.ndim))
        shape = list(self.shape)
        shape.insert(axis % (self.ndim + 1), 1)
        return self.reshape(shape)

    def squeeze(self, axis=None, inplace=False):
        """Drop axes of size 1 (all, or those in `axis`); with inplace, a view."""
        if not inplace:
            return invoke('squeeze', [self], axis=axis)
        axes = [axis] if isinstance(axis, integer_types) else list(axis or ())
        if len(set(axes)) != len(axes):
            raise ValueError('axis %s contains duplicate which is not allowed.' % (axes,))
        for a in axes:
            if not -self.ndim <= a < self.ndim:
                raise ValueError('axis %d is out of range for %dd array' % (a, self.ndim))
            if self.shape[a] != 1:
                raise ValueError('Squeeze target axis %d must be size 1, got %d'
                                 % (a, self.shape[a]))
        drop = {a % self.ndim for a in axes} if axes else \
            {i for i, d in enumerate(self.shape) if d == 1}
        shape = [d for i, d in enumerate(self.shape) if i not in drop] or [1]
        return _wrap(self._tensor.reshape(shape), self._ctx)

    @staticmethod
    def _basic_indexing_slice_is_contiguous(slc_key, shape):
        """Whether the basic index `slc_key` (a tuple of slices and ints) picks one contiguous
        block of a C-ordered array of `shape`."""
        shape = tuple(shape)
        strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        layout = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape, strides)
        return bool(layout[tuple(slc_key)].flags.contiguous)     # strides only, never read

    def broadcast_to(self, shape):
        """Broadcast to `shape`; missing leading axes are added first, as in NumPy."""
        shape = tuple(int(s) for s in shape)
        if len(shape) < self.ndim:
            raise MXNetError('broadcast_to: shape=%s has fewer axes than the array of shape %s'
                             % (shape, self.shape))
        source = (1,) * (len(shape) - self.ndim) + self.shape
        for have, want in zip(source, shape):
            if have != want and have != 1:
                raise MXNetError('broadcast_to: an array of shape %s cannot be broadcast to '
                                 'shape=%s' % (self.shape, shape))
        data = self if source == self.shape else self.reshape(source)
        return invoke('broadcast_to', [data], shape=shape)

    # ---- indexing -----------------------------------------------------------------------------
    def _index(self, key):
        """(torch index, is_basic). Basic = ints/slices/None/Ellipsis only."""
        if isinstance(key, NDArray):
            return key._tensor.long(), False
        if isinstance(key, np.ndarray):
            return torch.from_numpy(key.astype(np.int64)), False
        if isinstance(key, list):
            return torch.tensor(key, dtype=torch.long), False
        if isinstance(key, (integer_types, slice)) or key is None or key is Ellipsis:
            key = (key,)
        if not isinstance(key, tuple):
            raise IndexError('NDArray does not support index type %s' % type(key).__name__)
        parts, basic = [], True
        for k in key:
            if isinstance(k, (integer_types, slice)) or k is None or k is Ellipsis:
                if isinstance(k, slice) and k.step is not None and k.step < 0:
                    basic = False      # torch has no negative strides: gathered as a copy
                parts.append(int(k) if isinstance(k, integer_types) else k)
            else:
                parts.append(self._index(k)[0])
                basic = False
        return tuple(parts), basic

    def __getitem__(self, key):
        index, basic = self._index(key)
        t = self._tensor
        if not basic and _has_negative_step(index):     # (torch: no negative strides)
            positions = _flat_positions(index, t)

            def pick(x):
                return x.reshape(-1)[positions]
        else:
            def pick(x):
                return x[index]
        result = pick(t)
        if result.dim() == 0:
            result = result.reshape(1)
        if not basic or not _selects_a_block(t.shape, index):
            # as in MXNet, basic indexing is a view only when it selects one contiguous block
            # (ints and a slice on leading axes); `x[:, 1]` and advanced indexing copy
            result = result.clone()
        if int_grad.involved([t], [result]) and _recording():
            result, = int_grad.follow(lambda x: pick(x).reshape(result.shape), [t], [result])
        return _wrap(result, self._ctx)

    def __setitem__(self, key, value):
        if not self.writable:
            raise ValueError('Failed to assign to a readonly NDArray')
        index, basic = self._index(key)
        t = self._tensor
        from .. import autograd
        recorded = autograd._prepare_write(t, value._tensor if isinstance(value, NDArray) else None)
        if not recorded and autograd._paused_in_record():
            # paused inside record(), the write is not versioned (`.data`): a graph that saved
            # this array reads the new values in backward, as in MXNet, instead of failing
            # torch's check. Elsewhere writes are versioned: bound plans keep values derived
            # from arrays (folded weights) while their version counters stay put.
            t = t.data
        if not basic and _has_negative_step(index) and t.is_contiguous():
            t, index = t.view(-1), _flat_positions(index, t)    # (torch: no negative strides)
        with torch.set_grad_enabled(recorded):
            if isinstance(value, NDArray):
                src = value._tensor.to(t.device)
            elif isinstance(value, numeric_types) or isinstance(value, bool):
                src = value
            else:
                src = torch.as_tensor(np.asarray(value), device=t.device)
            if isinstance(src, torch.Tensor):
                target_shape = tuple(t[index].shape) if basic else None
                if basic and src.numel() != int(np.prod(target_shape)) and not _broadcastable(
                        tuple(src.shape), target_shape):
                    raise MXNetError('NDArray.__setitem__: a value of shape %s cannot be '
                                     'assigned to the indexed region of shape %s'
                                     % (tuple(src.shape), target_shape))
            if isinstance(src, torch.Tensor):
                region = target_shape if basic else tuple(t[index].shape)
                if src.numel() == int(np.prod(region)) and src.dim() != len(region):
                    src = src.reshape(region)
                while src.dim() > len(region) and src.shape[0] == 1:
                    src = src[0]           # leading axes of size 1 broadcast away, as NumPy
            if recorded and not (basic and t[index].numel() == t.numel()):
                autograd._refuse_inplace(src)     # a write into part of the array (MXNet's)
            if basic:
                target = t[index]
                if isinstance(src, torch.Tensor):
                    target.copy_(src)
                else:
                    target.fill_(src)
            else:
                t[index] = src.to(t.dtype) if isinstance(src, torch.Tensor) else src
        if isinstance(value, NDArray):
            engine.carry(value._tensor, self._tensor)

    # ---- arithmetic ---------------------------------------------------------------------------
    def _binary(self, other, array_op, scalar_op):
        if isinstance(other, NDArray):
            return invoke(array_op, [self, other])
        if isinstance(other, numeric_types) or isinstance(other, bool):
            return invoke(scalar_op, [self], scalar=float(other))
        if isinstance(other, np.ndarray):
            return invoke(array_op, [self, array(other, ctx=self._ctx, dtype=self.dtype)])
        return NotImplemented

    def _inplace(self, other, array_op, scalar_op):
        if not self.writable:
            raise ValueError('trying to modify a readonly NDArray')
        from .. import autograd
        autograd._prepare_write(self._tensor)
        result = self._binary(other, array_op, scalar_op)
        if result is NotImplemented:
            return result
        autograd._refuse_inplace(result._tensor)
        with torch.no_grad():
            self._tensor.copy_(result._tensor)
        return self

    def __add__(self, o): return self._binary(o, 'broadcast_add', '_plus_scalar')
    def __radd__(self, o): return self._binary(o, 'broadcast_add', '_plus_scalar')
    def __sub__(self, o): return self._binary(o, 'broadcast_sub', '_minus_scalar')
    def __rsub__(self, o): return self._binary(o, None, '_rminus_scalar')
    def __mul__(self, o): return self._binary(o, 'broadcast_mul', '_mul_scalar')
    def __rmul__(self, o): return self._binary(o, 'broadcast_mul', '_mul_scalar')
    def __truediv__(self, o): return self._binary(o, 'broadcast_div', '_div_scalar')
    def __rtruediv__(self, o): return self._binary(o, None, '_rdiv_scalar')
    def __mod__(self, o): return self._binary(o, 'broadcast_mod', '_mod_scalar')
    def __rmod__(self, o): return self._binary(o, None, '_rmod_scalar')
    def __pow__(self, o): return self._binary(o, 'broadcast_power', '_power_scalar')
    def __rpow__(self, o): return self._binary(o, None, '_rpower_scalar')
    def __eq__(self, o): return self._binary(o, 'broadcast_equal', '_equal_scalar')
    def __ne__(self, o): return self._binary(o, 'broadcast_not_equal', '_not_equal_scalar')
    def __gt__(self, o): return self._binary(o, 'broadcast_greater', '_greater_scalar')
    def __ge__(self, o): return self._binary(o, 'broadcast_greater_equal', '_greater_equal_scalar')
    def __lt__(self, o): return self._binary(o, 'broadcast_lesser', '_lesser_scalar')
    def __le__(self, o): return self._binary(o, 'broadcast_lesser_equal', '_lesser_equal_scalar')
    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __iadd__(self, o): return self._inplace(o, 'broadcast_add', '_plus_scalar')
    def __isub__(self, o): return self._inplace(o, 'broadcast_sub', '_minus_scalar')
    def __imul__(self, o): return self._inplace(o, 'broadcast_mul', '_mul_scalar')
    def __itruediv__(self, o): return self._inplace(o, 'broadcast_div', '_div_scalar')
    def __imod__(self, o): return self._inplace(o, 'broadcast_mod', '_mod_scalar')
    __idiv__ = __itruediv__

    def __neg__(self):
        return invoke('_mul_scalar', [self], scalar=-1.0)

    def __abs__(self):
        return invoke('abs', [self])

    def __pos__(self):
        return self

    # ---- pickling: MXNet's own form, a dict holding one array record -----------------------------
    def __getstate__(self):
        from .serialization import encode_record
        return {'handle': bytearray(encode_record(self))}

    def __setstate__(self, state):
        from .serialization import decode_record
        arr = decode_record(bytes(state['handle']))
        self._tensor, self._ctx, self.writable, self._grad = arr._tensor, arr._ctx, True, None


def _selects_a_block(shape, index):
    """Whether basic `index` picks one contiguous block of a C-ordered array of `shape` (judged
    on the logical layout, whatever the strides of the tensor behind the NDArray)."""
    return torch.empty(shape, device='meta')[index].is_contiguous()


def _broadcastable(src, target):
    """Whether an array of shape `src` broadcasts (NumPy rules) to shape `target`."""
    if len(src) > len(target):
        return all(d == 1 for d in src[:len(src) - len(target)]) and _broadcastable(
            src[len(src) - len(target):], target)
    return all(s in (1, t) for s, t in zip(reversed(src), reversed(target)))


def _has_negative_step(index):
    return isinstance(index, tuple) and any(
        isinstance(k, slice) and k.step is not None and k.step < 0 for k in index)


def _flat_positions(index, t):
    """The flat positions in contiguous tensor t that NumPy's indexing `index` selects, shaped
    as the indexed region."""
    index = tuple(k.cpu().numpy() if isinstance(k, torch.Tensor) else k for k in index)
    positions = np.arange(t.numel()).reshape(tuple(t.shape))[index]
    return torch.as_tensor(np.ascontiguousarray(positions), device=t.device)


def _wrap(tensor, ctx):
    arr = NDArray.__new__(NDArray)
    arr._tensor = tensor
    arr._ctx = ctx
    arr.writable = True
    arr._grad = None
    return arr


# ---------------------------------------------------------------------------------------------
# Running an operator imperatively
# ---------------------------------------------------------------------------------------------
def invoke(op, inputs, out=None, ctx=None, train=None, **params):
    """Run operator `op` (a name or OpDef) on NDArrays; params are Python values.

    Returns an NDArray for one visible output, else a list. With `out`, results are copied into
    the given array(s) and those are returned.
    """
    if isinstance(op, str):
        op = get_op(op)
    p = params if isinstance(params, Params) and params else op.parse_params(params)
    return invoke_parsed(op, p, inputs, out=out, ctx=ctx, train=train)


def invoke_parsed(op, p, inputs, out=None, ctx=None, train=None):
    if out is None and _dense_suffices(op, p, inputs):
        return invoke_dense(op, p, inputs, ctx=ctx, train=train)
    if op.infer_storage is not None or any(x.stype != 'default' for x in inputs):
        from .sparse import invoke_with_storage      # storage types decide the kernel
        return invoke_with_storage(op, p, inputs, out=out, ctx=ctx, train=train)
    return invoke_dense(op, p, inputs, out=out, ctx=ctx, train=train)


# (op, params, number of inputs) -> whether dense inputs take the dense kernel to dense outputs
# (for operators with storage rules), by id(params); entries hold their params alive
_DENSE_SUFFICES = {}


def _dense_suffices(op, p, inputs):
    """Whether `op` on these inputs is the plain dense computation: every input dense and,
    where the op has storage-type rules, those rules give dense outputs and its sparse kernel
    (if any) declines dense inputs (`declines_dense`)."""
    for x in inputs:
        if x.__class__ is not NDArray and x.stype != 'default':
            return False
    if op.infer_storage is None:
        return True
    entry = _DENSE_SUFFICES.get(id(p))
    if entry is None or entry[0] is not p or entry[1] is not op or entry[2] != len(inputs):
        entry = (p, op, len(inputs), _dense_kernel_suffices(op, p, len(inputs)))
        if len(_DENSE_SUFFICES) < 4096:
            _DENSE_SUFFICES[id(p)] = entry
    return entry[3]


def _dense_kernel_suffices(op, p, n_inputs):
    kernel = op.sparse_forward
    if kernel is not None and not getattr(kernel, 'declines_dense', False):
        return False
    try:
        out_stypes = op.infer_storage(p, ['default'] * n_inputs)
    except Exception:        # noqa: BLE001  (the storage path raises it, at the call)
        return False
    return out_stypes is None or all(s == 'default' for s in out_stypes)


_AUTOGRAD = []       # [mxtorch.autograd], bound at the first call (it imports this module)


def _autograd():
    if not _AUTOGRAD:
        from .. import autograd
        _AUTOGRAD.append(autograd)
    return _AUTOGRAD[0]


def invoke_dense(op, p, inputs, out=None, ctx=None, train=None):
    """Run op's (dense) forward on the inputs' tensors."""
    autograd = _AUTOGRAD[0] if _AUTOGRAD else _autograd()
    tensors = [x._tensor for x in inputs]
    if ctx is None:
        ctx = inputs[0]._ctx if inputs else current_context()
    state = autograd._state                 # (is_training(), is_recording(), read inline)
    if train is None:
        train = getattr(state, 'training', False)
    recording = getattr(state, 'recording', False)
    kwargs = {}
    if op.mode_dependent:
        kwargs['train'] = train
    if op.creation:
        kwargs['device'] = ctx.torch_device
        kwargs['out_shape'] = None
    # an input (or, for a random operator, the device's generator) carries an error not raised
    failure = engine.failure_of(tensors, ctx.torch_device if op.random else None) \
        if engine._marked else None
    forward = op.forward
    if op.forward_into_input0 is not None and out is not None and tensors \
            and getattr(out, '_tensor', None) is tensors[0]:
        forward = op.forward_into_input0
    # torch records its graph exactly while autograd records
    switch = torch.is_grad_enabled() != recording
    try:
        if switch:
            torch._C._set_grad_enabled(recording)
        try:
            if profiler._run['active'] is not None:
                with _profiled(op.name):
                    result = forward(p, *tensors, **kwargs)
            else:
                result = forward(p, *tensors, **kwargs)
        finally:
            if switch:
                torch._C._set_grad_enabled(not recording)
    except MXNetError:
        raise
    except (RuntimeError, ValueError, IndexError, TypeError) as err:
        _explain_failure(op, p, tensors)     # a bad shape raises at once, as in MXNet
        if type(err) is not RuntimeError and failure is None:
            raise
        # a failure while computing (not a bad shape) is raised when the outputs are waited
        # for, as MXNet's asynchronous engine does
        result = engine.placeholder_outputs(op, p, tensors, ctx.torch_device)
        if result is None:
            raise MXNetError('%s: %s' % (op.name, err)) from None
        if failure is None:
            failure = engine.defer(MXNetError('%s: %s' % (op.name, err)))
            if op.random:
                engine.mark_random_generator(failure, ctx.torch_device)
    results = result if isinstance(result, tuple) else (result,)
    if train and op.update_aux is not None and failure is None:
        op.update_aux_at_backward(p, tensors[len(op.arg_names(p)):], results)
    if op.fresh_output and len(results) == 1 and op.num_visible_outputs(p) == 1:
        visible = [result]                  # a new tensor the op owns (no view of an input)
    else:
        visible = [_fresh(r, tensors) for r in results[:op.num_visible_outputs(p)]]
    if recording and int_grad.involved(tensors, visible):     # integer arrays' gradients
        visible = int_grad.follow(lambda *ts: forward(p, *ts, **kwargs), tensors, visible,
                                  op.converts_dtype, op.integer_gradient)
    if op.creation or _any_empty(tensors):
        _check_legacy_shapes(op, tensors, visible)
    if failure is not None and out is None:
        engine.mark(failure, visible)
    if recording:
        autograd._record_op(op, p, tensors, visible)
    if out is not None:
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o, r in zip(outs, visible):
            recorded = autograd._prepare_write(o._tensor, r)
            if recorded and any(o._tensor is t for t in tensors):
                autograd._refuse_inplace(r)
            with torch.set_grad_enabled(recorded):
                o._tensor.copy_(r)
            if failure is not None:
                engine.mark(failure, [o._tensor])
        return out
    if len(visible) == 1:
        wrapped = _wrap(visible[0], ctx)
        return wrapped.as_np_ndarray() if inputs and inputs[0]._np_array else wrapped
    wrapped = [_wrap(r, ctx) for r in visible]
    if inputs and inputs[0]._np_array:         # mx.np arrays in, mx.np arrays out
        wrapped = [w.as_np_ndarray() for w in wrapped]
    return wrapped


def _forward(op, p, tensors, kwargs, recording, forward=None):
    """op's forward (or `forward`) with torch's graph recording on exactly while autograd
    records, inside a profiler range while the profiler runs."""
    forward = forward or op.forward
    previous = torch.is_grad_enabled()
    if previous != recording:
        torch._C._set_grad_enabled(recording)
    try:
        if profiler.recording():
            with _profiled(op.name):
                return forward(p, *tensors, **kwargs)
        return forward(p, *tensors, **kwargs)
    finally:
        if previous != recording:
            torch._C._set_grad_enabled(previous)


def _check_legacy_shapes(op, tensors, outputs):
    """Outside NumPy-shape mode MXNet reads a 0 dim (and a 0-d shape) as unknown: an operator made
    to produce such a shape from a zero-size input, or a creation operator asked for one, fails
    its shape inference."""
    if not (op.creation or any(0 in t.shape for t in tensors)):
        return
    if any(o.dim() == 0 or 0 in o.shape for o in outputs):
        if not _is_np_shape():
            raise MXNetError('Operator %s inferring shapes failed: shape %s has an unknown '
                             '(0) dim outside NumPy-shape mode (see mx.np_shape)'
                             % (op.name, tuple(next(o.shape for o in outputs
                                                    if o.dim() == 0 or 0 in o.shape))))


def _profiled(op_name):
    """A profiler range named after operator `op_name` while the profiler records, as MXNet's."""
    return profiler.operator_range(op_name) if profiler.recording() else nullcontext()


def _explain_failure(op, p, tensors):
    """Raise the MXNetError shape/dtype inference gives for these inputs (naming the input, the
    expected and the given shape), if it finds one; called when an operator's forward failed."""
    from ..symbol.infer import infer_call
    if not tensors:
        return
    try:
        infer_call(op, p, tensors)
    except MXNetError:
        raise
    except Exception:        # noqa: BLE001  (no better explanation: the caller reports err)
        return


def _fresh(result, inputs):
    """result, copied if it is a view of one of the inputs (operators may return views; an
    mx.nd call, as in MXNet, always returns a new array)."""
    storage = result.untyped_storage().data_ptr()
    for t in inputs:
        if t.untyped_storage().data_ptr() == storage:
            return result.clone()
    return result


def _any_empty(tensors):
    for t in tensors:
        if 0 in t.shape:
            return True
    return False


def _recording():
    from .. import autograd
    return autograd.is_recording()


# ---------------------------------------------------------------------------------------------
# Creation
# ---------------------------------------------------------------------------------------------
def _shape_tuple(shape):
    shape = (int(shape),) if isinstance(shape, integer_types) else tuple(int(s) for s in shape)
    if any(d < 0 for d in shape):
        raise MXNetError('shape=%s: every dimension must be non-negative' % (shape,))
    return shape


def _known_shape(op_name, shape):
    """`shape` for a creation operator; outside NumPy-shape mode a 0 dim or a 0-d shape is
    unknown to MXNet, whose shape inference then fails."""
    shape = _shape_tuple(shape)
    if (not shape or 0 in shape) and not _is_np_shape():
        raise MXNetError('Operator %s inferring shapes failed: shape %s has an unknown (0) dim '
                         'outside NumPy-shape mode (see mx.np_shape)' % (op_name, shape))
    return shape


def _is_np_shape():
    from ..util import is_np_shape
    return is_np_shape()


def _device(ctx):
    return (ctx or current_context()).torch_device


def array(source_array, ctx=None, dtype=None):
    """A new NDArray holding a copy of `source_array`.

    NumPy arrays, lists and scalars become float32 unless `dtype` is given; an NDArray or a
    torch.Tensor keeps its dtype.
    """
    if source_array.__class__.__module__.startswith('scipy.sparse') or \
            getattr(source_array, 'stype', 'default') != 'default':
        from .sparse import array as sparse_array
        return sparse_array(source_array, ctx=ctx, dtype=dtype)
    ctx = ctx or current_context()
    if isinstance(source_array, NDArray):
        t = source_array._tensor.detach()
        dt = torch_dtype(dtype) if dtype is not None else t.dtype
        return _wrap(t.to(ctx.torch_device, dt, copy=True), ctx)
    if isinstance(source_array, torch.Tensor):
        dt = torch_dtype(dtype) if dtype is not None else source_array.dtype
        return _wrap(source_array.detach().to(ctx.torch_device, dt, copy=True), ctx)
    dt = np_dtype(dtype) if dtype is not None else default_dtype
    try:
        try:
            a = np.array(source_array, dtype=dt)
        except OverflowError:          # NumPy 2 refuses out-of-range Python ints; MXNet (C cast)
            a = np.array(source_array).astype(dt)         # wraps them, as NumPy 1 did
    except (TypeError, ValueError) as err:
        raise TypeError('source_array must be array like object: %s' % err) from None
    if not a.flags['C_CONTIGUOUS']:     # MXNet's arrays are row-major whatever the source's order
        a = a.copy(order='C')
    return _wrap(torch.from_numpy(a).to(ctx.torch_device), ctx)     # a scalar stays 0-d


def from_numpy(ndarray, zero_copy=True):
    """An NDArray over a NumPy array's memory (zero_copy: the array must be C-contiguous, and
    is made read-only on NumPy's side, writes going through the NDArray), else over a copy."""
    if not zero_copy:
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags['C_CONTIGUOUS']:
        raise ValueError('Only c-contiguous arrays are supported for zero-copy')
    t = torch.from_numpy(ndarray)
    ndarray.flags['WRITEABLE'] = False
    return _wrap(t, Context('cpu', 0))


def from_torch(tensor, ctx=None):
    """Wrap a torch.Tensor without copying (mxtorch extension)."""
    return _wrap(tensor, ctx or _ctx_of_tensor(tensor))


def to_dlpack_for_read(data):
    """A DLPack capsule sharing `data`'s memory. mxtorch runs eagerly, so reading and writing
    need no engine synchronisation: both of MXNet's forms are this one."""
    return torch.utils.dlpack.to_dlpack(data._tensor.detach())


to_dlpack_for_write = to_dlpack_for_read


def from_dlpack(dlpack):
    """An NDArray sharing the memory of a DLPack capsule (or of an object with __dlpack__)."""
    return from_torch(torch.utils.dlpack.from_dlpack(dlpack))


def empty(shape, ctx=None, dtype=None, stype=None):
    if stype is not None and stype != 'default':
        from .sparse import zeros as sparse_zeros
        return sparse_zeros(stype, shape, ctx=ctx, dtype=dtype)
    ctx = ctx or current_context()
    return _wrap(torch.empty(_shape_tuple(shape), dtype=torch_dtype(dtype or default_dtype),
                             device=ctx.torch_device), ctx)


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs):
    if stype is not None and stype != 'default':
        from .sparse import zeros as sparse_zeros
        return sparse_zeros(stype, shape, ctx=ctx, dtype=dtype)
    ctx = ctx or current_context()
    with _profiled('_zeros'):
        t = lazy_zeros(_known_shape('_zeros', shape), torch_dtype(dtype or default_dtype),
                       ctx.torch_device)
    return _created(t, ctx, kwargs.get('out'))


def ones(shape, ctx=None, dtype=None, **kwargs):
    ctx = ctx or current_context()
    with _profiled('_ones'):
        t = torch.ones(_known_shape('_ones', shape), dtype=torch_dtype(dtype or default_dtype),
                       device=ctx.torch_device)
    return _created(t, ctx, kwargs.get('out'))


def _created(tensor, ctx, out=None):
    """A new array over `tensor`, or `out` (an NDArray given as out=) with tensor copied in."""
    if out is None:
        return _wrap(tensor, ctx)
    with torch.no_grad():
        out._tensor.copy_(tensor)
    return out


def full(shape, val, ctx=None, dtype=None, out=None):
    ctx = ctx or current_context()
    with _profiled('_full'):
        t = torch.full(_known_shape('_full', shape), val, dtype=torch_dtype(dtype or default_dtype),
                       device=ctx.torch_device)
    if out is not None:
        out._tensor.copy_(t)
        return out
    return _wrap(t, ctx)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, ctx=None, dtype=None):
    """Evenly spaced values in [start, stop), each repeated `repeat` times."""
    ctx = ctx or current_context()
    from ..ops.tensor import arange_values
    values = arange_values(start, stop, step, repeat, np_dtype(dtype or default_dtype))
    return array(values, ctx=ctx, dtype=dtype or default_dtype)


def concatenate(arrays, axis=0, always_copy=True):
    if not arrays:
        raise ValueError('concatenate needs at least one array')
    if not always_copy and len(arrays) == 1:
        return arrays[0]
    return _wrap(torch.cat([a._tensor for a in arrays], dim=axis), arrays[0]._ctx)


def moveaxis(tensor, source, destination):
    """Move axes `source` (an int or a sequence) to positions `destination`; the other axes
    keep their order."""
    def axes(value, what):
        value = [value] if isinstance(value, integer_types) else list(value)
        out = []
        for a in value:
            if not -tensor.ndim <= a < tensor.ndim:
                raise ValueError('moveaxis: %s axis %d is out of bounds for an array of %d '
                                 'dimensions' % (what, a, tensor.ndim))
            out.append(a % tensor.ndim)
        if len(set(out)) != len(out):
            raise ValueError('moveaxis: repeated axis in %s %s' % (what, value))
        return out
    src, dst = axes(source, 'source'), axes(destination, 'destination')
    if len(src) != len(dst):
        raise ValueError('moveaxis: source and destination must have the same number of '
                         'elements, got %d and %d' % (len(src), len(dst)))
    order = [a for a in range(tensor.ndim) if a not in src]
    for d, a in sorted(zip(dst, src)):
        order.insert(d, a)
    return invoke('transpose', [tensor], axes=tuple(order))


def waitall():
    """Wait for all computation; raise the oldest error of an operator not raised yet."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    engine.wait_for_all()


def onehot_encode(indices, out):
    """Write one-hot rows of `indices` into `out` (legacy helper)."""
    with torch.no_grad():
        out._tensor.zero_()
        out._tensor.scatter_(1, indices._tensor.long().reshape(-1, 1), 1)
    return out


# ---------------------------------------------------------------------------------------------
# Element-wise helpers taking NDArrays or scalars on either side (mx.nd.maximum(x, 0), ...)
# ---------------------------------------------------------------------------------------------
def _ufunc(func_name, array_op, scalar_op, rscalar_op, python_fn):
    from ..base import numeric_types

    def helper(lhs, rhs):
        if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
            return invoke(array_op, [lhs, rhs])
        if isinstance(lhs, NDArray) and isinstance(rhs, numeric_types):
            return invoke(scalar_op, [lhs], scalar=float(rhs))
        if isinstance(lhs, numeric_types) and isinstance(rhs, NDArray):
            return invoke(rscalar_op, [rhs], scalar=float(lhs))
        if isinstance(lhs, numeric_types) and isinstance(rhs, numeric_types):
            return python_fn(lhs, rhs)
        raise TypeError('%s: type %s and %s not supported (NDArray or scalar expected)'
                        % (func_name, type(lhs).__name__, type(rhs).__name__))
    helper.__name__ = helper.__qualname__ = func_name
    helper.__doc__ = ('Element-wise %s of two NDArrays (broadcasting) or of an NDArray and a '
                      'scalar.' % func_name)
    return helper


def _install_ufuncs():
    import builtins
    import operator
    table = (
        ('add', 'broadcast_add', '_plus_scalar', '_plus_scalar', operator.add),
        ('subtract', 'broadcast_sub', '_minus_scalar', '_rminus_scalar', operator.sub),
        ('multiply', 'broadcast_mul', '_mul_scalar', '_mul_scalar', operator.mul),
        ('divide', 'broadcast_div', '_div_scalar', '_rdiv_scalar', operator.truediv),
        ('true_divide', 'broadcast_div', '_div_scalar', '_rdiv_scalar', operator.truediv),
        ('modulo', 'broadcast_mod', '_mod_scalar', '_rmod_scalar', operator.mod),
        ('power', 'broadcast_power', '_power_scalar', '_rpower_scalar', operator.pow),
        ('maximum', 'broadcast_maximum', '_maximum_scalar', '_maximum_scalar', builtins.max),
        ('minimum', 'broadcast_minimum', '_minimum_scalar', '_minimum_scalar', builtins.min),
        ('equal', 'broadcast_equal', '_equal_scalar', '_equal_scalar',
         lambda x, y: 1 if x == y else 0),
        ('not_equal', 'broadcast_not_equal', '_not_equal_scalar', '_not_equal_scalar',
         lambda x, y: 1 if x != y else 0),
        ('greater', 'broadcast_greater', '_greater_scalar', '_lesser_scalar',
         lambda x, y: 1 if x > y else 0),
        ('greater_equal', 'broadcast_greater_equal', '_greater_equal_scalar',
         '_lesser_equal_scalar', lambda x, y: 1 if x >= y else 0),
        ('lesser', 'broadcast_lesser', '_lesser_scalar', '_greater_scalar',
         lambda x, y: 1 if x < y else 0),
        ('lesser_equal', 'broadcast_lesser_equal', '_lesser_equal_scalar',
         '_greater_equal_scalar', lambda x, y: 1 if x <= y else 0),
        ('logical_and', 'broadcast_logical_and', '_logical_and_scalar', '_logical_and_scalar',
         lambda x, y: 1 if x and y else 0),
        ('logical_or', 'broadcast_logical_or', '_logical_or_scalar', '_logical_or_scalar',
         lambda x, y: 1 if x or y else 0),
        ('logical_xor', 'broadcast_logical_xor', '_logical_xor_scalar', '_logical_xor_scalar',
         lambda x, y: 1 if bool(x) != bool(y) else 0),
    )
    for name, array_op, scalar_op, rscalar_op, python_fn in table:
        if name not in globals():
            globals()[name] = _ufunc(name, array_op, scalar_op, rscalar_op, python_fn)


_install_ufuncs()


# ---------------------------------------------------------------------------------------------
# Creation and splitting helpers with MXNet's Python signatures
# ---------------------------------------------------------------------------------------------
def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An N x M array (M = N when 0) with ones on diagonal k."""
    return invoke('_eye', [], ctx=ctx, N=N, M=M, k=k, dtype=dtype or 'float32')


def linspace(start, stop, num, endpoint=True, ctx=None, dtype='float32'):
    """`num` evenly spaced values from start to stop (stop included when endpoint)."""
    return invoke('_linspace', [], ctx=ctx, start=start, stop=stop, num=num, endpoint=endpoint,
                  dtype=dtype or 'float32')


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split `ary` along `axis` into equal sections (an int) or at the given indices."""
    from ..symbol.symbol import _split_v2_params
    if isinstance(indices_or_sections, int) and (
            indices_or_sections <= 0 or ary.shape[axis] % indices_or_sections):
        raise ValueError('split_v2: array split does not result in an equal division: axis %d '
                         'of size %d into %d sections'
                         % (axis, ary.shape[axis], indices_or_sections))
    return invoke('_split_v2', [ary], axis=axis, squeeze_axis=squeeze_axis,
                  **_split_v2_params(indices_or_sections))


NDArray.split_v2 = lambda self, *args, **kwargs: split_v2(self, *args, **kwargs)


def histogram(a, bins=10, range=None):
    """(counts, bin edges) of a's values: `bins` equal bins over `range` (an int; without a
    range, over a's min..max), or the bins whose edges the NDArray `bins` holds."""
    if isinstance(bins, NDArray):
        return invoke('_histogram', [a, bins])
    if isinstance(bins, int) and not isinstance(bins, bool):
        if range is None:
            import warnings
            warnings.warn("range is not specified, using numpy's result to ensure consistency "
                          "with numpy")
            import numpy
            counts, edges = numpy.histogram(a.asnumpy(), bins=bins)
            return array(counts, ctx=a.context), array(edges, ctx=a.context)
        return invoke('_histogram', [a], bin_cnt=bins, range=range)
    raise ValueError('histogram: bins must be an integer or an NDArray, got %s'
                     % type(bins).__name__)


# ---------------------------------------------------------------------------------------------
# MXNet's dtype and grad_req code tables (its ctypes interface's; kept for scripts importing them)
# ---------------------------------------------------------------------------------------------
_DTYPE_NP_TO_MX = {None: -1, np.float32: 0, np.float64: 1, np.float16: 2, np.uint8: 3,
                   np.int32: 4, np.int8: 5, np.int64: 6, np.bool_: 7,
                   np.dtype([('bfloat16', np.uint16)]): 12}
_DTYPE_MX_TO_NP = {code: dtype for dtype, code in _DTYPE_NP_TO_MX.items()}
_GRAD_REQ_MAP = {'null': 0, 'write': 1, 'add': 3}


def imdecode(str_img, clip_rect=(0, 0, 0, 0), out=None, index=0, channels=3, mean=None):
    """DEPRECATED (use mx.image.imdecode): decode the encoded image `str_img` (bytes) with
    OpenCV as stored (BGR channel order; grey when channels is 1), keep the rectangle
    clip_rect = (x0, y0, x1, y1) unless y1 == y0, and return its first `channels` channels as a
    (channels, h, w) float32 array (mean's dtype when given), minus `mean` (a (channels, h, w)
    NDArray) when given. With `out`, the image is written into it (a (c, h, w) array, or slice
    `index` of an (n, c, h, w) one) and `out` is returned.

    (MXNet 1.9.1's own Python 3 binding hands its kernel the text of the bytes' repr, not the
    image, and fails on every call; this runs what that kernel does.)"""
    if isinstance(str_img, str):
        str_img = str_img.encode('utf-8')
    if not isinstance(str_img, (bytes, bytearray, memoryview)):
        raise TypeError('imdecode: str_img must be the encoded image as bytes, got %s'
                        % type(str_img).__name__)
    str_img = bytes(str_img)
    rect = tuple(clip_rect)
    if len(rect) != 4 or not all(isinstance(v, integer_types) and v >= 0 for v in rect):
        raise MXNetError('imdecode: clip_rect must be 4 non-negative ints (x0, y0, x1, y1), '
                         'got %r' % (clip_rect,))
    if mean is None:
        mean = _wrap(torch.empty(0), Context('cpu', 0))        # MXNet's "no mean"
    elif not isinstance(mean, NDArray) or mean.ndim != 3:
        raise MXNetError('imdecode: mean must be a (channels, h, w) NDArray, got %s'
                         % (('an NDArray of shape %s' % (mean.shape,))
                            if isinstance(mean, NDArray) else type(mean).__name__))
    result = invoke('_imdecode', [mean], index=index, x0=rect[0], y0=rect[1], x1=rect[2],
                    y1=rect[3], c=channels, size=len(str_img), str_img=str_img)
    if out is None:
        return result
    if not isinstance(out, NDArray) or out.ndim not in (3, 4):
        raise MXNetError('imdecode: out must be a (c, h, w) or (n, c, h, w) NDArray, got %s'
                         % (('shape %s' % (out.shape,)) if isinstance(out, NDArray)
                            else type(out).__name__))
    if out.ndim == 4 and not 0 <= index < out.shape[0]:
        raise MXNetError('imdecode: index %r is out of range for out of shape %s'
                         % (index, out.shape))
    target = out if out.ndim == 3 else out[index]
    if target.shape != result.shape:
        raise MXNetError('imdecode: the decoded image is (c, h, w) = %s, but out%s has shape '
                         '%s' % (result.shape, '' if out.ndim == 3 else '[%d]' % index,
                                 target.shape))
    if mean.size and np.dtype(mean.dtype) != np.dtype(out.dtype):
        raise MXNetError('imdecode: mean (%s) and out (%s) must have the same dtype'
                         % (np.dtype(mean.dtype).name, np.dtype(out.dtype).name))
    with torch.no_grad():
        target._tensor.copy_(result._tensor)
    return out
