"""Random sampling and creation operators (no array inputs; they need the target device)."""
import math

import torch

from ..base import np_dtype, torch_dtype
from .params import DType, Float, Int, Shape, Bool, Str
from .registry import OpDef, canonical_ops, register
from .shapes import known, merge, same_shape

_FLOATS = ('None', 'float16', 'float32', 'float64')


def _out_dtype(p, default='float32'):
    name = p.dtype if p.dtype not in (None, 'None') else default
    return torch_dtype(name)


def _shape(p, out_shape=None):
    if out_shape is not None:
        return tuple(out_shape)
    return tuple(p.shape) if p.shape else (1,)


def _uniform(p, device, out_shape):
    out = torch.empty(_shape(p, out_shape), dtype=_out_dtype(p), device=device)
    return out.uniform_(p.low, p.high)


def _normal(p, device, out_shape):
    out = torch.empty(_shape(p, out_shape), dtype=_out_dtype(p), device=device)
    return out.normal_(p.loc, p.scale)


def _randint(p, device, out_shape):
    return torch.randint(p.low, p.high, _shape(p, out_shape), dtype=_out_dtype(p, 'int32'),
                         device=device)


def _created_shape(p, ins, outs):
    return ins, [merge(outs[0], _shape(p))]


def _created_type(name):
    def rule(p, ins, outs):
        return ins, [np_dtype(p.dtype if p.dtype not in (None, 'None') else name)]
    return rule


register(OpDef('_random_uniform', _uniform, inputs=(), creation=True,
               params={'low': Float(0.0), 'high': Float(1.0), 'shape': Shape(None),
                       'dtype': DType('None', choices=_FLOATS), 'ctx': Str('')},
               infer_shape=_created_shape, infer_type=_created_type('float32'),
               aliases=('random_uniform', 'uniform')))
register(OpDef('_random_normal', _normal, inputs=(), creation=True,
               params={'loc': Float(0.0), 'scale': Float(1.0), 'shape': Shape(None),
                       'dtype': DType('None', choices=_FLOATS), 'ctx': Str('')},
               infer_shape=_created_shape, infer_type=_created_type('float32'),
               aliases=('random_normal', 'normal')))
register(OpDef('_random_randint', _randint, inputs=(), creation=True,
               params={'low': Int(), 'high': Int(), 'shape': Shape(None),
                       'dtype': DType('None', choices=('None', 'int32', 'int64')),
                       'ctx': Str('')},
               infer_shape=_created_shape, infer_type=_created_type('int32'),
               aliases=('random_randint',)))


def _multinomial(p, data):
    """Draw `shape` samples per row of a probability distribution (last axis)."""
    n = 1
    for d in p.shape:
        n *= d
    probs = data.reshape(-1, data.shape[-1]).float()
    draws = torch.multinomial(probs, max(n, 1), replacement=True)
    out_shape = tuple(data.shape[:-1]) + tuple(p.shape)
    idx = draws.reshape(out_shape if out_shape else (1,))
    samples = idx.to(torch_dtype(p.dtype))
    if not p.get_prob:
        return samples
    logp = torch.log(torch.gather(probs, 1, draws)).reshape(idx.shape).to(data.dtype)
    return samples, logp


register(OpDef('_sample_multinomial', _multinomial,
               params={'shape': Shape(()), 'get_prob': Bool(False),
                       'dtype': DType('int32', choices=('float16', 'float32', 'float64',
                                                        'int32', 'uint8'))},
               # MXNet's default names: output0 (samples), output1 (log-probabilities)
               outputs=lambda p: ('output0', 'output1') if p.get_prob else ('output',),
               infer_type=lambda p, ins, outs: (ins, [np_dtype(p.dtype)] + ins[:1] * (len(outs) - 1)),
               aliases=('sample_multinomial',)))


def _shuffle(p, data):
    """A copy of data with its first axis randomly permuted."""
    return data[torch.randperm(data.shape[0], device=data.device)]


register(OpDef('_shuffle', _shuffle, infer_shape=same_shape, aliases=('shuffle',),
               differentiable=False))


# ---------------------------------------------------------------------------------------------
# _sample_uniform / _sample_normal: one set of `shape` draws per element of the parameter arrays
# (output shape = parameter shape + shape); no gradient flows to the parameters, as in MXNet.
# ---------------------------------------------------------------------------------------------
def _sample_forward(draw):
    def forward(p, first, second):
        out_shape = tuple(first.shape) + tuple(p.shape)
        a = first.detach().to(torch.float64).reshape(tuple(first.shape) + (1,) * len(p.shape))
        b = second.detach().to(torch.float64).reshape(a.shape)
        out = torch.empty(out_shape, dtype=torch.float64, device=first.device)
        return draw(out, a, b).to(_out_dtype(p))
    return forward


def _sample_shape(p, ins, outs):
    params = merge(ins[0], ins[1])
    ins = [params, params]
    if known(params):
        outs = [merge(outs[0], tuple(params) + tuple(p.shape))]
    return ins, outs


def _sample_type(p, ins, outs):
    return ins, [np_dtype(p.dtype if p.dtype not in (None, 'None') else 'float32')]


register(OpDef('_sample_uniform', _sample_forward(lambda out, low, high:
                                                  out.uniform_() * (high - low) + low),
               inputs=('low', 'high'),
               params={'shape': Shape(()), 'dtype': DType('None', choices=_FLOATS)},
               infer_shape=_sample_shape, infer_type=_sample_type,
               aliases=('sample_uniform',)))
register(OpDef('_sample_normal', _sample_forward(lambda out, mu, sigma:
                                                 out.normal_() * sigma + mu),
               inputs=('mu', 'sigma'),
               params={'shape': Shape(()), 'dtype': DType('None', choices=_FLOATS)},
               infer_shape=_sample_shape, infer_type=_sample_type,
               aliases=('sample_normal',)))


# ---------------------------------------------------------------------------------------------
# Exponential, gamma, Poisson, negative binomial and generalized negative binomial draws, with
# MXNet's parameterisations: exponential(lam = rate), gamma(alpha = shape, beta = scale),
# poisson(lam), negative_binomial(k failures, p success probability: gamma(k, (1-p)/p) mixed
# Poisson), generalized_negative_binomial(mu mean, alpha dispersion: variance mu + alpha*mu^2).
# The draws are made in float64 from torch's default generator (seeded by mx.random.seed) and
# cast to the output dtype; the discrete ones are float-valued, as in MXNet.
# ---------------------------------------------------------------------------------------------
def _exponential_draw(shape, lam):
    return torch.empty(shape, dtype=torch.float64, device=lam.device).exponential_() / lam


def _gamma_draw(shape, alpha, beta):
    return torch._standard_gamma(alpha.expand(shape).contiguous()) * beta


def _poisson_draw(shape, lam):
    return torch.poisson(lam.expand(shape).contiguous())


def _negative_binomial_draw(shape, k, p):
    return _poisson_draw(shape, _gamma_draw(shape, k, (1 - p) / p))


def _generalized_negative_binomial_draw(shape, mu, alpha):
    safe = torch.where(alpha > 0, alpha, torch.ones_like(alpha))
    rate = _gamma_draw(shape, 1 / safe, safe * mu)
    rate = torch.where(alpha > 0, rate, mu.expand(shape))
    return _poisson_draw(shape, rate)


# name: (draw, scalar parameter names and defaults (the Param for each))
_DISTRIBUTIONS = {
    'exponential': (_exponential_draw, (('lam', Float(1.0)),)),
    'gamma': (_gamma_draw, (('alpha', Float(1.0)), ('beta', Float(1.0)))),
    'poisson': (_poisson_draw, (('lam', Float(1.0)),)),
    'negative_binomial': (_negative_binomial_draw, (('k', Int(1)), ('p', Float(1.0)))),
    'generalized_negative_binomial': (_generalized_negative_binomial_draw,
                                      (('mu', Float(1.0)), ('alpha', Float(1.0)))),
}


def _scalar_sampler(draw, names):
    def forward(p, device, out_shape):
        shape = _shape(p, out_shape)
        values = [torch.tensor(float(p[n]), dtype=torch.float64, device=device) for n in names]
        return draw(shape, *values).to(_out_dtype(p))
    forward.__doc__ = draw.__doc__
    return forward


def _array_sampler(draw):
    def forward(p, *params):
        first = params[0]
        out_shape = tuple(first.shape) + tuple(p.shape)
        bshape = tuple(first.shape) + (1,) * len(p.shape)
        values = [x.detach().to(torch.float64).reshape(bshape) for x in params]
        return draw(out_shape, *values).to(_out_dtype(p))
    return forward


def _array_sample_shape(p, ins, outs):
    params = None
    for s in ins:
        params = merge(params, s)
    if known(params):
        outs = [merge(outs[0], tuple(params) + tuple(p.shape))]
    return [params] * len(ins), outs


def _array_sample_type(p, ins, outs):
    """The parameters share one dtype; the output's is `dtype` (float32 by default)."""
    t = next((x for x in ins if x is not None), None)
    return [t] * len(ins), _sample_type(p, ins, outs)[1]


for _dist, (_draw, _scalars) in _DISTRIBUTIONS.items():
    _names = tuple(n for n, _ in _scalars)
    _params = dict(_scalars)
    _params.update({'shape': Shape(None), 'dtype': DType('None', choices=_FLOATS),
                    'ctx': Str('')})
    register(OpDef('_random_' + _dist, _scalar_sampler(_draw, _names), inputs=(), creation=True,
                   params=_params, infer_shape=_created_shape,
                   infer_type=_created_type('float32'), aliases=('random_' + _dist,)))
    register(OpDef('_sample_' + _dist, _array_sampler(_draw), inputs=_names,
                   params={'shape': Shape(()), 'dtype': DType('None', choices=_FLOATS)},
                   infer_shape=_array_sample_shape, infer_type=_array_sample_type,
                   aliases=('sample_' + _dist,)))


# ---------------------------------------------------------------------------------------------
# _random_pdf_*: the density (or log-density, is_log) of samples under per-element parameters.
# The parameters have shape P and the samples P + S (one set of samples per parameter element;
# for the Dirichlet the last axis, the categories, is shared); the output has the sample's
# shape (for the Dirichlet its shape less the last axis). Gradients flow to the parameters and,
# for the continuous distributions, to the samples (the discrete ones treat the counts as
# constants), as in MXNet. MXNet's conventions: pdf_uniform is 1/(high-low) everywhere (no range
# check); pdf_gamma's beta is a rate (unlike the gamma sampler's scale).
# ---------------------------------------------------------------------------------------------
def _log_binomial_coef(x, k):
    """log(Gamma(x + k) / (Gamma(k) * Gamma(x + 1)))."""
    return torch.lgamma(x + k) - torch.lgamma(k) - torch.lgamma(x + 1)


def _lp_uniform(x, low, high):
    return -torch.log(high - low) + x * 0


def _lp_normal(x, mu, sigma):
    return -0.5 * ((x - mu) / sigma) ** 2 - torch.log(sigma) - 0.5 * math.log(2 * math.pi)


def _lp_gamma(x, alpha, beta):
    return alpha * torch.log(beta) + (alpha - 1) * torch.log(x) - beta * x - torch.lgamma(alpha)


def _lp_exponential(x, lam):
    return torch.log(lam) - lam * x


def _lp_poisson(x, lam):
    x = x.detach()
    return x * torch.log(lam) - lam - torch.lgamma(x + 1)


def _lp_negative_binomial(x, k, p):
    x = x.detach()
    return _log_binomial_coef(x, k) + k * torch.log(p) + x * torch.log1p(-p)


def _lp_generalized_negative_binomial(x, mu, alpha):
    x = x.detach()
    k = 1 / alpha
    am = alpha * mu
    return _log_binomial_coef(x, k) - k * torch.log1p(am) + x * (torch.log(am) - torch.log1p(am))


def _lp_dirichlet(x, alpha):
    return (torch.lgamma(alpha.sum(-1)) - torch.lgamma(alpha).sum(-1)
            + ((alpha - 1) * torch.log(x)).sum(-1))


def _pdf_forward(log_density, dirichlet=False):
    def forward(p, sample, *params):
        extra = sample.dim() - params[0].dim()
        if dirichlet:
            bshape = tuple(params[0].shape[:-1]) + (1,) * extra + tuple(params[0].shape[-1:])
        else:
            bshape = tuple(params[0].shape) + (1,) * extra
        out = log_density(sample, *(x.reshape(bshape) for x in params))
        return out if p.is_log else torch.exp(out)
    return forward


def _pdf_shape(dirichlet):
    def rule(p, ins, outs):
        params = None
        for s in ins[1:]:
            params = merge(params, s)
        sample = ins[0]
        if sample is not None and params is not None and len(sample) >= len(params):
            if dirichlet:
                head = merge(tuple(sample[:len(params) - 1]) + tuple(sample[-1:]), params)
            else:
                head = merge(tuple(sample[:len(params)]), params)
            params = head
        ins = [sample] + [params] * (len(ins) - 1)
        if sample is not None:
            outs = [merge(outs[0], tuple(sample[:-1]) if dirichlet else tuple(sample))]
        return ins, outs
    return rule


_PDFS = {
    'uniform': (_lp_uniform, ('low', 'high')),
    'normal': (_lp_normal, ('mu', 'sigma')),
    'gamma': (_lp_gamma, ('alpha', 'beta')),
    'exponential': (_lp_exponential, ('lam',)),
    'poisson': (_lp_poisson, ('lam',)),
    'negative_binomial': (_lp_negative_binomial, ('k', 'p')),
    'generalized_negative_binomial': (_lp_generalized_negative_binomial, ('mu', 'alpha')),
    'dirichlet': (_lp_dirichlet, ('alpha',)),
}

for _dist, (_lp, _names) in _PDFS.items():
    _is_dir = _dist == 'dirichlet'
    register(OpDef('_random_pdf_' + _dist, _pdf_forward(_lp, _is_dir),
                   inputs=('sample',) + _names, params={'is_log': Bool(False)},
                   infer_shape=_pdf_shape(_is_dir), aliases=('random_pdf_' + _dist,)))


# every sampler above draws from the random stream (the densities _random_pdf_* do not)
for _op in canonical_ops().values():
    if _op.name == '_shuffle' or (_op.name.startswith(('_random_', '_sample_')) and
                                  not _op.name.startswith('_random_pdf_')):
        _op.random = True
