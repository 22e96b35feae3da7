"""Storage types: which operators give sparse outputs for sparse inputs, and the sparse-only ops.

For each operator with sparse support in MXNet 1.9.1, `infer_storage(p, in_stypes)` gives the
output storage types (None: MXNet falls back to dense storage, the output is dense). Values are
computed by the operator's dense kernel on the inputs' dense forms; a `sparse_forward` exists
where MXNet's result keeps rows or elements a dense computation cannot tell apart from zeros
(row_sparse sums keep the union of their inputs' rows, retain keeps the requested stored rows).
The rules mirror what MXNet 1.9.1 reports for each combination on CPU.
"""
import torch

from ..base import MXNetError
from .params import Bool, Float, Int, Shape
from .registry import OpDef, find_op, get_op, register
from .shapes import merge

D, R, C = 'default', 'row_sparse', 'csr'


def _set(names, infer_storage=None, sparse_forward=None):
    for name in names:
        op = find_op(name)
        if op is None:          # not an operator of this build
            continue
        if infer_storage is not None:
            op.infer_storage = infer_storage
        if sparse_forward is not None:
            op.sparse_forward = sparse_forward


# ---------------------------------------------------------------------------------------------
# rules
# ---------------------------------------------------------------------------------------------
def _keep_first(p, st):
    """Unary zero-preserving ops: the input's storage type."""
    return [st[0]]


def _keep_if_zero_stays_zero(opname):
    """Scalar ops that keep sparse storage only when op(0, scalar) == 0 (x + 0, x > 0, ...)."""
    def rule(p, st):
        if st[0] == D:
            return [D]
        zero = get_op(opname).forward(p, torch.zeros(1))
        return [st[0] if float(zero.reshape(-1)[0]) == 0 else D]
    return rule


def _same_sparse(p, st):
    """Binary add-like ops: sparse when both inputs share one sparse storage type."""
    return [st[0]] if st[0] == st[1] else [D]


def _all_rsp(p, st):
    return [R] if all(s == R for s in st) else [D]


def _elemwise_mul(p, st):
    a, b = st
    if a == b:
        return [a]
    if D in st:
        return [a if b == D else b]
    return [D]


def _broadcast_mul(p, st):
    return [C] if st == [C, D] else [D]


def _batch_norm(p, st):
    """Dense fallback, except that MXNet refuses fix_gamma with any sparse input."""
    if p.fix_gamma and any(s != D for s in st):
        raise MXNetError('fix_gamma=True is not supported for sparse ndarrays. Tracked at #11647')
    return None


def _dot(p, st):
    if p.forward_stype is not None:
        return [p.forward_stype]
    a, b = st
    if a == C:
        return [R] if p.transpose_a and not p.transpose_b and b in (D, R) else [D]
    if a == D and b == C:
        return [C] if not p.transpose_a else [D]
    return [D]


def _slice(p, st):
    return [C] if st[0] == C else [D]


def _concat(p, st):
    return [C] if p.dim == 0 and all(s == C for s in st) else [D]


def _square_sum(p, st):
    return [R] if st[0] == R and p.keepdims and p.axis in ((1,), (-1,)) else [D]


# ---------------------------------------------------------------------------------------------
# sparse kernels
# ---------------------------------------------------------------------------------------------
def _rows_union(op, p, inputs, out_stypes):
    """row_sparse result of element-wise sums: the stored rows of every input."""
    if out_stypes != [R]:
        return None
    from ..ndarray.ndarray import _wrap, invoke_dense
    from ..ndarray.sparse import _new
    dense = invoke_dense(op, p, [_wrap(x._tensor, x._ctx) for x in inputs])
    rows = torch.unique(torch.cat([x._get_parts()[1] for x in inputs]))
    t = dense._tensor
    return [_new(R, tuple(t.shape), dense.context, parts=(t.detach()[rows].clone(), rows),
                 dense=t)]


def _recording():
    from .. import autograd
    return autograd.is_recording()


def _on_stored(op, p, inputs, out_stypes):
    """Zero-preserving element-wise ops on a sparse input: computed on the stored values only,
    the result keeping the input's stored rows/elements (as MXNet's sparse kernels: a stored
    element stays stored whatever its new value). Recorded calls take the dense path."""
    x = inputs[0]
    if _recording() or x.stype == D or out_stypes != [x.stype]:
        return None
    from ..ndarray.sparse import _new
    parts = x._get_parts()
    with torch.no_grad():
        values = op.forward(p, parts[0], *[y._tensor for y in inputs[1:]]) \
            if len(inputs) == 1 else None
    if values is None:
        return None
    return [_new(x.stype, x.shape, x.context, parts=(values,) + tuple(parts[1:]))]


def _nothing_stored(op, p, inputs, out_stypes):
    """zeros_like of a sparse array: the same storage type, nothing stored."""
    x = inputs[0]
    if _recording() or x.stype == D:
        return None
    from ..ndarray.sparse import zeros
    return [zeros(x.stype, x.shape, ctx=x.context, dtype=x.dtype)]


def _scatter_div_rule(p, st):
    return [R] if st[0] == R else [D]


def _scatter_div(op, p, inputs, out_stypes):
    """row_sparse lhs: lhs / rhs on the rows lhs stores, and only those rows."""
    if out_stypes != [R] or _recording():
        return None
    from ..ndarray.sparse import _new
    lhs, rhs = inputs
    data, rows = lhs._get_parts()
    with torch.no_grad():
        values = op.forward(p, data, rhs._tensor[rows])
    return [_new(R, lhs.shape, lhs.context, parts=(values, rows))]


# ---------------------------------------------------------------------------------------------
# the sparse-only operators
# ---------------------------------------------------------------------------------------------
def _retain(p, data, indices):
    """Rows of data listed in indices; other rows zero."""
    out = torch.zeros_like(data)
    idx = indices.long().reshape(-1)
    out[idx] = data[idx]
    return out


def _retain_sparse(op, p, inputs, out_stypes):
    """The requested rows (sorted, each once), zero where data stores nothing."""
    from ..ndarray.sparse import _new
    data, indices = inputs
    if data.stype != R:
        raise MXNetError('_sparse_retain: data must be row_sparse, got %s' % data.stype)
    rows = torch.unique(indices._tensor.detach().long().reshape(-1)).to(data.context.torch_device)
    if rows.numel() and (rows[0] < 0 or rows[-1] >= data.shape[0]):
        raise MXNetError('_sparse_retain: indices must be in [0, %d)' % data.shape[0])
    return [_new(R, data.shape, data.context, parts=(data._tensor.detach()[rows].clone(), rows))]


def _square_sum_fwd(p, data):
    """sum(data ** 2) over axis (keepdims as asked)."""
    axis = tuple(p.axis) if p.axis else tuple(range(data.dim()))
    out = (data * data).sum(dim=axis, keepdim=p.keepdims)
    return out.reshape(1) if out.dim() == 0 else out


register(OpDef('_sparse_retain', _retain, inputs=('data', 'indices'),
               infer_shape=lambda p, ins, outs: (ins, [merge(outs[0], ins[0])]),
               infer_type=lambda p, ins, outs: (ins, [ins[0]])))
register(OpDef('_square_sum', _square_sum_fwd,
               params={'axis': Shape(None), 'keepdims': Bool(False), 'exclude': Bool(False)}))

_set(['_sparse_retain'], lambda p, st: [R] if st[0] == R else None, _retain_sparse)
_set(['_square_sum'], _square_sum)
_set(['cast_storage'], lambda p, st: [p.stype])

_set(['_scatter_plus_scalar', '_scatter_minus_scalar'], _keep_first, _on_stored)
_set(['_scatter_elemwise_div'], _scatter_div_rule, _scatter_div)
_set(['abs', 'sign', 'round', 'rint', 'ceil', 'floor', 'trunc', 'fix', 'square', 'sqrt',
      'cbrt', 'expm1', 'log1p', 'sin', 'tan', 'arcsin', 'arctan', 'sinh', 'tanh', 'arcsinh',
      'arctanh', 'degrees', 'radians', 'relu', 'negative', 'zeros_like', 'BlockGrad',
      'make_loss', 'clip', '_copy', '_mul_scalar', '_div_scalar'], _keep_first, _on_stored)
_set(['zeros_like'], sparse_forward=_nothing_stored)
for _name in ('_plus_scalar', '_minus_scalar', '_equal_scalar', '_not_equal_scalar',
              '_greater_scalar', '_greater_equal_scalar', '_lesser_scalar',
              '_lesser_equal_scalar'):
    _set([_name], _keep_if_zero_stays_zero(_name), _on_stored)
for _name in ('elemwise_add', 'elemwise_sub', '_grad_add', '_maximum', '_minimum', '_hypot'):
    _set([_name], _same_sparse)
for _name in ('elemwise_add', 'elemwise_sub', '_grad_add'):
    _set([_name], sparse_forward=_rows_union)
_set(['add_n'], _all_rsp, _rows_union)
_set(['elemwise_mul'], _elemwise_mul)
_set(['broadcast_mul', 'broadcast_div'], _broadcast_mul)
_set(['dot'], _dot)
_set(['BatchNorm'], _batch_norm)
_set(['slice'], _slice)
_set(['Concat'], _concat)


# ---------------------------------------------------------------------------------------------
# contrib ops with sparse behaviour: quadratic, getnnz, SparseEmbedding
# ---------------------------------------------------------------------------------------------
def _quadratic(p, data):
    """a * x**2 + b * x + c, element-wise."""
    return p.a * data * data + p.b * data + p.c


def _getnnz(p, data):
    """Number of non-zeros: all (axis None) or per row (axis 1), as int64."""
    nz = data.ne(0)
    if p.axis is None:
        return nz.sum().reshape(1).to(torch.int64)
    if p.axis in (1, -1):
        return nz.sum(1).to(torch.int64)
    raise MXNetError('getnnz with axis = %d is not supported yet' % p.axis)


def _getnnz_sparse(op, p, inputs, out_stypes):
    """Counts of the stored elements of a csr array (explicit zeros count, as in MXNet)."""
    from ..ndarray.ndarray import _wrap
    data = inputs[0]
    if data.stype != C:
        raise MXNetError('getnnz: data must be csr, got %s' % data.stype)
    indptr = data._get_parts()[1]
    if p.axis is None:
        return [_wrap(indptr[-1:].clone().to(torch.int64), data.context)]
    if p.axis in (1, -1):
        return [_wrap((indptr[1:] - indptr[:-1]).to(torch.int64), data.context)]
    raise MXNetError('getnnz with axis = %d is not supported yet' % p.axis)


register(OpDef('_contrib_quadratic', _quadratic,
               params={'a': Float(0.0), 'b': Float(0.0), 'c': Float(0.0)}))
register(OpDef('_contrib_getnnz', _getnnz, params={'axis': Int(None)},
               infer_type=lambda p, ins, outs: (ins, [__import__('numpy').dtype('int64')])))
_set(['_contrib_quadratic'], lambda p, st: [st[0] if p.c == 0 else D])
_set(['_contrib_getnnz'], lambda p, st: [D], _getnnz_sparse)


def _register_sparse_embedding():
    from .nn import _embedding, _embedding_shape, _embedding_type
    embedding = get_op('Embedding')
    params = dict(embedding.params, deterministic=Bool(False))
    params.pop('sparse_grad', None)
    register(OpDef('_contrib_SparseEmbedding', _embedding, params=params,
                   inputs=('data', 'weight'), infer_shape=_embedding_shape,
                   infer_type=_embedding_type))


_register_sparse_embedding()

# gradients an executor stores sparse (MXNet's backward storage inference)
get_op('Embedding').grad_storage = lambda p, st: [None, R if p.sparse_grad else None]
get_op('_contrib_SparseEmbedding').grad_storage = lambda p, st: [None, R]
get_op('dot').grad_storage = \
    lambda p, st: [None, R if st[0] == C and not p.transpose_a else None]
_set(['take'], lambda p, st: [C] if st[0] == C and p.axis == 0 and st[1] == D else None)
