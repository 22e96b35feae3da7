"""Reductions and orderings: sum, mean, prod, max, min, norm, argmax, argmin, topk, sort, ...

Also two output layers whose gradients are MXNet's own: SVMOutput and
IdentityAttachKLSparseReg.

Conventions shared by the family: an axis may be negative; a result that would be 0-d has shape
(1,); index results keep the input dtype (argmax, argmin, argmax_channel) or take the `dtype`
parameter (argsort, topk); ties are broken by position (the first index wins, sorts are stable).
"""
import torch

from ..base import MXNetError, np_dtype, torch_dtype
from .params import Bool, DType, Enum, Float, Int, Shape
from .registry import OpDef, register
from .shapes import first, known, merge, prod


# ---------------------------------------------------------------------------------------------
# Axes
# ---------------------------------------------------------------------------------------------
def normalize_axis(op_name, axis, ndim, param='axis'):
    """`axis` as a non-negative index into `ndim` dims, or MXNetError naming op and param."""
    if not -ndim <= axis < ndim:
        raise MXNetError('%s: %s=%d is out of range for a %d-d input (expected %d..%d)'
                         % (op_name, param, axis, ndim, -ndim, ndim - 1))
    return axis % ndim


def reduce_axes(op_name, axis, ndim, exclude=False):
    """Sorted axes reduced by `axis`: None or () means all; exclude reduces the others."""
    if not axis:
        return tuple(range(ndim))
    axes = [normalize_axis(op_name, a, ndim) for a in axis]
    if len(set(axes)) != len(axes):
        raise MXNetError('%s: axis=%s names an axis twice (%d-d input)'
                         % (op_name, tuple(axis), ndim))
    if exclude:
        return tuple(d for d in range(ndim) if d not in axes)
    return tuple(sorted(axes))


def reduced_shape(shape, axes, keepdims):
    """Output shape of reducing `axes`: size 1 with keepdims, removed otherwise; never ()."""
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes) or (1,)


def at_least_1d(tensor):
    return tensor.reshape(1) if tensor.dim() == 0 else tensor


# ---------------------------------------------------------------------------------------------
# sum, mean, prod, nansum, nanprod, max, min
# Kernels reduce non-empty `axes` and keep them as size-1 dims.
# ---------------------------------------------------------------------------------------------
class _ReduceWithGrad(torch.autograd.Function):
    """A reduction whose gradient is head * grad_rule(data, out): MXNet's rules, e.g. max sends
    the full head gradient to every element equal to the maximum (torch would share it)."""

    @staticmethod
    def forward(ctx, data, axes, kernel, grad_rule):
        out = kernel(data, axes)
        ctx.grad_rule = grad_rule
        ctx.save_for_backward(data, out)
        return out

    @staticmethod
    def backward(ctx, head):
        data, out = ctx.saved_tensors
        return head * ctx.grad_rule(data, out), None, None, None


def _sum(x, axes):
    return torch.sum(x, axes, keepdim=True, dtype=x.dtype)   # integers wrap, as MXNet's


def _mean(x, axes):
    if x.dtype.is_floating_point:
        return torch.mean(x, axes, keepdim=True)
    count = prod(x.shape[a] for a in axes)
    return torch.div(_sum(x, axes), count, rounding_mode='trunc')


def _nansum(x, axes):
    return torch.nansum(x, axes, keepdim=True, dtype=x.dtype)


def _product(x, axes):
    for a in axes:
        x = torch.prod(x, a, keepdim=True, dtype=x.dtype)
    return x


def _nan_product(x, axes):
    return _product(torch.where(torch.isnan(x), torch.ones_like(x), x), axes)


def _equal_to_result(data, out):
    return (data == out).to(data.dtype)


def _ratio_to_result(data, out):
    return out / data          # 0 / 0 gives nan at zeros, as MXNet's gradient does


def _ratio_ignoring_nan(data, out):
    return torch.where(torch.isnan(data), torch.zeros_like(data), out / data)


def _with_grad_rule(kernel, grad_rule):
    return lambda x, axes: _ReduceWithGrad.apply(x, axes, kernel, grad_rule)


def _nonempty(name, x):
    if x.numel() == 0:
        raise MXNetError("%s: Reduction input's size should > 0, got shape %s"
                         % (name, tuple(x.shape)))
    return x


def _amax(x, axes):
    return torch.amax(_nonempty('max', x), axes, keepdim=True)


def _amin(x, axes):
    return torch.amin(_nonempty('min', x), axes, keepdim=True)


def _reduction(name, kernel, what):
    def forward(p, data):
        axes = reduce_axes(name, p.axis, data.dim(), p.exclude)
        out = kernel(data, axes) if axes else data.clone()
        return out.reshape(reduced_shape(data.shape, axes, p.keepdims))
    forward.__name__ = name
    forward.__doc__ = ('%s over `axis` (None: all axes; exclude=True: all axes but those); '
                       'keepdims keeps them as size 1.' % what)
    return forward


def _from_input(out_shapes, partial=lambda p: False):
    """A shape rule for an operator whose output shapes follow from its input's alone:
    out_shapes(p, shape) -> list, run once the input's shape is known, or only its ndim where
    partial(p) (its unknown dims, 0, then pass through to the outputs), as MXNet's rules."""
    def rule(p, ins, outs):
        if ins[0] is None or not (known(ins[0]) or partial(p)):
            return ins, outs
        return ins, out_shapes(p, ins[0])
    return rule


def _reduction_shape(name):
    return _from_input(lambda p, shape: [reduced_shape(
        shape, reduce_axes(name, p.axis, len(shape), p.exclude), p.keepdims)],
        partial=lambda p: not p.exclude)


_REDUCE_PARAMS = {'axis': Shape(None), 'keepdims': Bool(False), 'exclude': Bool(False)}

_REDUCTIONS = [
    ('sum', ('sum_axis',), _sum, 'Sum'),
    ('mean', (), _mean, 'Mean (integers: truncated)'),
    ('prod', (), _with_grad_rule(_product, _ratio_to_result), 'Product'),
    ('nansum', (), _nansum, 'Sum treating NaN as 0'),
    ('nanprod', (), _with_grad_rule(_nan_product, _ratio_ignoring_nan),
     'Product treating NaN as 1'),
    ('max', ('max_axis',), _with_grad_rule(_amax, _equal_to_result), 'Maximum'),
    ('min', ('min_axis',), _with_grad_rule(_amin, _equal_to_result), 'Minimum'),
]

for _name, _aliases, _kernel, _what in _REDUCTIONS:
    register(OpDef(_name, _reduction(_name, _kernel, _what), params=_REDUCE_PARAMS,
                   aliases=_aliases, infer_shape=_reduction_shape(_name)))


# ---------------------------------------------------------------------------------------------
# norm
# ---------------------------------------------------------------------------------------------
def _check_ord(p):
    if p.ord not in (1, 2):
        raise MXNetError('norm: ord must be 1 or 2, got ord=%d' % p.ord)


def _norm(p, data):
    """L1 (sum |x|) or L2 (sqrt of sum x^2) norm over `axis` (None: all), cast to out_dtype."""
    _check_ord(p)
    axes = reduce_axes('norm', p.axis, data.dim())
    x = data.float() if data.dtype in (torch.float16, torch.bfloat16) else data
    if p.ord == 1:
        out = x.abs().sum(axes, keepdim=True)
    else:
        out = torch.sqrt((x * x).sum(axes, keepdim=True))   # gradient x / norm (nan at 0)
    dtype = data.dtype if p.out_dtype is None else torch_dtype(p.out_dtype)
    return out.to(dtype).reshape(reduced_shape(data.shape, axes, p.keepdims))


def _norm_shape(p, shape):
    _check_ord(p)
    return [reduced_shape(shape, reduce_axes('norm', p.axis, len(shape)), p.keepdims)]


def _norm_type(p, ins, outs):
    out = np_dtype(p.out_dtype) if p.out_dtype is not None else ins[0]
    return ins, [out]


register(OpDef('norm', _norm,
               params={'ord': Int(2), 'axis': Shape(None),
                       'out_dtype': DType(None, choices=('float16', 'float32', 'float64',
                                                         'int32', 'int64', 'int8')),
                       'keepdims': Bool(False)},
               infer_shape=_from_input(_norm_shape), infer_type=_norm_type))


# ---------------------------------------------------------------------------------------------
# argmax, argmin, argmax_channel: the index, in the input's dtype
# ---------------------------------------------------------------------------------------------
def _arg_reduction(name, fn):
    def forward(p, data):
        if p.axis is None:
            index = fn(data.reshape(-1)).reshape((1,) * data.dim() if p.keepdims else (1,))
        else:
            axis = normalize_axis(name, p.axis, data.dim())
            index = at_least_1d(fn(data, axis, keepdim=p.keepdims))
        return index.to(data.dtype)
    forward.__name__ = name
    forward.__doc__ = ('Index of the %s along `axis` (None: of the flattened input, shape (1,)); '
                       'ties and NaN: the first one.' % name[3:])
    return forward


def _arg_reduction_shape(name):
    def out_shapes(p, shape):
        if p.axis is None:
            return [(1,) * len(shape) if p.keepdims else (1,)]
        axis = normalize_axis(name, p.axis, len(shape))
        return [reduced_shape(shape, (axis,), p.keepdims)]
    return _from_input(out_shapes)


def _drop_last_axis(attrs, version):
    """Graphs saved before MXNet 0.9.5 (905) meant the flattened input by axis=-1."""
    if version < 905 and attrs.get('axis') == '-1':
        del attrs['axis']


for _name, _fn in (('argmax', torch.argmax), ('argmin', torch.argmin)):
    register(OpDef(_name, _arg_reduction(_name, _fn), head_grad='zero',
                   params={'axis': Int(None), 'keepdims': Bool(False)},
                   infer_shape=_arg_reduction_shape(_name))
             ).upgrade_attrs = _drop_last_axis


def _argmax_channel(p, data):
    """Index of the maximum along axis 1 (the channel axis)."""
    axis = normalize_axis('argmax_channel', 1, data.dim())
    return torch.argmax(data, axis).to(data.dtype)


def _argmax_channel_shape(p, shape):
    axis = normalize_axis('argmax_channel', 1, len(shape))
    return [tuple(n for d, n in enumerate(shape) if d != axis)]


register(OpDef('argmax_channel', _argmax_channel, differentiable=False,
               infer_shape=_from_input(_argmax_channel_shape)))


# ---------------------------------------------------------------------------------------------
# sort, argsort, topk
# ---------------------------------------------------------------------------------------------
def _sort_along(name, p, data):
    """(values, int64 indices, axis) of a stable sort along p.axis (None: the flattened data)."""
    if p.axis is None:
        data, axis = data.reshape(-1), 0
    else:
        axis = normalize_axis(name, p.axis, data.dim())
    values, indices = torch.sort(data, dim=axis, descending=not p.is_ascend, stable=True)
    return values, indices, axis


def _sort(p, data):
    """Sorted values along `axis` (None: flattened); hidden second output: their indices."""
    values, indices, _ = _sort_along('sort', p, data)
    return values, indices


def _argsort(p, data):
    """Indices that sort `axis` (None: the flattened data), as `dtype`; ties keep their order."""
    _, indices, _ = _sort_along('argsort', p, data)
    return indices.to(torch_dtype(p.dtype))


def _topk(p, data):
    """The k largest (is_ascend: smallest) along `axis` (None: flattened); k <= 0 takes all.
    ret_typ: indices (as dtype), value (hidden indices follow), both, or mask (0/1, data's
    shape and dtype)."""
    values, indices, axis = _sort_along('topk', p, data)
    size = values.shape[axis]
    k = size if p.k <= 0 else p.k
    if k > size:
        raise MXNetError('topk: k must be at most %d (the size of the sorted axis), got k=%d'
                         % (size, p.k))
    values, indices = values.narrow(axis, 0, k), indices.narrow(axis, 0, k)
    if p.ret_typ == 'mask':
        flat = data.reshape(-1) if p.axis is None else data
        return torch.zeros_like(flat).scatter_(axis, indices, 1).reshape(data.shape)
    indices = indices.to(torch_dtype(p.dtype))
    return indices if p.ret_typ == 'indices' else (values, indices)


def _sorted_shape(name, count):
    def out_shapes(p, shape):
        if p.axis is None:
            return [(prod(shape),)] * count
        normalize_axis(name, p.axis, len(shape))
        return [tuple(shape)] * count
    return _from_input(out_shapes)


def _topk_shape(p, ins, outs):
    """topk's output shapes once its input's is known (the checks of its forward)."""
    if not known(ins[0]):
        return ins, outs
    shape = ins[0]
    if p.axis is None:
        shape, axis = (prod(shape),), 0
    else:
        axis = normalize_axis('topk', p.axis, len(shape))
    size = shape[axis]
    k = size if p.k <= 0 else p.k
    if k > size:
        raise MXNetError('topk: k must be at most %d (the size of the sorted axis), got k=%d'
                         % (size, p.k))
    if p.ret_typ == 'mask':
        return ins, [ins[0]]
    picked = tuple(shape[:axis]) + (k,) + tuple(shape[axis + 1:])
    return ins, [picked] * (1 if p.ret_typ == 'indices' else 2)


def _sort_type(p, ins, outs):
    data = first(ins[0], outs[0])
    return [data], [data, np_dtype('int64')]


def _argsort_type(p, ins, outs):
    return ins, [np_dtype(p.dtype)]


def _topk_type(p, ins, outs):
    index = np_dtype(p.dtype)
    data = ins[0] if p.ret_typ == 'indices' else first(ins[0], outs[0])
    by_kind = {'indices': [index], 'mask': [data], 'value': [data, index], 'both': [data, index]}
    return [data], by_kind[p.ret_typ]


_INDEX_DTYPES = ('float16', 'float32', 'float64', 'int32', 'int64', 'uint8')

register(OpDef('sort', _sort, params={'axis': Int(-1, optional=True), 'is_ascend': Bool(True)},
               outputs=('output0', 'output1'), visible_outputs=1, infer_type=_sort_type,
               infer_shape=_sorted_shape('sort', 2)))
register(OpDef('argsort', _argsort,
               params={'axis': Int(-1, optional=True), 'is_ascend': Bool(True),
                       'dtype': DType('float32', choices=_INDEX_DTYPES)},
               infer_type=_argsort_type, head_grad='zero',
               infer_shape=_sorted_shape('argsort', 1)))
register(OpDef('topk', _topk,
               params={'axis': Int(-1, optional=True), 'k': Int(1),
                       'ret_typ': Enum(('both', 'indices', 'mask', 'value'), 'indices'),
                       'is_ascend': Bool(False),
                       'dtype': DType('float32', choices=_INDEX_DTYPES)},
               outputs=lambda p: (('output0', 'output1') if p.ret_typ in ('both', 'value')
                                  else ('output',)),
               visible_outputs=lambda p: 2 if p.ret_typ == 'both' else 1,
               infer_type=_topk_type, infer_shape=_topk_shape,
               # indices and masks have a zero gradient: their head gradient goes unread
               head_grad=lambda p: 'zero' if p.ret_typ in ('indices', 'mask') else 'required'))


# ---------------------------------------------------------------------------------------------
# SVMOutput: identity forward; backward is the (squared) hinge loss gradient
# ---------------------------------------------------------------------------------------------
def _svm_grad(p, scores, label):
    """Hinge gradient for scores (rows, classes), labels (rows,); out-of-range labels match no
    class. L2: -2c(m - x) at the label if x < m, 2c(m + x) elsewhere if x > -m; L1: -c / c."""
    classes = torch.arange(scores.shape[1], device=scores.device)
    is_label = classes == label.long().unsqueeze(1)
    m, c = p.margin, p.regularization_coefficient
    zero = torch.zeros_like(scores)
    if p.use_linear:
        at_label = torch.where(scores < m, zero - c, zero)
        elsewhere = torch.where(scores > -m, zero + c, zero)
    else:
        at_label = torch.where(scores < m, -2 * c * (m - scores), zero)
        elsewhere = torch.where(scores > -m, 2 * c * (m + scores), zero)
    return torch.where(is_label, at_label, elsewhere)


def _svm_output(p, data, label):
    """Identity; backward gives the hinge-loss gradient of the scores (classes on the last
    axis, label = data.shape[:-1]), ignoring head gradients."""
    return data.clone()


def _svm_gradient(p, inputs, out):
    data, label = inputs[0], inputs[1]
    grad = _svm_grad(p, data.detach().reshape(-1, data.shape[-1]), label.reshape(-1))
    return grad.reshape(data.shape)


def _svm_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    label = ins[1]
    if data is not None:
        label = merge(label, tuple(data[:-1]))
    return [data, label], [data]


register(OpDef('SVMOutput', _svm_output,
               params={'margin': Float(1.0), 'regularization_coefficient': Float(1.0),
                       'use_linear': Bool(False)},
               inputs=('data', 'label'), head_grad='ignored', loss_gradient=_svm_gradient,
               infer_shape=_svm_shape))


# ---------------------------------------------------------------------------------------------
# IdentityAttachKLSparseReg: identity forward; backward adds a KL sparseness penalty
# ---------------------------------------------------------------------------------------------
class _KLSparseRegFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, data, new_avg, p):
        ctx.p = p
        ctx.save_for_backward(new_avg)
        return data.clone()

    @staticmethod
    def backward(ctx, head_grad):
        (avg,) = ctx.saved_tensors
        rho = ctx.p.sparseness_target
        penalty = ctx.p.penalty * (-rho / avg + (1 - rho) / (1 - avg))
        shape = [1] * head_grad.dim()
        shape[1] = -1
        return head_grad + penalty.reshape(shape), None, None


def _kl_sparse_reg(p, data, moving_avg):
    """Identity. Hidden output: the moving average of the mean activation per channel (axis 1),
    updated by the batch. Backward adds penalty * (-rho/avg + (1-rho)/(1-avg)) with the
    updated average; the executor stores it in moving_avg during backward, as MXNet."""
    axes = [d for d in range(data.dim()) if d != 1]
    batch_mean = data.detach().mean(axes)
    new_avg = p.momentum * moving_avg + (1 - p.momentum) * batch_mean
    if torch.is_grad_enabled() and data.requires_grad:
        return _KLSparseRegFn.apply(data, new_avg, p), new_avg
    return data.clone(), new_avg


def _kl_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    channels = (data[1],) if data is not None else None
    avg = merge(ins[1], channels)
    return [data, avg], [data, avg]


def _kl_update_aux(p, aux, outputs):
    aux[0].copy_(outputs[1])


register(OpDef('IdentityAttachKLSparseReg', _kl_sparse_reg,
               params={'sparseness_target': Float(0.1), 'penalty': Float(0.001),
                       'momentum': Float(0.9)},
               aux=('moving_avg',), outputs=('output', 'updated_avg'), visible_outputs=1,
               infer_shape=_kl_shape, update_aux=_kl_update_aux))
