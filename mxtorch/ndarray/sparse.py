"""mx.nd.sparse: CSRNDArray and RowSparseNDArray, their creation functions and the sparse ops.

A sparse array keeps its compressed parts (csr: data, indices, indptr; row_sparse: data,
indices) as torch tensors and a dense torch tensor built from them on demand. `_tensor`, the
dense tensor every operator kernel reads, is that dense form, so an operator MXNet runs on
sparse inputs by falling back to dense storage runs here unchanged. Writes into the dense form
(a gradient written by autograd or the executor, a kvstore pull) are noticed through torch's
version counter: the parts are then re-derived from the dense values (their non-zero rows or
elements). Storage-type inference (which outputs are sparse) is declared on the operators
(ops/sparse.py); `invoke_with_storage` applies it to imperative calls.
"""
import builtins

import numpy as np
import torch

from ..base import MXNetError, default_dtype, dtype_type, np_dtype, torch_dtype, numeric_types
from ..context import Context, current_context
from .ndarray import NDArray, _wrap, array as _dense_array, invoke_dense

__all__ = ['CSRNDArray', 'RowSparseNDArray', 'BaseSparseNDArray', 'csr_matrix',
           'row_sparse_array', 'zeros', 'empty', 'array', 'add', 'subtract', 'multiply',
           'divide']

_py_slice = builtins.slice     # `slice` below is the operator function
STYPE_CODES = {'default': 0, 'row_sparse': 1, 'csr': 2}
CODE_STYPES = {v: k for k, v in STYPE_CODES.items()}
_AUX_NAMES = {'row_sparse': ('indices',), 'csr': ('indptr', 'indices')}

try:
    import scipy.sparse as _spsp
except ImportError:        # pragma: no cover
    _spsp = None


class BaseSparseNDArray(NDArray):
    """A sparse array: compressed parts plus the dense form the operator kernels read."""
    __slots__ = ('_shape', '_dtype', '_parts', '_dense', '_dense_version', '_dense_stale')
    _stype = None

    def __init__(self, handle=None, writable=True):
        # MXNet's pickles rebuild with cls(None) and then __setstate__
        if handle is not None:
            raise TypeError('%s is created by mx.nd.sparse functions, not from a handle'
                            % type(self).__name__)
        self._init((0,) * (2 if self._stype == 'csr' else 1), 'float32', current_context(),
                   parts=_empty_parts(self._stype, (0, 0), 'float32', torch.device('cpu')))
        self.writable = writable

    # ---- the two representations ----------------------------------------------------------
    def _init(self, shape, dtype, ctx, parts=None, dense=None):
        self._shape = tuple(int(s) for s in shape)
        self._dtype = torch_dtype(dtype)
        self._ctx = ctx
        self.writable = True
        self._grad = None
        self._parts = parts
        self._dense = dense
        self._dense_stale = dense is None
        self._dense_version = dense._version if dense is not None else None
        return self

    def _get_tensor(self):
        d = self._dense
        if d is None or self._dense_stale:
            built = _parts_to_dense(self._stype, self._shape, self._parts, self._dtype,
                                    self._ctx.torch_device)
            if d is not None and d.shape == built.shape and d.dtype == built.dtype:
                with torch.no_grad():
                    d.copy_(built)
            else:
                d = built
            self._dense, self._dense_stale = d, False
            self._dense_version = d._version
        return d

    def _set_tensor(self, tensor):
        self._dense = tensor
        self._dtype = tensor.dtype
        self._parts = None
        self._dense_stale = False
        self._dense_version = None

    _tensor = property(_get_tensor, _set_tensor)

    def _get_parts(self):
        d = self._dense
        if self._parts is None or (d is not None and not self._dense_stale
                                   and d._version != self._dense_version):
            self._parts = _dense_to_parts(self._stype, d.detach())
            self._dense_version = d._version
        return self._parts

    def _set_parts(self, parts):
        """Replace the compressed parts (the dense form is rebuilt from them when read)."""
        self._parts = tuple(parts)
        self._dtype = parts[0].dtype
        self._dense_stale = True

    # ---- properties ---------------------------------------------------------------------------
    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        raise NotImplementedError('size is ambiguous for a sparse array')

    @property
    def dtype(self):
        return dtype_type(self._dtype)

    @property
    def stype(self):
        return self._stype

    @property
    def data(self):
        """A copy of the stored values."""
        return _wrap(self._get_parts()[0].clone(), self._ctx)

    @property
    def indices(self):
        return _wrap(self._get_parts()[-1].clone(), self._ctx)

    @property
    def _num_aux(self):
        return len(_AUX_NAMES[self._stype])

    @property
    def _aux_types(self):
        return [np_dtype(t.dtype).type for t in self._get_parts()[1:]]

    def _aux_type(self, i):
        return self._aux_types[i]

    def _data(self):
        return self.data

    def _aux_data(self, i):
        return _wrap(self._get_parts()[1 + i].clone(), self._ctx)

    def __repr__(self):
        return '\n<%s %s @%s>' % (type(self).__name__, 'x'.join(str(d) for d in self._shape),
                                  self._ctx)

    __str__ = __repr__

    def __len__(self):
        return self._shape[0]

    def __bool__(self):
        raise ValueError('The truth value of a sparse array is ambiguous.')

    def __iter__(self):
        raise NotImplementedError('iterating over a %s is not supported' % type(self).__name__)

    # ---- conversion and copies ------------------------------------------------------------------
    def asnumpy(self):
        return _wrap(self._tensor, self._ctx).asnumpy()

    def tostype(self, stype):
        if {self._stype, stype} == {'row_sparse', 'csr'}:
            raise ValueError('cast_storage from %s to %s is not supported' % (self._stype, stype))
        return cast_to(self, stype)

    def astype(self, dtype, copy=True):
        if not copy and np.dtype(dtype) == np.dtype(self.dtype):
            return self
        parts = self._get_parts()
        return _new(self._stype, self._shape, self._ctx,
                    (parts[0].to(torch_dtype(dtype), copy=True),) +
                    tuple(p.clone() for p in parts[1:]))

    def copy(self):
        return self.copyto(self._ctx)

    def detach(self):
        return _new(self._stype, self._shape, self._ctx, self._get_parts())

    def copyto(self, other):
        if isinstance(other, Context):
            return _new(self._stype, self._shape, other,
                        tuple(p.to(other.torch_device, copy=True) for p in self._get_parts()))
        if isinstance(other, NDArray):
            if other is self:
                import warnings
                warnings.warn('You are attempting to copy an array to itself', RuntimeWarning)
                return False
            return assign(other, self)
        raise TypeError('copyto does not support type %s' % type(other).__name__)

    def as_in_context(self, context):
        return self if context == self._ctx else self.copyto(context)

    def reshape(self, *shape, **kwargs):
        raise NotImplementedError('reshape is not supported for %s' % type(self).__name__)

    def _at(self, idx):
        raise NotImplementedError('indexing one element is not supported for sparse arrays')

    def _slice(self, start, stop):
        raise NotImplementedError('_slice is not supported for sparse arrays')

    def check_format(self, full_check=True):
        """Raise MXNetError if the compressed parts are not a valid array of this shape."""
        _check_format(self._stype, self._shape, self._get_parts(), full_check)

    def attach_grad(self, grad_req='write', stype=None):
        from .. import autograd
        grad = zeros(stype or self._stype, self._shape, ctx=self._ctx, dtype=self._dtype)
        autograd.mark_variables([self], [grad], grad_req)

    # ---- arithmetic ---------------------------------------------------------------------------
    def __add__(self, other): return add(self, other)
    def __sub__(self, other): return subtract(self, other)
    def __mul__(self, other): return multiply(self, other)
    def __truediv__(self, other): return divide(self, other)
    __div__ = __truediv__

    def __neg__(self):
        from .ndarray import invoke
        return invoke('negative', [self])

    def __iadd__(self, other): return self._inplace_result(self + other)
    def __isub__(self, other): return self._inplace_result(self - other)
    def __imul__(self, other): return self._inplace_result(self * other)
    def __itruediv__(self, other): return self._inplace_result(self / other)
    __idiv__ = __itruediv__

    def _inplace_result(self, result):
        if not self.writable:
            raise ValueError('trying to modify a readonly %s' % type(self).__name__)
        assign(self, result)
        return self

    def _setitem_all(self, key, value):
        if not self.writable:
            raise ValueError('Failed to assign to a readonly %s' % type(self).__name__)
        if not isinstance(key, _py_slice):
            raise TypeError('%s only supports [:] for assignment' % type(self).__name__)
        if key.start is not None or key.stop is not None or key.step is not None:
            raise ValueError('Assignment with slice for %s is not implemented yet.'
                             % type(self).__name__)
        if isinstance(value, NDArray):
            if value is not self:
                assign(self, value)
        elif isinstance(value, numeric_types):
            if self._stype == 'csr':
                raise ValueError('Assigning numeric types to CSRNDArray is not implemented yet.')
            assign(self, _wrap(torch.full(self._shape, float(value), dtype=self._dtype,
                                          device=self._ctx.torch_device), self._ctx))
        elif isinstance(value, (np.ndarray, np.generic)):
            assign(self, _dense_array(value, ctx=self._ctx, dtype=self.dtype))
        else:
            raise TypeError('type %s not supported' % type(value).__name__)

    def __reduce__(self):
        return (type(self), (None,), self.__getstate__())

    def __getstate__(self):
        from .serialization import encode_record
        return {'handle': bytearray(encode_record(self))}

    def __setstate__(self, state):
        from .serialization import decode_record
        arr = decode_record(bytes(state['handle']))
        self._init(arr._shape, arr._dtype, arr._ctx, parts=arr._get_parts())


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format: data, indices (columns), indptr."""
    __slots__ = ()
    _stype = 'csr'

    @property
    def indptr(self):
        return _wrap(self._get_parts()[1].clone(), self._ctx)

    def asscipy(self):
        if _spsp is None:
            raise ImportError('scipy could not be imported')
        data, indptr, indices = (t.detach().cpu().numpy() for t in self._get_parts())
        return _spsp.csr_matrix((data, indices, indptr), shape=self._shape, dtype=data.dtype)

    def __getitem__(self, key):
        from .ndarray import invoke
        if isinstance(key, int):
            begin = self._shape[0] - 1 if key == -1 else key
            return invoke('slice', [self], begin=(begin,), end=(begin + 1,))
        if isinstance(key, _py_slice):
            if key.step is not None:
                raise ValueError('CSRNDArray only supports continuous slicing on axis 0')
            if key.start is None and key.stop is None:
                return self
            return invoke('slice', [self], begin=(key.start or 0,),
                          end=(key.stop or self._shape[0],))
        if isinstance(key, tuple):
            raise ValueError('Multi-dimension indexing is not supported')
        raise ValueError('Undefined behaviour for {}'.format(key))

    __setitem__ = BaseSparseNDArray._setitem_all


class RowSparseNDArray(BaseSparseNDArray):
    """An array of which only some rows (first axis) are stored: data, indices (row ids)."""
    __slots__ = ()
    _stype = 'row_sparse'

    def __getitem__(self, key):
        if isinstance(key, int):
            raise Exception('__getitem__ with int key is not implemented for RowSparseNDArray yet')
        if isinstance(key, _py_slice):
            if key.start is not None or key.stop is not None or key.step is not None:
                raise Exception('RowSparseNDArray only supports [:] for __getitem__')
            return self
        if isinstance(key, tuple):
            raise ValueError('Multi-dimension indexing is not supported')
        raise ValueError('Undefined behaviour for {}'.format(key))

    __setitem__ = BaseSparseNDArray._setitem_all

    def retain(self, *args, **kwargs):
        from .ndarray import invoke
        return invoke('_sparse_retain', [self] + list(args), **kwargs)


_CLASSES = {'csr': CSRNDArray, 'row_sparse': RowSparseNDArray}


# ---------------------------------------------------------------------------------------------
# Converting between the representations
# ---------------------------------------------------------------------------------------------
def _parts_to_dense(stype, shape, parts, dtype, device):
    dense = torch.zeros(shape, dtype=dtype, device=device)
    if stype == 'row_sparse':
        data, idx = parts
        if idx.numel():
            dense[idx.long()] = data.to(device, dtype)
    else:
        data, indptr, idx = parts
        if idx.numel():
            counts = (indptr[1:] - indptr[:-1]).long()
            rows = torch.repeat_interleave(torch.arange(shape[0], device=device), counts.to(device))
            dense[rows, idx.long().to(device)] = data.to(device, dtype)
    return dense


def _dense_to_parts(stype, dense):
    if stype == 'row_sparse':
        if dense.dim() == 0:
            raise MXNetError('row_sparse needs at least one axis')
        rows = dense.reshape(dense.shape[0], -1).ne(0).any(1).nonzero().reshape(-1)
        return dense[rows].clone(), rows.to(torch.int64)
    if dense.dim() != 2:
        raise MXNetError('csr storage needs a 2-D array, got shape %s' % (tuple(dense.shape),))
    nz = dense.ne(0).nonzero()
    counts = torch.bincount(nz[:, 0], minlength=dense.shape[0])
    indptr = torch.zeros(dense.shape[0] + 1, dtype=torch.int64, device=dense.device)
    indptr[1:] = torch.cumsum(counts, 0)
    return dense[nz[:, 0], nz[:, 1]].clone(), indptr, nz[:, 1].to(torch.int64)


def _new(stype, shape, ctx, parts=None, dense=None, dtype=None):
    if dtype is None:
        dtype = parts[0].dtype if parts is not None else dense.dtype
    arr = _CLASSES[stype].__new__(_CLASSES[stype])
    return arr._init(shape, dtype, ctx, parts=parts, dense=dense)


def from_dense_tensor(stype, tensor, ctx):
    """An array of storage `stype` holding the values of a dense tensor (its non-zeros)."""
    if stype == 'default':
        return _wrap(tensor, ctx)
    parts = _dense_to_parts(stype, tensor.detach())
    # a result recorded by autograd keeps its graph: its dense form is the recorded tensor
    return _new(stype, tuple(tensor.shape), ctx, parts=parts,
                dense=tensor if tensor.requires_grad else None)


def cast_to(arr, stype):
    """`arr` in storage `stype` (a new array; the same values)."""
    if stype not in STYPE_CODES:
        raise MXNetError("cast_storage: unknown stype '%s' (default, row_sparse or csr)" % stype)
    if stype == 'default':
        return _wrap(arr._tensor.detach().clone(), arr._ctx)
    if stype == 'csr' and len(arr.shape) != 2:
        raise ValueError('To convert to a CSR, the NDArray should be 2 Dimensional. Current '
                         'shape is %s' % (arr.shape,))
    if stype == getattr(arr, '_stype', None):
        return _new(stype, arr.shape, arr._ctx, parts=tuple(p.clone() for p in arr._get_parts()))
    return from_dense_tensor(stype, arr._tensor, arr._ctx)


def assign(target, source):
    """Copy the values of `source` into `target` (either may be sparse); returns target."""
    if target.shape != source.shape:
        raise ValueError('copyto: shape mismatch, target has %s, source has %s'
                         % (target.shape, source.shape))
    device = target._ctx.torch_device
    if isinstance(target, BaseSparseNDArray):
        if getattr(source, '_stype', None) == target._stype:
            parts = source._get_parts()
            target._set_parts((parts[0].to(device, target._dtype, copy=True),) +
                              tuple(p.to(device, copy=True) for p in parts[1:]))
        else:
            dense = source._tensor.detach().to(device, target._dtype)
            target._set_parts(_dense_to_parts(target._stype, dense))
        return target
    with torch.no_grad():
        target._tensor.copy_(source._tensor)
    return target


def _check_format(stype, shape, parts, full_check):
    def bad(msg):
        raise MXNetError('check_format: %s' % msg)
    if stype == 'row_sparse':
        data, idx = parts
        if data.shape[0] != idx.shape[0]:
            bad('row_sparse has %d data rows but %d indices' % (data.shape[0], idx.shape[0]))
        if full_check and idx.numel():
            if (idx < 0).any() or (idx >= shape[0]).any():
                bad('row_sparse indices out of range')
            if (idx[1:] <= idx[:-1]).any():
                bad('row_sparse indices are not sorted in ascending order')
        return
    data, indptr, idx = parts
    if indptr.shape[0] != shape[0] + 1:
        bad('csr indptr has %d entries for %d rows' % (indptr.shape[0], shape[0]))
    if idx.shape[0] != data.shape[0]:
        bad('csr indices and data have different lengths')
    if full_check:
        if int(indptr[0]) != 0 or int(indptr[-1]) != idx.shape[0] or (indptr[1:] < indptr[:-1]).any():
            bad('csr indptr is not a valid non-decreasing offset array')
        if idx.numel() and ((idx < 0).any() or (idx >= shape[1]).any()):
            bad('csr column indices out of range')
        for r in range(shape[0]):
            row = idx[int(indptr[r]):int(indptr[r + 1])]
            if row.numel() > 1 and (row[1:] <= row[:-1]).any():
                bad('csr column indices of a row are not sorted/unique')


# ---------------------------------------------------------------------------------------------
# Creation
# ---------------------------------------------------------------------------------------------
def _default_dtype_of(src, dtype):
    if dtype is not None:
        return dtype
    if isinstance(src, (NDArray, np.ndarray)) or (_spsp is not None and _spsp.issparse(src)):
        return src.dtype
    return default_dtype


def _as_tensor(x, dtype, device):
    if isinstance(x, NDArray):
        return x._tensor.detach().to(device, torch_dtype(dtype), copy=True)
    try:
        a = np.array(x, dtype=np_dtype(dtype))
    except (TypeError, ValueError):
        raise TypeError('values must be array like object') from None
    return torch.from_numpy(a).to(device)


def _check_shape(s1, s2):
    if s1 and s2 and tuple(s1) != tuple(s2):
        raise ValueError('Shape mismatch detected. %s v.s. %s' % (tuple(s1), tuple(s2)))


def _from_source(stype, source, shape, ctx, dtype):
    if _spsp is not None and _spsp.issparse(source):
        if stype != 'csr':
            raise ValueError('Unexpected input type: a scipy sparse matrix for row_sparse')
        csr = source.tocsr(copy=True)
        csr.sum_duplicates()          # canonical: duplicates summed, indices sorted
        _check_shape(csr.shape, shape)
        return _csr_from_definition(csr.data, csr.indices, csr.indptr, csr.shape, ctx,
                                    dtype if dtype is not None else csr.dtype)
    if isinstance(source, BaseSparseNDArray):
        if source.stype != stype:
            raise ValueError('Unexpected input type: %s' % type(source).__name__)
        _check_shape(source.shape, shape)
        ctx = ctx or source.context
        out = source.copyto(ctx)
        return out if dtype is None else out.astype(dtype, copy=False)
    dtype = _default_dtype_of(source, dtype)
    dense = _dense_array(source, dtype=dtype)
    if ctx is not None and dense.context != ctx:
        dense = dense.as_in_context(ctx)
    _check_shape(dense.shape, shape)
    return cast_to(dense, stype)


def csr_matrix(arg1, shape=None, ctx=None, dtype=None):
    """A CSRNDArray from (data, indices, indptr), (data, (row, col)), a shape (M, N), a scipy
    sparse matrix, a CSRNDArray or a dense array."""
    if isinstance(arg1, tuple):
        if len(arg1) == 2:
            if isinstance(arg1[1], tuple) and len(arg1[1]) == 2:
                data, (row, col) = (arg1[0], arg1[1])
                data, row, col = (x.asnumpy() if isinstance(x, NDArray) else x
                                  for x in (data, row, col))
                coo = _spsp.coo_matrix((data, (row, col)), shape=shape)
                _check_shape(coo.shape, shape)
                return _from_source('csr', coo.tocsr(), None, ctx, dtype)
            _check_shape(arg1, shape)
            return empty('csr', arg1, ctx=ctx, dtype=dtype)
        if len(arg1) == 3:
            return _csr_from_definition(arg1[0], arg1[1], arg1[2], shape, ctx, dtype)
        raise ValueError('Unexpected length of input tuple: %d' % len(arg1))
    if isinstance(arg1, RowSparseNDArray):
        raise ValueError('Unexpected input type: RowSparseNDArray')
    return _from_source('csr', arg1, shape, ctx, dtype)


def _csr_from_definition(data, indices, indptr, shape=None, ctx=None, dtype=None,
                         indices_type=None, indptr_type=None):
    ctx = ctx or current_context()
    dtype = _default_dtype_of(data, dtype)
    device = ctx.torch_device
    data = _as_tensor(data, dtype, device)
    indptr = _as_tensor(indptr, indptr_type or np.int64, device)
    indices = _as_tensor(indices, indices_type or np.int64, device)
    if shape is None:
        if indices.shape[0] == 0:
            raise ValueError('invalid shape')
        shape = (indptr.shape[0] - 1, int(indices.max()) + 1)
    if data.dim() != 1 or indptr.dim() != 1 or indices.dim() != 1 or \
            indptr.shape[0] == 0 or len(shape) != 2:
        raise ValueError('invalid shape')
    return _new('csr', shape, ctx, parts=(data, indptr, indices))


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None):
    """A RowSparseNDArray from (data, indices), a shape, a RowSparseNDArray or a dense array."""
    if isinstance(arg1, tuple):
        if len(arg1) < 2:
            raise ValueError('Unexpected length of input tuple: %d' % len(arg1))
        if len(arg1) > 2 or all(isinstance(a, (int, np.integer)) for a in arg1):
            _check_shape(arg1, shape)
            return empty('row_sparse', arg1, ctx=ctx, dtype=dtype)
        return _rsp_from_definition(arg1[0], arg1[1], shape, ctx, dtype)
    if isinstance(arg1, CSRNDArray):
        raise ValueError('Unexpected input type: CSRNDArray')
    return _from_source('row_sparse', arg1, shape, ctx, dtype)


def _rsp_from_definition(data, indices, shape=None, ctx=None, dtype=None, indices_type=None):
    ctx = ctx or current_context()
    dtype = _default_dtype_of(data, dtype)
    device = ctx.torch_device
    data = _as_tensor(data, dtype, device)
    indices = _as_tensor(indices, indices_type or np.int64, device)
    if shape is None:
        if indices.shape[0] == 0:
            raise ValueError('invalid shape')
        shape = (int(indices[-1]) + 1,) + tuple(data.shape[1:])
    shape = tuple(shape)
    if data.dim() != len(shape) or indices.dim() != 1 or int(np.prod(shape[1:])) == 0:
        raise ValueError('invalid shape')
    return _new('row_sparse', shape, ctx, parts=(data, indices))


def _empty_parts(stype, shape, dtype, device):
    data = torch.zeros((0,) + tuple(shape[1:]) if stype == 'row_sparse' else (0,),
                       dtype=torch_dtype(dtype), device=device)
    idx = torch.zeros(0, dtype=torch.int64, device=device)
    if stype == 'row_sparse':
        return data, idx
    return data, torch.zeros(shape[0] + 1, dtype=torch.int64, device=device), idx


def zeros(stype, shape, ctx=None, dtype=None, **kwargs):
    """An all-zero array of storage `stype` (nothing stored)."""
    from .ndarray import zeros as dense_zeros
    if isinstance(shape, int):
        shape = (shape,)
    ctx = ctx or current_context()
    dtype = dtype or default_dtype
    if stype == 'default':
        return dense_zeros(shape, ctx=ctx, dtype=dtype)
    if stype not in _CLASSES:
        raise ValueError("zeros: unknown stype '%s' (default, row_sparse or csr)" % stype)
    if stype == 'csr' and len(shape) != 2:
        raise MXNetError('zeros: csr storage needs a 2-D shape, got %s' % (tuple(shape),))
    return _new(stype, shape, ctx, parts=_empty_parts(stype, shape, dtype, ctx.torch_device))


def empty(stype, shape, ctx=None, dtype=None):
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def array(source_array, ctx=None, dtype=None):
    """A sparse array copied from a CSRNDArray, RowSparseNDArray or scipy sparse matrix."""
    if isinstance(source_array, BaseSparseNDArray):
        return _from_source(source_array.stype, source_array, None, ctx, dtype)
    if _spsp is not None and _spsp.issparse(source_array):
        return _from_source('csr', source_array, None, ctx, dtype)
    if isinstance(source_array, NDArray):
        raise ValueError('Unexpected source_array type: a dense NDArray; use tostype')
    raise ValueError('Unexpected source_array type: %s' % type(source_array).__name__)


# ---------------------------------------------------------------------------------------------
# Arithmetic with MXNet's choice between element-wise and broadcast operators
# ---------------------------------------------------------------------------------------------
def _arith(lhs, rhs, same_shape_op, broadcast_op, scalar_op, rscalar_op):
    from .ndarray import invoke
    if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
        op = same_shape_op if lhs.shape == rhs.shape else broadcast_op
        return invoke(op, [lhs, rhs])
    if isinstance(lhs, NDArray) and isinstance(rhs, numeric_types):
        return invoke(scalar_op, [lhs], scalar=float(rhs))
    if isinstance(rhs, NDArray) and isinstance(lhs, numeric_types):
        return invoke(rscalar_op, [rhs], scalar=float(lhs))
    if isinstance(lhs, NDArray) and isinstance(rhs, np.ndarray):
        return _arith(lhs, _dense_array(rhs, ctx=lhs.context, dtype=lhs.dtype), same_shape_op,
                      broadcast_op, scalar_op, rscalar_op)
    raise TypeError('type %s not supported' % type(rhs).__name__)


def add(lhs, rhs):
    return _arith(lhs, rhs, 'elemwise_add', 'broadcast_add', '_plus_scalar', '_plus_scalar')


def subtract(lhs, rhs):
    return _arith(lhs, rhs, 'elemwise_sub', 'broadcast_sub', '_minus_scalar', '_rminus_scalar')


def multiply(lhs, rhs):
    return _arith(lhs, rhs, 'elemwise_mul', 'broadcast_mul', '_mul_scalar', '_mul_scalar')


def divide(lhs, rhs):
    return _arith(lhs, rhs, 'elemwise_div', 'broadcast_div', '_div_scalar', '_rdiv_scalar')


# ---------------------------------------------------------------------------------------------
# Running operators on sparse inputs
# ---------------------------------------------------------------------------------------------
def stype_of(x):
    return getattr(x, '_stype', None) or 'default'


def invoke_with_storage(op, p, inputs, out=None, ctx=None, train=None):
    """Run `op` where storage types matter: its sparse kernel when it has one for these input
    storage types, else its dense kernel on the dense forms; outputs take the storage types
    the op's rule infers (dense where MXNet falls back to dense)."""
    in_stypes = [stype_of(x) for x in inputs]
    rule = getattr(op, 'infer_storage', None)
    out_stypes = rule(p, in_stypes) if rule is not None else None
    n_visible = op.num_visible_outputs(p)
    if out_stypes is None:
        out_stypes = ['default'] * n_visible
    kernel = getattr(op, 'sparse_forward', None)
    results = kernel(op, p, inputs, out_stypes) if kernel is not None else None
    if results is None:
        dense_inputs = [_wrap(x._tensor, x._ctx) if s != 'default' else x
                        for x, s in zip(inputs, in_stypes)]
        results = invoke_dense(op, p, dense_inputs, ctx=ctx, train=train)
        results = results if isinstance(results, list) else [results]
        results = [r if s == 'default' else from_dense_tensor(s, r._tensor, r._ctx)
                   for r, s in zip(results, out_stypes)]
    if out is not None:
        outs = out if isinstance(out, (list, tuple)) else [out]
        for o, r in zip(outs, results):
            assign(o, r)
        return out
    return results[0] if len(results) == 1 else results


def _install_functions(functions):
    """mx.nd.sparse.<op>: MXNet's `_sparse_<op>` operators (the hand-written ones above win)."""
    from .register import make_function
    from ..ops.registry import get_op
    from ..ops.sparse import sparse_functions
    for short, name in sparse_functions().items():
        globals().setdefault(short, make_function(get_op(name), short))


def set_rows(target, dense, rows):
    """Make row_sparse `target` store exactly `rows` (unique, sorted) of the tensor `dense`."""
    rows = torch.unique(rows.detach().reshape(-1).long()).to(dense.device)
    target._set_parts((dense.detach()[rows].to(target._ctx.torch_device, target._dtype),
                       rows.to(target._ctx.torch_device)))
    return target


# ---------------------------------------------------------------------------------------------
# Executors: sparse arguments and gradients
# ---------------------------------------------------------------------------------------------
def variable_stype(node, stype_dict=None):
    """A variable's storage type: from stype_dict, else its `stype=` attribute."""
    if stype_dict and node.name in stype_dict:
        return stype_dict[node.name]
    code = node.attrs.get('__storage_type__')
    return CODE_STYPES.get(int(code), 'default') if code not in (None, '') else 'default'


def apply_storage_types(order, arg_nodes, arg_arrays, grad_arrays, stype_dict=None):
    """Replace (in the lists) the zero arrays of sparse arguments by sparse zero arrays, and
    the gradient arrays whose consumers give sparse gradients (ops' `grad_storage`) likewise."""
    stypes = {id(n): variable_stype(n, stype_dict) for n in arg_nodes}
    grad_stypes = {}
    for node in order:
        rule = getattr(node.op, 'grad_storage', None) if node.op is not None else None
        if rule is None:
            continue
        in_stypes = [stypes.get(id(src), 'default') for src, _ in node.inputs]
        for (src, _), st in zip(node.inputs, rule(node.params, in_stypes)):
            if id(src) in stypes and st not in (None, 'default'):
                grad_stypes.setdefault(id(src), st)
    for i, node in enumerate(arg_nodes):
        arr = arg_arrays[i]
        if stypes[id(node)] != 'default':
            arg_arrays[i] = zeros(stypes[id(node)], arr.shape, ctx=arr.context, dtype=arr.dtype)
        st = grad_stypes.get(id(node))
        if st is not None and grad_arrays[i] is not None:
            g = grad_arrays[i]
            grad_arrays[i] = zeros(st, g.shape, ctx=g.context, dtype=g.dtype)
