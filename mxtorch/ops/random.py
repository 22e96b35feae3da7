"""Random sampling and creation operators (no array inputs; they need the target device)."""
import torch

from ..base import np_dtype, torch_dtype
from .params import DType, Float, Int, Shape, Bool
from .registry import OpDef, register
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
                       'dtype': DType('None', choices=_FLOATS)},
               infer_shape=_created_shape, infer_type=_created_type('float32'),
               aliases=('random_uniform', 'uniform')))
register(OpDef('_random_normal', _normal, inputs=(), creation=True,
               params={'loc': Float(0.0), 'scale': Float(1.0), 'shape': Shape(None),
                       'dtype': DType('None', choices=_FLOATS)},
               infer_shape=_created_shape, infer_type=_created_type('float32'),
               aliases=('random_normal', 'normal')))
register(OpDef('_random_randint', _randint, inputs=(), creation=True,
               params={'low': Int(), 'high': Int(), 'shape': Shape(None),
                       'dtype': DType('None', choices=('None', 'int32', 'int64'))},
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


register(OpDef('_shuffle', _shuffle, infer_shape=same_shape, aliases=('shuffle',)))


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
