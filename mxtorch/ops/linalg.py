"""Linear algebra (`_linalg_*`, as mx.nd.linalg.* / mx.sym.linalg.* and linalg_*: gemm, gemm2,
potrf, potri, trmm, trsm, sumlogdiag, syrk, gelqf, syevd, inverse, det, slogdet, extractdiag,
makediag, extracttrian, maketrian) and a few array operators:
moments, cumsum, khatri_rao, ravel_multi_index, unravel_index, histogram, softmax_cross_entropy.

The linalg operators work on batches of matrices: the last two axes hold the matrices (gemm and
gemm2 can take the row axis elsewhere, `axis`), every leading axis is a batch axis and must
agree between inputs. They take float32 and float64 only. A result with one value per matrix
has the batch shape, or (1,) for a single matrix. Gradients are torch autograd's, which agree
with MXNet's: potri, trmm and trsm read only one triangle of A, whose other triangle gets zero
gradient; potrf and syevd (which read the lower triangle too) get a symmetric gradient.

Shape checks are shared by inference and the forward: each operator has a `shapes` function of
the complete input shapes that returns the output shapes or raises naming the operator, what
was expected and what was given.
"""
import ast
import math

import torch

from ..base import MXNetError, np_dtype, torch_dtype
from .params import Bool, DType, Float, Int, Param, Shape
from .reduce import normalize_axis, reduce_axes, reduced_shape
from .registry import OpDef, register
from .shapes import ShapeError, first, fmt, known, merge

_FLOATS = ('float32', 'float64')


def _fail(name, message, *args):
    raise MXNetError('%s: %s' % (name, message % args if args else message))


# ---------------------------------------------------------------------------------------------
# Shared rules
# ---------------------------------------------------------------------------------------------
def _matrices(name, shape, what='A'):
    if len(shape) < 2:
        _fail(name, 'input %s must be a tensor of matrices (at least 2 dimensions), got shape %s',
              what, fmt(shape))


def _square(name, shape, what='A'):
    _matrices(name, shape, what)
    if shape[-1] != shape[-2]:
        _fail(name, 'input %s must be a tensor of square matrices (last two dimensions equal), '
              'got shape %s', what, fmt(shape))
    return shape[-1]


def _same_batch(name, shapes_by_name, skip=(-2, -1)):
    """Leading (batch) axes of all inputs agree; `skip` are the matrix axes of each input."""
    items = list(shapes_by_name.items())
    ref_name, ref = items[0]
    for other_name, other in items[1:]:
        if len(other) != len(ref):
            _fail(name, 'inputs %s %s and %s %s must have the same number of dimensions',
                  ref_name, fmt(ref), other_name, fmt(other))
        nd = len(ref)
        axes = {a % nd for a in skip}
        if any(ref[d] != other[d] for d in range(nd) if d not in axes):
            _fail(name, 'inputs %s %s and %s %s must have the same shape except on the matrix '
                  'axes', ref_name, fmt(ref), other_name, fmt(other))


def _per_matrix(shape):
    """Shape of one value per matrix: the batch shape, or (1,) for a single matrix."""
    return tuple(shape[:-2]) or (1,)


def _scalar_per_matrix(tensor):
    return tensor.reshape(1) if tensor.dim() == 0 else tensor


def _float_types(name):
    def rule(p, ins, outs):
        t = first(*(list(ins) + list(outs)))
        if t is not None and np_dtype(t).name not in _FLOATS:
            raise MXNetError('%s: this operation only supports 32-bit and 64-bit floating point '
                             '(float32, float64), got %s' % (name, np_dtype(t).name))
        for x in list(ins) + list(outs):
            if x is not None and t is not None and np_dtype(x) != np_dtype(t):
                raise ShapeError('dtype mismatch: expected %s, got %s'
                                 % (np_dtype(t).name, np_dtype(x).name))
        return [t] * len(ins), [t] * len(outs)
    return rule


def _check_float(name, tensors):
    for t in tensors:
        if t.dtype not in (torch.float32, torch.float64):
            raise MXNetError('%s: this operation only supports 32-bit and 64-bit floating point '
                             '(float32, float64), got %s' % (name, str(t.dtype)[6:]))
    if len({t.dtype for t in tensors}) > 1:
        raise MXNetError('%s: all inputs must have one dtype, got %s'
                         % (name, ', '.join(str(t.dtype)[6:] for t in tensors)))


def _shape_rule(shapes, same_as=None, required=None):
    """An infer_shape rule from `shapes(p, *complete input shapes) -> output shapes`.

    same_as: {output index: input index} pairs of equal shape, merged both ways while shapes
    are partial (gemm's C and its output, trsm's B and its solution). required: how many
    leading inputs `shapes` needs (the others are passed as None while unknown)."""
    def tie(ins, outs):
        for o, i in (same_as or {}).items():
            ins[i] = outs[o] = merge(ins[i], outs[o])

    def rule(p, ins, outs):
        ins, outs = list(ins), list(outs)
        tie(ins, outs)
        count = len(ins) if required is None else required
        if all(known(s) for s in ins[:count]):
            rest = [s if known(s) else None for s in ins[count:]]
            for k, s in enumerate(shapes(p, *(ins[:count] + rest))):
                outs[k] = merge(outs[k], tuple(s))
            tie(ins, outs)
        return ins, outs
    return rule


def _linalg_op(short, forward, shapes, inputs=('A',), outputs=('output',), params=None,
               same_as=None, visible=None, required=None, alias=True):
    """Register `_linalg_<short>` (alias `linalg_<short>` unless alias=False) with float32/64
    types and a shape check run by both inference and the forward."""
    name = '_linalg_' + short

    def checked_forward(p, *tensors):
        _check_float(name, tensors)
        shapes(p, *[tuple(t.shape) for t in tensors])
        return forward(p, *tensors)
    checked_forward.__name__ = name
    checked_forward.__doc__ = forward.__doc__
    register(OpDef(name, checked_forward, params=params, inputs=inputs, outputs=outputs,
                   visible_outputs=visible, infer_shape=_shape_rule(shapes, same_as, required),
                   infer_type=_float_types(name),
                   aliases=('linalg_' + short,) if alias else ()))


def _named(name, fn):
    """shapes(p, *shapes) of fn(name, p, *shapes)."""
    return lambda p, *shapes: fn(name, p, *shapes)


# ---------------------------------------------------------------------------------------------
# gemm, gemm2: alpha * op(A) op(B) (+ beta * C); rows on `axis`, columns on the last axis
# ---------------------------------------------------------------------------------------------
def _row_axis(name, p, shape):
    nd = len(shape)
    _matrices(name, shape)
    if not -nd <= p.axis < nd or p.axis % nd == nd - 1:
        _fail(name, 'axis=%d is not a valid row axis for a %d-d input (expected %d..%d, not the '
              'last axis)', p.axis, nd, -nd, nd - 2)
    return p.axis % nd


def _gemm_shapes(name, p, a, b, c=None):
    ax = _row_axis(name, p, a)
    _same_batch(name, {'A': a, 'B': b}, skip=(ax, -1))
    rows_a, cols_a = (a[-1], a[ax]) if p.transpose_a else (a[ax], a[-1])
    rows_b, cols_b = (b[-1], b[ax]) if p.transpose_b else (b[ax], b[-1])
    if cols_a != rows_b:
        _fail(name, 'incompatible matrix dimensions for multiplication: op(A) is %dx%d '
              '(A %s, transpose_a=%s) and op(B) is %dx%d (B %s, transpose_b=%s); expected '
              'op(A) columns == op(B) rows', rows_a, cols_a, fmt(a), p.transpose_a,
              rows_b, cols_b, fmt(b), p.transpose_b)
    out = list(a)
    out[ax], out[-1] = rows_a, cols_b
    out = tuple(out)
    if c is not None and tuple(c) != out:
        _fail(name, 'C must have the shape of op(A) op(B), expected %s, got C %s',
              fmt(out), fmt(c))
    return [out]


def _product(p, a, b):
    nd = a.dim()
    ax = p.axis % nd
    a, b = torch.movedim(a, ax, -2), torch.movedim(b, ax, -2)
    if p.transpose_a:
        a = a.transpose(-1, -2)
    if p.transpose_b:
        b = b.transpose(-1, -2)
    return torch.movedim(torch.matmul(a, b), -2, ax)


def _gemm(p, a, b, c):
    """alpha * op(A) op(B) + beta * C (op: transpose when transpose_a/b); the matrix rows are on
    `axis`, the columns on the last axis, other axes are a batch."""
    return p.alpha * _product(p, a, b) + p.beta * c


def _gemm2(p, a, b):
    """alpha * op(A) op(B) (op: transpose when transpose_a/b); the matrix rows are on `axis`,
    the columns on the last axis, other axes are a batch."""
    return p.alpha * _product(p, a, b)


_GEMM2_PARAMS = {'transpose_a': Bool(False), 'transpose_b': Bool(False), 'alpha': Float(1.0),
                 'axis': Int(-2)}
_GEMM_PARAMS = {'transpose_a': Bool(False), 'transpose_b': Bool(False), 'alpha': Float(1.0),
                'beta': Float(1.0), 'axis': Int(-2)}
_linalg_op('gemm', _gemm, _named('_linalg_gemm', _gemm_shapes), inputs=('A', 'B', 'C'),
           params=_GEMM_PARAMS, same_as={0: 2}, required=2)
_linalg_op('gemm2', _gemm2, _named('_linalg_gemm2', _gemm_shapes), inputs=('A', 'B'),
           params=_GEMM2_PARAMS)


# ---------------------------------------------------------------------------------------------
# potrf, potri: Cholesky factor and the inverse from it
# ---------------------------------------------------------------------------------------------
def _same_square(name, p, a):
    _square(name, a)
    return [tuple(a)]


def _potrf(p, a):
    """The Cholesky factor of symmetric positive definite A: lower L with A = L L^T (reading A's
    lower triangle), or with lower=False upper U with A = U^T U (reading the upper one)."""
    factor, info = torch.linalg.cholesky_ex(a, upper=not p.lower)
    if a.device.type != 'meta' and bool((info != 0).any()):
        raise MXNetError('_linalg_potrf: the Cholesky factorization failed: the input matrix '
                         'is not symmetric positive definite')
    return factor


def _potri(p, a):
    """(L L^T)^-1 from a lower Cholesky factor L (A's lower triangle), or with lower=False
    (U^T U)^-1 from an upper one: the inverse of the matrix potrf factored."""
    tri = torch.tril(a) if p.lower else torch.triu(a)
    if a.device.type != 'meta':
        diag = torch.diagonal(tri, 0, -2, -1)
        if bool((diag == 0).any()):
            raise MXNetError('_linalg_potri: the input is not a Cholesky factor (a zero on the '
                             'diagonal)')
    eye = torch.eye(a.shape[-1], dtype=a.dtype, device=a.device).expand(a.shape)
    inv = torch.linalg.solve_triangular(tri, eye, upper=not p.lower)
    if p.lower:
        return inv.transpose(-1, -2) @ inv
    return inv @ inv.transpose(-1, -2)


_CHOLESKY_PARAMS = {'lower': Bool(True)}
_linalg_op('potrf', _potrf, _named('_linalg_potrf', _same_square), same_as={0: 0},
           params=_CHOLESKY_PARAMS)
_linalg_op('potri', _potri, _named('_linalg_potri', _same_square), same_as={0: 0},
           params=_CHOLESKY_PARAMS)


# ---------------------------------------------------------------------------------------------
# trmm, trsm: products with and solutions of triangular systems
# ---------------------------------------------------------------------------------------------
def _triangular_shapes(name, p, a, b):
    n = _square(name, a)
    _matrices(name, b, 'B')
    _same_batch(name, {'A': a, 'B': b})
    side, size = ('columns', b[-1]) if p.rightside else ('rows', b[-2])
    if size != n:
        _fail(name, 'incompatible matrix dimensions: A %s is %dx%d, so B (rightside=%s) must '
              'have %d %s, got B %s', fmt(a), n, n, p.rightside, n, side, fmt(b))
    return [tuple(b)]


def _triangle(p, a):
    """op(A) of the triangle A names: its lower (lower=True) or upper triangle, transposed when
    `transpose`; and whether the result is upper triangular."""
    tri = torch.tril(a) if p.lower else torch.triu(a)
    upper = not p.lower
    if p.transpose:
        tri, upper = tri.transpose(-1, -2), not upper
    return tri, upper


def _trmm(p, a, b):
    """alpha * op(A) B, or alpha * B op(A) when rightside; A triangular (its lower triangle, or
    upper when lower=False), op transposes when `transpose`."""
    tri, _ = _triangle(p, a)
    return p.alpha * (b @ tri if p.rightside else tri @ b)


def _trsm(p, a, b):
    """X with op(A) X = alpha B, or X op(A) = alpha B when rightside; A triangular (its lower
    triangle, or upper when lower=False), op transposes when `transpose`."""
    tri, upper = _triangle(p, a)
    return torch.linalg.solve_triangular(tri, p.alpha * b, upper=upper, left=not p.rightside)


_TRIANGULAR_PARAMS = {'transpose': Bool(False), 'rightside': Bool(False), 'lower': Bool(True),
                      'alpha': Float(1.0)}
_linalg_op('trmm', _trmm, _named('_linalg_trmm', _triangular_shapes), inputs=('A', 'B'),
           params=_TRIANGULAR_PARAMS, same_as={0: 1})
_linalg_op('trsm', _trsm, _named('_linalg_trsm', _triangular_shapes), inputs=('A', 'B'),
           params=_TRIANGULAR_PARAMS, same_as={0: 1})


# ---------------------------------------------------------------------------------------------
# sumlogdiag, syrk, gelqf, inverse, det, slogdet
# ---------------------------------------------------------------------------------------------
def _one_per_matrix(count):
    def shapes(name, p, a):
        _square(name, a)
        return [_per_matrix(a)] * count
    return shapes


def _sumlogdiag(p, a):
    """Sum of the logarithms of the diagonal of each square matrix."""
    return _scalar_per_matrix(torch.log(torch.diagonal(a, 0, -2, -1)).sum(-1))


def _syrk_shapes(name, p, a):
    _matrices(name, a)
    n = a[-1] if p.transpose else a[-2]
    return [tuple(a[:-2]) + (n, n)]


def _syrk(p, a):
    """alpha * A A^T, or alpha * A^T A when transpose."""
    at = a.transpose(-1, -2)
    return p.alpha * (at @ a if p.transpose else a @ at)


def _gelqf_shapes(name, p, a):
    _matrices(name, a)
    m, n = a[-2], a[-1]
    if m > n:
        _fail(name, 'input A must have at least as many columns as rows (m <= n), got A %s '
              '(%d rows, %d columns)', fmt(a), m, n)
    return [tuple(a), tuple(a[:-2]) + (m, m)]


def _gelqf(p, a):
    """LQ factorization A = L Q of an m x n matrix (m <= n): Q (m x n, orthonormal rows) and L
    (m x m, lower triangular), signs as LAPACK's."""
    q, r = torch.linalg.qr(a.transpose(-1, -2))
    return q.transpose(-1, -2), r.transpose(-1, -2)


def _inverse(p, a):
    """The inverse of each square matrix."""
    inv, info = torch.linalg.inv_ex(a)
    if a.device.type != 'meta' and bool((info != 0).any()):
        raise MXNetError('_linalg_inverse: the input matrix is singular (not invertible)')
    return inv


def _det(p, a):
    """The determinant of each square matrix."""
    return _scalar_per_matrix(torch.linalg.det(a))


def _slogdet(p, a):
    """Sign and log(|det|) of the determinant of each square matrix (sign 0, log -inf when
    singular)."""
    sign, logabs = torch.linalg.slogdet(a)
    return _scalar_per_matrix(sign), _scalar_per_matrix(logabs)


def _syevd_shapes(name, p, a):
    n = _square(name, a)
    return [tuple(a), tuple(a[:-2]) + (n,)]


def _syevd(p, a):
    """Eigendecomposition A = U^T diag(L) U of symmetric A (read from its lower triangle): U's
    rows are the eigenvectors, each signed so that its largest-magnitude entry is positive, and
    L the eigenvalues in ascending order."""
    values, vectors = torch.linalg.eigh(a)
    rows = vectors.transpose(-1, -2)
    with torch.no_grad():
        pick = rows.abs().argmax(-1, keepdim=True)
        sign = torch.where(rows.gather(-1, pick) < 0, -1.0, 1.0).to(a.dtype)
    return rows * sign, values


_linalg_op('sumlogdiag', _sumlogdiag, _named('_linalg_sumlogdiag', _one_per_matrix(1)))
_linalg_op('syrk', _syrk, _named('_linalg_syrk', _syrk_shapes),
           params={'transpose': Bool(False), 'alpha': Float(1.0)})
_linalg_op('gelqf', _gelqf, _named('_linalg_gelqf', _gelqf_shapes),
           outputs=('output0', 'output1'))
_linalg_op('syevd', _syevd, _named('_linalg_syevd', _syevd_shapes),
           outputs=('output0', 'output1'), alias=False)      # MXNet has no linalg_syevd
_linalg_op('inverse', _inverse, _named('_linalg_inverse', _same_square), same_as={0: 0})
_linalg_op('det', _det, _named('_linalg_det', _one_per_matrix(1)), outputs=('output0',))
_linalg_op('slogdet', _slogdet, _named('_linalg_slogdet', _one_per_matrix(2)),
           outputs=('output0', 'output1'))


# ---------------------------------------------------------------------------------------------
# extractdiag, makediag, extracttrian, maketrian
# ---------------------------------------------------------------------------------------------
def _diagonal_size(name, p, a):
    n = _square(name, a) - abs(p.offset)
    if n <= 0:
        _fail(name, 'offset=%d is too large for %dx%d matrices (expected |offset| < %d), '
              'input A %s', p.offset, a[-1], a[-1], a[-1], fmt(a))
    return n


def _extractdiag_shapes(name, p, a):
    return [tuple(a[:-2]) + (_diagonal_size(name, p, a),)]


def _makediag_shapes(name, p, a):
    if len(a) < 1:
        _fail(name, 'input A must have at least 1 dimension, got shape %s', fmt(a))
    n = a[-1] + abs(p.offset)
    return [tuple(a[:-1]) + (n, n)]


def _extracttrian_shapes(name, p, a):
    n = _diagonal_size(name, p, a)
    return [tuple(a[:-2]) + (n * (n + 1) // 2,)]


def _trian_side(p):
    """(transpose, diagonal offset in the transposed lower triangle) of a packed triangle:
    offset < 0 or (offset 0 and lower) is a lower triangle read by rows; offset > 0 or
    (offset 0 and not lower) an upper one read by columns (the transpose's lower, by rows)."""
    upper = p.offset > 0 or (p.offset == 0 and not p.lower)
    return upper, -abs(p.offset)


def _extractdiag(p, a):
    """Diagonal `offset` (> 0 above the main one, < 0 below) of each square matrix."""
    return torch.diagonal(a, p.offset, -2, -1)


def _makediag(p, a):
    """Square matrices with the last axis of A on diagonal `offset`, zeros elsewhere."""
    return torch.diag_embed(a, p.offset)


def _extracttrian(p, a):
    """The triangle of each square matrix as a vector: below diagonal `offset` (offset < 0, or
    0 with lower=True) row by row, or above it (offset > 0, or 0 with lower=False) column by
    column."""
    upper, k = _trian_side(p)
    if upper:
        a = a.transpose(-1, -2)
    rows, cols = torch.tril_indices(a.shape[-1], a.shape[-1], k, device=a.device)
    return a[..., rows, cols]


def _maketrian_shapes(name, p, a):
    if len(a) < 1:
        _fail(name, 'input A must have at least 1 dimension, got shape %s', fmt(a))
    size = a[-1]
    m = (math.isqrt(8 * size + 1) - 1) // 2
    if m * (m + 1) // 2 != size or m == 0:
        _fail(name, 'the last axis of A must hold a packed triangle, m*(m+1)/2 values for some '
              'm >= 1, got %d (A %s)', size, fmt(a))
    n = m + abs(p.offset)
    return [tuple(a[:-1]) + (n, n)]


def _maketrian(p, a):
    """Square matrices from packed triangles (extracttrian's layout): zeros elsewhere."""
    upper, k = _trian_side(p)
    n = _maketrian_shapes('_linalg_maketrian', p, tuple(a.shape))[0][-1]
    rows, cols = torch.tril_indices(n, n, k, device=a.device)
    flat = a.new_zeros(tuple(a.shape[:-1]) + (n * n,))
    flat = flat.index_add(-1, rows * n + cols, a)
    out = flat.reshape(tuple(a.shape[:-1]) + (n, n))
    return out.transpose(-1, -2) if upper else out


_linalg_op('extractdiag', _extractdiag, _named('_linalg_extractdiag', _extractdiag_shapes),
           params={'offset': Int(0)})
_linalg_op('makediag', _makediag, _named('_linalg_makediag', _makediag_shapes),
           params={'offset': Int(0)})
_linalg_op('extracttrian', _extracttrian, _named('_linalg_extracttrian', _extracttrian_shapes),
           params={'offset': Int(0), 'lower': Bool(True)})
_linalg_op('maketrian', _maketrian, _named('_linalg_maketrian', _maketrian_shapes),
           params={'offset': Int(0), 'lower': Bool(True)})


# ---------------------------------------------------------------------------------------------
# moments: mean and (population) variance over `axes`
# ---------------------------------------------------------------------------------------------
def _moment_axes(p, ndim):
    if p.axes is not None and len(p.axes) == 0:
        raise MXNetError('moments: axes=() is empty; give every axis for global moments')
    return reduce_axes('moments', p.axes, ndim)


def _moments(p, data):
    """Mean and variance (divided by N) over `axes` (None: all); keepdims keeps them as 1."""
    axes = _moment_axes(p, data.dim())
    x = data.float() if data.dtype in (torch.float16, torch.bfloat16) else data
    mean = x.mean(axes, keepdim=True)
    var = ((x - mean) ** 2).mean(axes, keepdim=True)
    shape = reduced_shape(data.shape, axes, p.keepdims)
    return mean.to(data.dtype).reshape(shape), var.to(data.dtype).reshape(shape)


def _moments_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    shape = reduced_shape(data, _moment_axes(p, len(data)), p.keepdims)
    return ins, [merge(outs[0], shape), merge(outs[1], shape)]


register(OpDef('moments', _moments, params={'axes': Shape(None), 'keepdims': Bool(False)},
               outputs=('output0', 'output1'), infer_shape=_moments_shape))


# ---------------------------------------------------------------------------------------------
# cumsum (_np_cumsum)
# ---------------------------------------------------------------------------------------------
def _cumsum(p, a):
    """Cumulative sum along `axis` (None: of the flattened input), as `dtype` (None: a's)."""
    dtype = torch_dtype(p.dtype) if p.dtype is not None else a.dtype
    if p.axis is None:
        return torch.cumsum(a.reshape(-1), 0, dtype=dtype)
    axis = normalize_axis('cumsum', p.axis, max(a.dim(), 1))
    return torch.cumsum(a, axis, dtype=dtype)


def _cumsum_shape(p, ins, outs):
    a = ins[0]
    if a is None:
        return ins, outs
    if p.axis is None:
        out = (math.prod(a),) if known(a) else None
    else:
        normalize_axis('cumsum', p.axis, max(len(a), 1))
        out = tuple(a)
    return ins, [merge(outs[0], out)]


def _cumsum_type(p, ins, outs):
    if p.dtype is not None:
        return ins, [np_dtype(p.dtype)]
    t = first(ins[0], outs[0])
    return [t], [t]


register(OpDef('_np_cumsum', _cumsum,
               params={'axis': Int(None),
                       'dtype': DType(None, choices=('float16', 'float32', 'float64', 'int32',
                                                     'int64', 'int8'))},
               inputs=('a',), infer_shape=_cumsum_shape, infer_type=_cumsum_type,
               aliases=('cumsum',)))


# ---------------------------------------------------------------------------------------------
# khatri_rao: column-wise Kronecker product
# ---------------------------------------------------------------------------------------------
def _khatri_rao_shapes(p, shapes):
    for k, s in enumerate(shapes):
        if len(s) != 2:
            _fail('khatri_rao', 'every input must be a matrix, got input %d of shape %s',
                  k, fmt(s))
    cols = shapes[0][1]
    for k, s in enumerate(shapes):
        if s[1] != cols:
            _fail('khatri_rao', 'every input must have %d columns (as input 0), got input %d '
                  'of shape %s', cols, k, fmt(s))
    return (math.prod(s[0] for s in shapes), cols)


def _khatri_rao(p, *mats):
    """Column-wise Kronecker product of matrices with equal column counts: row
    (i_1, ..., i_n) (the first matrix's index most significant) of column j is the product of
    row i_k, column j of every matrix."""
    _khatri_rao_shapes(p, [tuple(m.shape) for m in mats])
    out = mats[0]
    for m in mats[1:]:
        out = (out.unsqueeze(1) * m.unsqueeze(0)).reshape(-1, out.shape[-1])
    return out


def _khatri_rao_shape(p, ins, outs):
    if all(known(s) for s in ins):
        return ins, [merge(outs[0], _khatri_rao_shapes(p, ins))]
    return ins, outs


register(OpDef('khatri_rao', _khatri_rao, params={'num_args': Int()}, variadic='num_args',
               infer_shape=_khatri_rao_shape, differentiable=False))


# ---------------------------------------------------------------------------------------------
# ravel_multi_index, unravel_index
# ---------------------------------------------------------------------------------------------
def _need_shape(name, p):
    if not p.shape:
        _fail(name, 'the shape parameter is required (the shape the indices refer to), got '
              'shape=%s', p.shape)


def _ravel_shapes(name, p, data):
    _need_shape(name, p)
    if len(data) != 2 or data[0] != len(p.shape):
        _fail(name, 'data must be a (%d, N) array of indices (one row per axis of shape=%s), '
              'got data %s', len(p.shape), p.shape, fmt(data))
    return (data[1],)


def _ravel_multi_index(p, data):
    """Flat indices into an array of `shape` from a (len(shape), N) array of per-axis indices
    (truncated to integers; not bounds-checked), in data's dtype."""
    _ravel_shapes('ravel_multi_index', p, tuple(data.shape))
    with torch.no_grad():
        index = data.to(torch.int64)
        flat = torch.zeros(data.shape[1], dtype=torch.int64, device=data.device)
        for k, size in enumerate(p.shape):
            flat = flat * size + index[k]
        return flat.to(data.dtype)


def _unravel_index(p, data):
    """Per-axis indices, shape (len(shape),) + data.shape, of flat indices into an array of
    `shape` (truncated to integers); the first axis's index is not wrapped. (MXNet documents
    1-d data only; its results for n-d data are not meaningful, these are NumPy's.)"""
    _need_shape('unravel_index', p)
    with torch.no_grad():
        index = data.to(torch.int64)
        rows = []
        for size in reversed(p.shape[1:]):
            rows.append(torch.fmod(index, size))
            index = torch.div(index, size, rounding_mode='trunc')
        rows.append(index)
        return torch.stack(rows[::-1]).to(data.dtype)


def _ravel_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    return ins, [merge(outs[0], _ravel_shapes('ravel_multi_index', p, ins[0]))]


def _unravel_shape(p, ins, outs):
    _need_shape('unravel_index', p)
    if ins[0] is None:
        return ins, outs
    return ins, [merge(outs[0], (len(p.shape),) + tuple(ins[0]))]


register(OpDef('_ravel_multi_index', _ravel_multi_index, params={'shape': Shape(None)},
               infer_shape=_ravel_shape, aliases=('ravel_multi_index',)))
register(OpDef('_unravel_index', _unravel_index, params={'shape': Shape(None)},
               infer_shape=_unravel_shape, aliases=('unravel_index',)))


# ---------------------------------------------------------------------------------------------
# histogram (_histogram): counts (int64) and bin edges
# ---------------------------------------------------------------------------------------------
class FloatPair(Param):
    """Two numbers: "(0, 1)", "[0.5, 2]" or a Python pair."""
    kind = 'tuple of <float>'

    def _parse(self, value):
        if isinstance(value, str):
            try:
                value = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                raise ValueError('expected a pair of numbers') from None
        if not isinstance(value, (tuple, list)) or len(value) != 2:
            raise ValueError('expected a pair of numbers')
        try:
            return tuple(float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError('expected a pair of numbers') from None


def _histogram_params(p):
    if (p.bin_cnt is None) != (p.range is None):
        raise MXNetError('_histogram: bin_cnt and range must be given together (or neither, '
                         'with a bins input), got bin_cnt=%s, range=%s' % (p.bin_cnt, p.range))
    if p.bin_cnt is not None and p.bin_cnt <= 0:
        raise MXNetError('_histogram: bin_cnt must be positive, got bin_cnt=%d' % p.bin_cnt)
    if p.range is not None and p.range[0] > p.range[1]:
        raise MXNetError('_histogram: range=%s must have range[0] <= range[1]' % (p.range,))


def _histogram(p, data, bins=None):
    """Counts of data's values in bins (int64) and the bin edges: `bin_cnt` equal bins over
    `range` (a value at its upper end counts in the last bin), or the bins whose edges the
    `bins` input holds (sorted). Values outside the bins (and NaN) are not counted."""
    _histogram_params(p)
    with torch.no_grad():
        x = data.reshape(-1)
        if bins is None:
            lo, hi = p.range
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            count = p.bin_cnt
            steps = torch.arange(count + 1, dtype=torch.float64, device=data.device)
            edges = (lo + steps * ((hi - lo) / count)).to(data.dtype)
            xd = x.to(torch.float64)
            inside = (xd >= lo) & (xd <= hi)
            index = torch.floor((xd - lo) * count / (hi - lo)).clamp(0, count - 1)
        else:
            if bins.dim() != 1 or bins.shape[0] < 2:
                raise MXNetError('_histogram: bins must be a 1-d array of at least 2 edges, '
                                 'got shape %s' % fmt(tuple(bins.shape)))
            edges = bins.clone()
            count = bins.shape[0] - 1
            inside = (x >= bins[0]) & (x <= bins[-1])
            index = (torch.searchsorted(bins, x, right=True) - 1).clamp(0, count - 1)
        counts = torch.bincount(index[inside].long(), minlength=count)
        return counts.to(torch.int64), edges


def _histogram_shape(p, ins, outs):
    _histogram_params(p)
    if p.bin_cnt is not None:
        return ins, [merge(outs[0], (p.bin_cnt,)), merge(outs[1], (p.bin_cnt + 1,))]
    bins = ins[1]
    if bins is None or not known(bins):
        return ins, outs
    return ins, [merge(outs[0], (bins[0] - 1,)), merge(outs[1], tuple(bins))]


def _histogram_type(p, ins, outs):
    t = first(*ins)
    for x in ins:
        if x is not None and t is not None and x != t:
            raise ShapeError('_histogram: bins must have the dtype of data, expected %s, got %s'
                             % (np_dtype(t).name, np_dtype(x).name))
    return [t] * len(ins), [np_dtype('int64'), t]


register(OpDef('_histogram', _histogram,
               params={'bin_cnt': Int(None), 'range': FloatPair(None)},
               inputs=lambda p: ('data',) if p.bin_cnt is not None else ('data', 'bins'),
               outputs=('output0', 'output1'), infer_shape=_histogram_shape,
               infer_type=_histogram_type, differentiable=False))


# ---------------------------------------------------------------------------------------------
# softmax_cross_entropy: summed cross-entropy of softmax(data) and integer labels
# ---------------------------------------------------------------------------------------------
def _sce_shapes(data, label):
    if len(data) != 2:
        _fail('softmax_cross_entropy', 'data must be 2-d (batch, classes), got data %s',
              fmt(data))
    if len(label) != 1:
        _fail('softmax_cross_entropy', 'label must be 1-d (batch,), got label %s', fmt(label))
    if label[0] != data[0]:
        _fail('softmax_cross_entropy', 'data and label shape mismatch: expected label (%d,) '
              'for data %s, got label %s', data[0], fmt(data), fmt(label))


def _softmax_cross_entropy(p, data, label):
    """-sum_i log softmax(data)[i, label_i] over the batch, shape (1,); labels are truncated
    to integers. No gradient flows to label."""
    _sce_shapes(tuple(data.shape), tuple(label.shape))
    index = label.detach().to(torch.int64)
    if data.device.type != 'meta' and bool(((index < 0) | (index >= data.shape[1])).any()):
        raise MXNetError('softmax_cross_entropy: labels must lie in [0, %d) (the number of '
                         'classes), got %s' % (data.shape[1], label.detach().cpu().tolist()))
    logp = torch.log_softmax(data, dim=1)
    return -logp.gather(1, index.unsqueeze(1)).sum().reshape(1)


def _sce_shape(p, ins, outs):
    data, label = ins
    if data is not None and label is not None and known(data) and known(label):
        _sce_shapes(data, label)
    return ins, [merge(outs[0], (1,))]


register(OpDef('softmax_cross_entropy', _softmax_cross_entropy, inputs=('data', 'label'),
               infer_shape=_sce_shape))
