"""Storage types: which operators give sparse outputs for sparse inputs, and the sparse-only ops.

For each operator with sparse support in MXNet 1.9.1, `infer_storage(p, in_stypes)` gives the
output storage types (None: MXNet falls back to dense storage, the output is dense). Values are
computed by the operator's dense kernel on the inputs' dense forms; a `sparse_forward` exists
where MXNet's result keeps rows or elements a dense computation cannot tell apart from zeros
(row_sparse sums keep the union of their inputs' rows, retain keeps the requested stored rows).
The rules mirror what MXNet 1.9.1 reports for each combination on CPU.
"""
import contextlib
import threading
import warnings

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


def _not_implemented(name, st):
    return MXNetError('Check failed: infer_stype_success: Operator not implemented: operator = '
                      '%s, input storage types = [%s]' % (name, ', '.join(st)))


def _clip(p, st):
    """Sparse storage kept where clipping keeps zero at zero; otherwise MXNet has no kernel."""
    if st[0] == D:
        return [D]
    if not p.a_min <= 0 <= p.a_max:
        raise _not_implemented('clip', st)
    return [st[0]]


def _cast_storage(p, st):
    if {st[0], p.stype} == {R, C}:
        raise _not_implemented('cast_storage', st)
    return [p.stype]


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
def _stored_rows(x):
    return x._get_parts()[-1].long() if x.stype == R else None


def _stored_mask(x, device):
    """Where a csr array stores elements (explicit zeros included), as a bool tensor."""
    from ..ndarray.sparse import _parts_to_dense
    data, indptr, idx = x._get_parts()
    return _parts_to_dense(C, x.shape, (torch.ones_like(data, dtype=torch.bool), indptr, idx),
                           torch.bool, device)


def _structured_result(stype, t, ctx, rows=None, mask=None):
    """A sparse array of the dense result `t` storing exactly `rows` (row_sparse) or the
    elements of `mask` (csr), whatever their values; elsewhere it is zero."""
    from ..ndarray.sparse import _new
    if stype == R:
        rows = torch.unique(rows.to(t.device))
        keep = torch.zeros(t.shape[0], dtype=torch.bool, device=t.device)
        keep[rows] = True
        keep = keep.reshape((-1,) + (1,) * (t.dim() - 1))
        parts = (t.detach()[rows].clone(), rows)
    else:
        keep = mask
        nz = mask.nonzero()
        indptr = torch.zeros(t.shape[0] + 1, dtype=torch.int64, device=t.device)
        indptr[1:] = torch.cumsum(torch.bincount(nz[:, 0], minlength=t.shape[0]), 0)
        parts = (t.detach()[mask].clone(), indptr, nz[:, 1].to(torch.int64))
    dense = torch.where(keep, t, torch.zeros((), dtype=t.dtype, device=t.device))
    return _new(stype, tuple(t.shape), ctx, parts=parts,
                dense=dense if dense.requires_grad else None)


def _structured(rows=None, mask=None):
    """A sparse kernel: values from the dense kernel, stored rows/elements as MXNet's sparse
    kernel stores them: rows(p, inputs) for a row_sparse result, mask(op, p, inputs, device)
    for a csr one."""
    def kernel(op, p, inputs, out_stypes):
        if len(out_stypes) != 1 or out_stypes[0] == D:
            return None
        from ..ndarray.ndarray import _wrap, invoke_dense
        device = inputs[0].context.torch_device
        find = rows if out_stypes[0] == R else mask
        stored = None if find is None else \
            find(p, inputs) if out_stypes[0] == R else find(op, p, inputs, device)
        if stored is None:          # (forward_stype asked for it): the non-zeros are stored
            return None
        dense = invoke_dense(op, p, [_wrap(x._tensor, x._ctx) for x in inputs])
        if out_stypes[0] == R:
            return [_structured_result(R, dense._tensor, dense.context, rows=stored)]
        return [_structured_result(C, dense._tensor, dense.context, mask=stored)]
    kernel.declines_dense = True      # None for dense outputs: the dense kernel computes them
    return kernel


def _union_rows(p, inputs):
    return torch.cat([_stored_rows(x) for x in inputs if x.stype == R])


def _union_mask(op, p, inputs, device):
    return torch.stack([_stored_mask(x, device) for x in inputs if x.stype == C]).any(0)


def _common_mask(op, p, inputs, device):
    return torch.stack([_stored_mask(x, device) for x in inputs if x.stype == C]).all(0)


def _op_on_mask(op, p, inputs, device):
    """The structure the op gives when run on its inputs' structures (slice, concat)."""
    return op.forward(p, *[_stored_mask(x, device).to(torch.float32) for x in inputs]) != 0


def _csr_used_columns(op, p, inputs, device):
    """dot(dense, csr): every row of the result stores the columns the csr operand reaches
    (its stored column indices; with transpose_b, its rows that store anything)."""
    a, b = inputs
    if a.stype != D or b.stype != C or p.transpose_a:
        return None
    data, indptr, idx = b._get_parts()
    m = a.shape[1] if p.transpose_a else a.shape[0]
    n = b.shape[0] if p.transpose_b else b.shape[1]
    used = torch.zeros(n, dtype=torch.bool, device=device)
    if p.transpose_b:
        used[:] = (indptr[1:] > indptr[:-1]).to(device)
    else:
        used[idx.long().to(device)] = True
    return used.reshape(1, n).expand(m, n)


def _csr_columns(p, inputs):
    """dot(csr.T, x): the rows of the result are the csr's stored column indices."""
    a = inputs[0]
    return a._get_parts()[2] if a.stype == C and p.transpose_a else None


def _csr_dense_dot(other):
    """dot(csr, dense) with a dense result: a sparse matrix product on the csr array's parts
    (its dense form unbuilt), recorded by autograd for the dense operand's gradient; other
    combinations go to `other` (in a bound graph keeping gradients: to the dense kernel).
    In a bound graph the csr operand gets no gradient (MXNet's executor writes zeros)."""
    def kernel(op, p, inputs, out_stypes):
        a, b = inputs
        graph = getattr(_GRAPH, 'grad', None)
        if a.stype != C or b.stype not in (D, R) or out_stypes != [D] or p.transpose_a or \
                p.transpose_b or p.forward_stype is not None or a.dtype != b.dtype or \
                not b._tensor.dtype.is_floating_point or b.ndim != 2 or \
                (graph is None and (a._grad is not None or
                                    (a._dense is not None and a._dense.requires_grad))):
            return None if graph else other(op, p, inputs, out_stypes)
        from ..ndarray.ndarray import _wrap
        data, indptr, idx = a._get_parts()
        w = b._tensor
        with torch.set_grad_enabled(_recording()):
            rows = getattr(_GRAPH, 'row_grads', {}).get(id(w)) if w.requires_grad else None
            if rows is None and w.requires_grad and getattr(w, '_mx_row_grad', False):
                rows = []       # an mx.autograd variable whose gradient array is row_sparse
            if rows is not None:
                return [_wrap(_CsrDotRows.apply(w, data, indptr, idx, a.shape, rows),
                              b.context)]
            return [_wrap(torch.sparse.mm(_torch_csr(data, indptr, idx, a.shape, w), w),
                          b.context)]
    kernel.declines_dense = other.declines_dense
    kernel.differentiable = True
    return kernel


def _torch_csr(data, indptr, idx, shape, like):
    with warnings.catch_warnings():      # torch's "csr support is in beta" notice
        warnings.simplefilter('ignore')
        return torch.sparse_csr_tensor(indptr.long().to(like.device), idx.long().to(like.device),
                                       data.to(like.device), shape, check_invariants=False)


class _CsrDotRows(torch.autograd.Function):
    """csr x w, whose gradient of w is a sparse COO tensor of the rows the csr array's stored
    columns name (each once, stored zeros included), computed from the stored elements only;
    those rows are added to the list `stored` too (other gradients of w may add up to dense)."""

    @staticmethod
    def forward(ctx, w, data, indptr, idx, shape, stored):
        ctx.save_for_backward(data, indptr, idx)
        ctx.w_shape, ctx.stored = tuple(w.shape), stored
        return torch.sparse.mm(_torch_csr(data, indptr, idx, shape, w), w)

    @staticmethod
    def backward(ctx, grad):
        data, indptr, idx = ctx.saved_tensors
        device = grad.device
        idx = idx.long().to(device)
        used = torch.zeros(ctx.w_shape[0], dtype=torch.bool, device=device)
        used[idx] = True                 # (a mask over w's rows: cheaper than sorting idx)
        rows = used.nonzero().reshape(-1)
        where = (torch.cumsum(used, 0) - 1)[idx]
        ctx.stored.append(rows)
        owner = torch.repeat_interleave(torch.arange(len(indptr) - 1, device=device),
                                        (indptr[1:] - indptr[:-1]).long().to(device))
        # the csr's transpose over the used rows only, times the output's gradient
        compact = torch.sparse_coo_tensor(torch.stack([where, owner]),
                                          data.to(device, grad.dtype), (len(rows), grad.shape[0]),
                                          check_invariants=False)
        values = torch.sparse.mm(compact, grad)
        g = torch.sparse_coo_tensor(rows.reshape(1, -1), values, ctx.w_shape,
                                    check_invariants=False, is_coalesced=True)
        return g, None, None, None, None, None


_rows_union = _structured(rows=_union_rows, mask=_union_mask)


_GRAPH = threading.local()     # .grad: set while a bound graph's step runs a kernel


@contextlib.contextmanager
def bound_graph(grad, row_grads=None):
    """A bound executor's step running a kernel: torch's grad mode there (`grad`), not
    mx.autograd's recording, decides whether kernels keep the graph; the leaves whose ids key
    `row_grads` (arguments with row_sparse gradient arrays) get their gradients from
    dot(csr, dense) as sparse rows, the csr operand's stored columns, as MXNet's backward,
    each backward adding the rows it stores to the leaf's list there. mx.autograd records
    nothing meanwhile (the executor's graph is torch's)."""
    from .. import autograd
    saved = getattr(_GRAPH, 'grad', None), getattr(_GRAPH, 'row_grads', {})
    _GRAPH.grad, _GRAPH.row_grads = grad, row_grads or {}
    was_recording = autograd.set_recording(False)
    try:
        yield
    finally:
        _GRAPH.grad, _GRAPH.row_grads = saved
        autograd.set_recording(was_recording)


def _recording():
    grad = getattr(_GRAPH, 'grad', None)
    if grad is not None:
        return grad
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


# kernels that return None for dense inputs and outputs (the dense kernel then computes them)
_on_stored.declines_dense = _nothing_stored.declines_dense = True


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


_scatter_div.declines_dense = True


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
_set(['_square_sum'], _square_sum, _structured(rows=lambda p, xs: _stored_rows(xs[0])))

_set(['_scatter_plus_scalar', '_scatter_minus_scalar'], _keep_first, _on_stored)
_set(['_scatter_elemwise_div'], _scatter_div_rule, _scatter_div)
_set(['abs', 'sign', 'round', 'rint', 'ceil', 'floor', 'trunc', 'fix', 'square', 'sqrt',
      'cbrt', 'expm1', 'log1p', 'sin', 'tan', 'arcsin', 'arctan', 'sinh', 'tanh', 'arcsinh',
      'arctanh', 'degrees', 'radians', 'relu', 'negative', 'zeros_like', 'BlockGrad',
      'make_loss', 'clip', '_copy', '_mul_scalar', '_div_scalar', '_contrib_round_ste',
      '_contrib_sign_ste'], _keep_first, _on_stored)
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
_set(['elemwise_mul'], _elemwise_mul, _structured(rows=_union_rows, mask=_common_mask))
_set(['broadcast_mul', 'broadcast_div'], _broadcast_mul, _structured(mask=_common_mask))
_set(['dot'], _dot, _csr_dense_dot(_structured(rows=_csr_columns, mask=_csr_used_columns)))
_set(['BatchNorm'], _batch_norm)
_set(['slice'], _slice, _structured(mask=_op_on_mask))
_set(['Concat'], _concat, _structured(mask=_op_on_mask))
_set(['clip'], _clip)
_set(['cast_storage'], _cast_storage)


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


# ---------------------------------------------------------------------------------------------
# MXNet's `_sparse_*` names: the operators with sparse kernels under a second name (mx.nd.sparse
# and mx.sym.sparse hold them under the short name, `_sparse_abs` as sparse.abs)
# ---------------------------------------------------------------------------------------------
from . import sparse_updates  # noqa: E402,F401  (lazy row_sparse updates, _sparse_adagrad_update)
from .registry import add_alias, all_ops  # noqa: E402

SPARSE_NAMES = (
    'ElementWiseSum', 'Embedding', 'FullyConnected', 'LinearRegressionOutput',
    'LogisticRegressionOutput', 'MAERegressionOutput', '_contrib_round_ste', '_contrib_sign_ste',
    'abs', 'adagrad_update', 'adam_update', 'add_n', 'arccos', 'arccosh', 'arcsin', 'arcsinh',
    'arctan', 'arctanh', 'broadcast_add', 'broadcast_div', 'broadcast_minus', 'broadcast_mul',
    'broadcast_plus', 'broadcast_sub', 'cast_storage', 'cbrt', 'ceil', 'clip', 'concat', 'cos',
    'cosh', 'degrees', 'dot', 'elemwise_add', 'elemwise_div', 'elemwise_mul', 'elemwise_sub',
    'exp', 'expm1', 'fix', 'floor', 'ftrl_update', 'gamma', 'gammaln', 'log', 'log10', 'log1p',
    'log2', 'make_loss', 'mean', 'negative', 'norm', 'radians', 'relu', 'retain', 'rint',
    'round', 'rsqrt', 'sgd_mom_update', 'sgd_update', 'sigmoid', 'sign', 'sin', 'sinh', 'slice',
    'sqrt', 'square', 'stop_gradient', 'sum', 'tan', 'tanh', 'trunc', 'where', 'zeros_like')

for _short in SPARSE_NAMES:
    if find_op('_sparse_' + _short) is None:
        add_alias('_sparse_' + _short, get_op(_short))


def sparse_functions():
    """{short name: operator name} of mx.nd.sparse / mx.sym.sparse."""
    return {name[len('_sparse_'):]: name for name in all_ops() if name.startswith('_sparse_')}
