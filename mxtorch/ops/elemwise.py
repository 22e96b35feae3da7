"""Element-wise operators: binary (same-shape and broadcasting), scalar and unary math.

All of them keep the input dtype: comparisons give 1/0 of that dtype, a scalar is cast to the
array's dtype before use (int32 * 0.5 -> 0), integer division truncates.
"""
import math

import torch

from ..base import MXNetError
from .params import Bool, Float, Int
from .registry import OpDef, get_op, register
from .shapes import same_shape, check, merge, require, fmt


def _check_same_dtype(name, x, y):
    if x.dtype != y.dtype:
        raise MXNetError('%s: both operands must have one dtype, got %s and %s'
                         % (name, x.dtype, y.dtype))


def _div(x, y):
    if x.dtype.is_floating_point:
        return torch.div(x, y)
    return torch.div(x, y, rounding_mode='trunc')


def _mod(x, y):
    """Modulo with the divisor's sign (as Python); MXNet gives 0 where the divisor is 0."""
    zero = y == 0
    safe = torch.where(zero, torch.ones_like(y), y)
    return torch.where(zero, torch.zeros_like(x), torch.remainder(x, safe))


def _logical(fn):
    return lambda x, y: fn(x != 0, y != 0)


# name: (torch function, its result needs a cast back to the input dtype)
_BINARY = {
    'add': (torch.add, False), 'sub': (torch.sub, False), 'mul': (torch.mul, False),
    'div': (_div, False), 'mod': (_mod, False), 'power': (torch.pow, False),
    # ties: MXNet's gradient goes in full to lhs; NaN propagates from either side
    'maximum': (lambda x, y: torch.where((x >= y) | torch.isnan(x), x, y), False),
    'minimum': (lambda x, y: torch.where((x <= y) | torch.isnan(x), x, y), False),
    'hypot': (torch.hypot, False),
    'equal': (torch.eq, True), 'not_equal': (torch.ne, True), 'greater': (torch.gt, True),
    'greater_equal': (torch.ge, True), 'lesser': (torch.lt, True), 'lesser_equal': (torch.le, True),
    'logical_and': (_logical(torch.logical_and), True), 'logical_or': (_logical(torch.logical_or), True),
    'logical_xor': (_logical(torch.logical_xor), True),
}


def _check_shapes(name, lhs, rhs, broadcast):
    if lhs.shape == rhs.shape:
        return
    if broadcast:
        try:
            torch.broadcast_shapes(lhs.shape, rhs.shape)
            return
        except RuntimeError:
            pass
    raise MXNetError('%s: operands could not be %s together with shapes lhs %s and rhs %s'
                     % (name, 'broadcast' if broadcast else 'combined element-wise',
                        tuple(lhs.shape), tuple(rhs.shape)))


def _keeps_layout(p):
    """keeps_layout of element-wise operators of same-shape inputs: torch's kernels give
    channels-last inputs a channels-last output, the values being per element."""
    return True


def _binary_forward(kind, name):
    fn, cast = _BINARY[kind]
    broadcast = name.startswith('broadcast_')

    def forward(p, lhs, rhs):
        _check_same_dtype(name, lhs, rhs)
        _check_shapes(name, lhs, rhs, broadcast)
        out = fn(lhs, rhs)
        return out.to(lhs.dtype) if cast else out
    forward.__name__ = name
    forward.__doc__ = 'Element-wise %s of lhs and rhs.' % kind
    return forward


def _broadcast_shape(p, ins, outs):
    lhs, rhs = ins
    if lhs is None or rhs is None or not all(lhs) or not all(rhs):
        return ins, outs
    n = max(len(lhs), len(rhs))
    a = (1,) * (n - len(lhs)) + tuple(lhs)
    b = (1,) * (n - len(rhs)) + tuple(rhs)
    out = []
    for x, y in zip(a, b):
        check(x == y or x == 1 or y == 1, 'operands could not be broadcast together with '
              'shapes %s %s', lhs, rhs)
        out.append(max(x, y))
    return ins, [merge(outs[0], tuple(out))]


# elemwise name, its aliases, broadcast name, its aliases, kind
_BINARY_OPS = [
    ('elemwise_add', ('_Plus', '_add', '_plus'), 'broadcast_add', ('broadcast_plus',), 'add'),
    ('elemwise_sub', ('_Minus', '_minus', '_sub'), 'broadcast_sub', ('broadcast_minus',), 'sub'),
    ('elemwise_mul', ('_Mul', '_mul'), 'broadcast_mul', (), 'mul'),
    ('elemwise_div', ('_Div', '_div'), 'broadcast_div', (), 'div'),
    ('_mod', ('_Mod',), 'broadcast_mod', (), 'mod'),
    ('_power', ('_Power',), 'broadcast_power', (), 'power'),
    ('_maximum', ('_Maximum',), 'broadcast_maximum', (), 'maximum'),
    ('_minimum', ('_Minimum',), 'broadcast_minimum', (), 'minimum'),
    ('_hypot', ('_Hypot',), 'broadcast_hypot', (), 'hypot'),
    ('_equal', ('_Equal',), 'broadcast_equal', (), 'equal'),
    ('_not_equal', ('_Not_Equal',), 'broadcast_not_equal', (), 'not_equal'),
    ('_greater', ('_Greater',), 'broadcast_greater', (), 'greater'),
    ('_greater_equal', ('_Greater_Equal',), 'broadcast_greater_equal', (), 'greater_equal'),
    ('_lesser', ('_Lesser',), 'broadcast_lesser', (), 'lesser'),
    ('_lesser_equal', ('_Lesser_Equal',), 'broadcast_lesser_equal', (), 'lesser_equal'),
    ('_logical_and', ('_Logical_And',), 'broadcast_logical_and', (), 'logical_and'),
    ('_logical_or', ('_Logical_Or',), 'broadcast_logical_or', (), 'logical_or'),
    ('_logical_xor', ('_Logical_Xor',), 'broadcast_logical_xor', (), 'logical_xor'),
]

for _ew, _ew_alias, _bc, _bc_alias, _kind in _BINARY_OPS:
    _op = register(OpDef(_ew, _binary_forward(_kind, _ew), inputs=('lhs', 'rhs'),
                         infer_shape=same_shape, aliases=_ew_alias))
    _op.backward_node = _kind != 'add'     # elemwise_add's gradient is MXNet's CloneGradient
    _op.sum_of_two = _op.fresh_output = _kind == 'add'
    _op.integer_gradient = _kind != 'mod'        # MXNet's integer modulo has zero gradients
    _op.keeps_layout = _keeps_layout
    _op = register(OpDef(_bc, _binary_forward(_kind, _bc), inputs=('lhs', 'rhs'),
                         infer_shape=_broadcast_shape, aliases=_bc_alias))
    _op.fresh_output, _op.integer_gradient = _kind == 'add', _kind != 'mod'


def _add_n(p, *args):
    """Sum of any number of same-shape arrays."""
    out = args[0]
    for a in args[1:]:
        out = out + a
    return out


register(OpDef('add_n', _add_n, params={'num_args': Int()}, variadic='num_args',
               infer_shape=same_shape, aliases=('ElementWiseSum',))).keeps_layout = _keeps_layout


# ---------------------------------------------------------------------------------------------
# Scalar operators: `scalar` is cast to the array's dtype first.
# ---------------------------------------------------------------------------------------------
def cast_scalar(x, scalar):
    """The scalar as the array's dtype sees it (MXNet casts before computing)."""
    if x.dtype.is_floating_point:
        return scalar
    if x.dtype == torch.bool:
        return bool(scalar)
    return int(scalar)       # C cast: truncation toward zero


def _reverse(fn):
    return lambda x, s: fn(torch.full_like(x, s), x)


_SCALAR_FUNCS = {
    'plus': lambda x, s: x + s, 'minus': lambda x, s: x - s, 'rminus': lambda x, s: s - x,
    'mul': lambda x, s: x * s, 'div': lambda x, s: _div(x, s), 'rdiv': _reverse(_div),
    'mod': lambda x, s: _mod(x, torch.full_like(x, s)), 'rmod': _reverse(_mod),
    'power': torch.pow, 'rpower': lambda x, s: torch.pow(s, x),
    'maximum': lambda x, s: torch.clamp(x, min=s), 'minimum': lambda x, s: torch.clamp(x, max=s),
    'hypot': lambda x, s: torch.hypot(x, torch.full_like(x, s)),
}
def _bool_like(x, scalar):
    """The truth value of `scalar` as a 0-d bool tensor on x's device."""
    return torch.tensor(bool(scalar), device=x.device)


_SCALAR_CMP = {
    'equal': torch.eq, 'not_equal': torch.ne, 'greater': torch.gt, 'greater_equal': torch.ge,
    'lesser': torch.lt, 'lesser_equal': torch.le,
    'logical_and': lambda x, s: torch.logical_and(x != 0, _bool_like(x, s)),
    'logical_or': lambda x, s: torch.logical_or(x != 0, _bool_like(x, s)),
    'logical_xor': lambda x, s: torch.logical_xor(x != 0, _bool_like(x, s)),
}


def _scalar_forward(name, fn, cast):
    def forward(p, data):
        out = fn(data, cast_scalar(data, p.scalar))
        return out.to(data.dtype) if cast or out.dtype != data.dtype else out
    forward.__name__ = name
    return forward


def _camel(kind):
    return ''.join(part.capitalize() for part in kind.split('_'))


_SCALAR_ALIAS = {'rminus': '_RMinusScalar', 'rdiv': '_RDivScalar', 'rmod': '_RModScalar',
                 'rpower': '_RPowerScalar'}

for _kind, _fn in list(_SCALAR_FUNCS.items()) + list(_SCALAR_CMP.items()):
    _name = '_%s_scalar' % _kind
    _alias = _SCALAR_ALIAS.get(_kind, '_%sScalar' % _camel(_kind))
    register(OpDef(_name, _scalar_forward(_name, _fn, _kind in _SCALAR_CMP),
                   params={'scalar': Float(1.0), 'is_int': Bool(True)},
                   infer_shape=same_shape, aliases=(_alias,))).integer_gradient = \
        _kind not in ('mod', 'rmod')


# ---------------------------------------------------------------------------------------------
# Unary math. Results keep the input dtype.
# ---------------------------------------------------------------------------------------------
def _round_half_away(x):
    if not x.is_floating_point():       # integers are already whole (and exact past 2^24)
        return x.clone()
    return torch.sign(x) * torch.floor(torch.abs(x) + 0.5)


def _rint(x):
    if not x.is_floating_point():
        return x.clone()
    f = torch.floor(x)
    return torch.where(x - f <= 0.5, f, torch.ceil(x))


class _MXNetArcHyperbolic(torch.autograd.Function):
    """arcsinh / arccosh with MXNet 1.9.1's gradients: the first derivative is exact
    (1/sqrt(x^2 +- 1)), but the derivative of that first-derivative node with respect to x has
    the opposite sign of the true second derivative (MXNet's rule, which its own tests expect):
    +x/(x^2 +- 1)^1.5."""

    @staticmethod
    def forward(ctx, x, sign):  # pylint: disable=arguments-differ
        ctx.save_for_backward(x)
        ctx.sign = sign
        return torch.asinh(x) if sign > 0 else torch.acosh(x)

    @staticmethod
    def backward(ctx, dy):  # pylint: disable=arguments-differ
        x, = ctx.saved_tensors
        slope = torch.rsqrt(x * x + ctx.sign)
        return dy * (2 * slope.detach() - slope), None


class _MXNetCbrt(torch.autograd.Function):
    """cbrt with MXNet's gradient dy / (3 * cbrt(x)^2): +inf (not nan) at zero."""

    @staticmethod
    def forward(ctx, x):  # pylint: disable=arguments-differ
        y = torch.sign(x) * torch.abs(x).pow(1.0 / 3)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, dy):  # pylint: disable=arguments-differ
        y, = ctx.saved_tensors
        return dy / (3 * y * y)


def _mx_digamma(x):
    """MXNet's psi (Cephes): +inf at zero and the negative integers (torch: -inf / nan)."""
    pole = (x <= 0) & (x == torch.floor(x))
    return torch.where(pole, torch.full_like(x, math.inf), torch.digamma(x))


def _mx_gamma_value(x):
    g = torch.exp(torch.lgamma(x)) * _gamma_sign(x)
    g = torch.where(x == 0, torch.copysign(torch.full_like(x, math.inf), x), g)
    return torch.where((x < 0) & (x == torch.floor(x)), torch.full_like(x, math.nan), g)


class _MXNetGamma(torch.autograd.Function):
    """gamma (nan at the negative integers, +-inf at +-0) and its gradient gamma(x) * psi(x)."""

    @staticmethod
    def forward(ctx, x):  # pylint: disable=arguments-differ
        y = _mx_gamma_value(x)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, dy):  # pylint: disable=arguments-differ
        x, y = ctx.saved_tensors
        return dy * y * _mx_digamma(x)


class _MXNetGammaln(torch.autograd.Function):
    """lgamma with MXNet's gradient psi(x) (+inf at the poles)."""

    @staticmethod
    def forward(ctx, x):  # pylint: disable=arguments-differ
        ctx.save_for_backward(x)
        return torch.lgamma(x)

    @staticmethod
    def backward(ctx, dy):  # pylint: disable=arguments-differ
        x, = ctx.saved_tensors
        return dy * _mx_digamma(x)


_UNARY = {
    'abs': torch.abs, 'sign': torch.sign, 'round': _round_half_away, 'rint': _rint,
    'ceil': torch.ceil, 'floor': torch.floor, 'trunc': torch.trunc, 'fix': torch.trunc,
    'square': torch.square, 'sqrt': torch.sqrt, 'rsqrt': torch.rsqrt,
    'cbrt': _MXNetCbrt.apply,
    'rcbrt': lambda x: 1.0 / (torch.sign(x) * torch.abs(x).pow(1.0 / 3)),
    'exp': torch.exp, 'expm1': torch.expm1, 'log': torch.log, 'log10': torch.log10,
    'log2': torch.log2, 'log1p': torch.log1p, 'sin': torch.sin, 'cos': torch.cos,
    'tan': torch.tan, 'arcsin': torch.asin, 'arccos': torch.acos, 'arctan': torch.atan,
    'sinh': torch.sinh, 'cosh': torch.cosh, 'tanh': torch.tanh, 'arctanh': torch.atanh,
    'arcsinh': lambda x: _MXNetArcHyperbolic.apply(x, 1.0),
    'arccosh': lambda x: _MXNetArcHyperbolic.apply(x, -1.0),
    'degrees': lambda x: x * (180.0 / math.pi), 'radians': lambda x: x * (math.pi / 180.0),
    'relu': torch.relu, 'sigmoid': torch.sigmoid, 'softsign': lambda x: x / (1 + torch.abs(x)),
    'reciprocal': torch.reciprocal, 'negative': torch.neg, 'erf': torch.erf,
    'erfinv': torch.erfinv, 'gamma': _MXNetGamma.apply,
    'gammaln': _MXNetGammaln.apply, 'logical_not': lambda x: (x == 0),
    'zeros_like': lambda x: torch.zeros_like(x).detach(),
    'ones_like': lambda x: torch.ones_like(x).detach(),
}


def _gamma_sign(x):
    # Gamma is negative on (-2k-1, -2k) for k >= 0
    neg = (x < 0) & (torch.remainder(torch.floor(x), 2) != 0)
    return torch.where(neg, -torch.ones_like(x), torch.ones_like(x))


def _unary_forward(name, fn):
    def forward(p, data):
        out = fn(data)
        return out if out.dtype == data.dtype else out.to(data.dtype)
    forward.__name__ = name
    return forward


for _name, _fn in _UNARY.items():
    register(OpDef(_name, _unary_forward(_name, _fn), infer_shape=same_shape)) \
        .keeps_layout = _keeps_layout
get_op('relu').pointwise_act = lambda p: ('relu', [])


def _identity(p, data):
    return data.clone()


# graph passes insert it to keep two outputs apart (symbol/optimize.py)
COPY_OP = register(OpDef('_copy', _identity, infer_shape=same_shape, aliases=('identity',)))


def _identity_like_rhs(p, lhs, rhs):
    """lhs unchanged; rhs only lends its shape (inference runs both ways) and gets no gradient."""
    require(lhs.shape == rhs.shape, '_identity_with_attr_like_rhs: lhs of shape %s must have '
            'the shape of rhs %s', fmt(lhs.shape), fmt(rhs.shape))
    return lhs.clone()


register(OpDef('_identity_with_attr_like_rhs', _identity_like_rhs, inputs=('lhs', 'rhs'),
               infer_shape=same_shape))


def _hard_sigmoid(p, data):
    return torch.clamp(data * p.alpha + p.beta, 0, 1)


register(OpDef('hard_sigmoid', _hard_sigmoid, params={'alpha': Float(0.2), 'beta': Float(0.5)},
               infer_shape=same_shape))


def _clip(p, data):
    # integer data keeps its dtype: the bounds are cast to it first
    return torch.clamp(data, cast_scalar(data, p.a_min), cast_scalar(data, p.a_max))


def _clip_act(p):
    """clip with ordered bounds (ReLU6) is hardtanh, a fused convolution's post-operation."""
    return ('hardtanh', [float(p.a_min), float(p.a_max)]) if p.a_min <= p.a_max else None


register(OpDef('clip', _clip, params={'a_min': Float(), 'a_max': Float()},
               infer_shape=same_shape)).pointwise_act = _clip_act


def _smooth_l1(p, data):
    sigma2 = p.scalar * p.scalar
    absx = torch.abs(data)
    return torch.where(absx < 1.0 / sigma2, 0.5 * sigma2 * data * data, absx - 0.5 / sigma2)


register(OpDef('smooth_l1', _smooth_l1, params={'scalar': Float(1.0)}, infer_shape=same_shape))
