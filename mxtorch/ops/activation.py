"""LeakyReLU and its variants (leaky, prelu, elu, selu, gelu, rrelu)."""
import torch
import torch.nn.functional as F

from .params import Enum, Float
from .registry import OpDef, register
from .shapes import merge, require

_SELU_SCALE = 1.0507009873554805
_SELU_ALPHA = 1.6732632423543772


class _MXNetSelu(torch.autograd.Function):
    """selu with MXNet 1.9.1's gradient: for x <= 0 it is scale * (y + alpha), y the output
    (the exact derivative would be y + scale * alpha); kept so training matches MXNet."""

    @staticmethod
    def forward(ctx, data):
        out = F.selu(data)
        ctx.save_for_backward(data, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        data, out = ctx.saved_tensors
        return grad * torch.where(data > 0, _SELU_SCALE, _SELU_SCALE * (out + _SELU_ALPHA))


def _gamma_view(data, gamma):
    """The shape gamma takes against data (MXNet's rule: gamma's dims, from its last, match data's
    axis 1 then axis 0 where the sizes agree or gamma's is 1; every other axis broadcasts)."""
    require(len(data) >= 2, 'LeakyReLU: act_type=prelu needs data with a channel axis (at '
            'least 2-D), got %d-D data', len(data))
    view = [1] * len(data)
    s = len(gamma) - 1
    for i in (1, 0):
        if s >= 0 and gamma[s] in (1, data[i]):
            view[i] = gamma[s]
            s -= 1
    require(s < 0 and all(gamma), 'LeakyReLU: act_type=prelu needs gamma of shape (%d,) (one '
            'slope per channel), (1,) or matching data\'s leading axes, got %s', data[1], gamma)
    return tuple(view)


def _rrelu(p, data, train):
    """Per-element slopes ~ U(lower_bound, upper_bound) in training, their mean otherwise;
    returns (output, slopes)."""
    if train:
        slope = torch.empty_like(data).uniform_(p.lower_bound, p.upper_bound)
        return torch.where(data > 0, data, data * slope), slope
    mean = (p.lower_bound + p.upper_bound) / 2
    return F.leaky_relu(data, mean), torch.full_like(data, mean)


def _leaky_relu(p, data, gamma=None, *, train):
    """leaky: x > 0 ? x : slope * x; prelu: per-channel learned slope gamma (axis 1);
    elu: x > 0 ? x : slope * (e^x - 1); selu (MXNet's gradient); gelu (exact, with erf);
    rrelu: random slope."""
    act = p.act_type
    if act == 'leaky':
        return F.leaky_relu(data, p.slope)
    if act == 'prelu':
        slope = gamma.reshape(_gamma_view(tuple(data.shape), tuple(gamma.shape)))
        return torch.where(data > 0, data, data * slope)
    if act == 'elu':
        return F.elu(data, p.slope)
    if act == 'selu':
        return _MXNetSelu.apply(data)
    if act == 'gelu':
        return F.gelu(data)
    return _rrelu(p, data, train)


def _leaky_relu_shape(p, ins, outs):
    data = ins[0]
    for out in outs:
        data = merge(data, out)
    if data is None:
        return ins, outs
    new = [data]
    if p.act_type == 'prelu':       # MXNet's inference takes any gamma; the forward checks it
        require(len(data) >= 2, 'LeakyReLU: act_type=prelu needs data with a channel axis (at '
                'least 2-D), got %d-D data', len(data))
        new.append(ins[1] if ins[1] is not None else (data[1],))
    return new, [data] * len(outs)


register(OpDef('LeakyReLU', _leaky_relu,
               params={'act_type': Enum(('elu', 'gelu', 'leaky', 'prelu', 'rrelu', 'selu'),
                                        'leaky'),
                       'slope': Float(0.25), 'lower_bound': Float(0.125),
                       'upper_bound': Float(0.334)},
               inputs=lambda p: ('data', 'gamma') if p.act_type == 'prelu' else ('data',),
               outputs=lambda p: ('output', 'mask') if p.act_type == 'rrelu' else ('output',),
               mode_dependent=True, infer_shape=_leaky_relu_shape,
               init_hints={'gamma': '["Constant", {"value": 0.25}]'}))
