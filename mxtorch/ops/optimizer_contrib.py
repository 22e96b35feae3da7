"""MXNet 1.9.1's contrib update operators: AdamW (`_adamw_update`, `_mp_adamw_update`,
`_multi_adamw_update`, `_multi_mp_adamw_update`), multi-tensor LAMB (`_multi_lamb_update`,
`_multi_mp_lamb_update`) and `_contrib_group_adagrad_update`, with the Python front ends
MXNet puts in mx.nd.contrib / mx.sym.contrib (adamw_update, multi_lamb_update, ...).

The math is optimizer_rules'. As in MXNet:

* the AdamW operators take rescale_grad as their last input array (a front end makes one from
  a number) and skip the update (weight and states unchanged) when it is 0, NaN or infinite;
* all their inputs are ordinary inputs in MXNet's positional order, the states (mean, var,
  weight32) being updated in place;
* the multi-tensor operators interleave each weight's inputs (weight_0, grad_0, mean_0,
  var_0[, weight32_0], weight_1, ...) and need one lr / wd / eta / step count per weight;
* `_multi_mp_lamb_update` takes the weight norm from the low-precision weight and updates the
  float32 master copy in place;
* `_contrib_group_adagrad_update` only runs with a row_sparse gradient (the lazy rows), as
  MXNet's CPU kernel; its history holds one value per row, shape (rows, 1).
"""
import math

import numpy as np
import torch

from ..base import MXNetError, np_dtype
from . import optimizer_rules as rules
from .optimizer_ops import FloatTuple, _all_same_shape, _as_out, _bound, _no_grad, _single
from .params import Bool, Float, Int, Shape
from .registry import OpDef, register
from .shapes import merge


def _f32(*values):
    """Hyper-parameters as MXNet's kernels see them: rounded to float32 (so that 1 - beta2 is
    the float32 kernel's number, not the double one)."""
    out = [float(np.float32(v)) for v in values]
    return out if len(out) > 1 else out[0]


def _rescale_of(tensor):
    """The rescale_grad input as a float, None when the update is to be skipped."""
    value = float(tensor.reshape(-1)[0]) if tensor.numel() else float('nan')
    return value if math.isfinite(value) and value != 0 else None


# ---- AdamW -----------------------------------------------------------------------------------
def _adamw(p, weight, grad, mean, var, rescale_grad, weight32=None):
    rescale = _rescale_of(rescale_grad)
    target = weight.clone() if weight32 is None else weight32
    if rescale is None:
        return target if weight32 is None else _as_out(target, weight)
    clip = _bound(p.clip_gradient)
    if weight32 is None:     # MXNet's kernel rescales and clips the grad array itself
        rules.scaled_grads_([grad], rescale, clip)
        rescale, clip = 1.0, None
    else:
        grad = grad.float()
    rules.adamw([target], [grad], [mean], [var], [_f32(p.lr)], [_f32(p.wd)], [_f32(p.eta)],
                *_f32(p.beta1, p.beta2, p.epsilon), rescale, clip)
    return target if weight32 is None else _as_out(target, weight)


def _adamw_update(p, weight, grad, mean, var, rescale_grad):
    """AdamW: g = clip(rescale_grad * grad); mean, var moving averages of g and g^2;
    w -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * w). Skipped when rescale_grad is 0,
    NaN or infinite."""
    return _adamw(p, weight, grad, mean, var, rescale_grad)


def _mp_adamw_update(p, weight, grad, mean, var, weight32, rescale_grad):
    """_adamw_update on the float32 master copy weight32 (updated in place), returned in the
    weight's dtype."""
    return _adamw(p, weight, grad, mean, var, rescale_grad, weight32)


def _adamw_shape(p, ins, outs):
    new_ins, new_outs = _all_same_shape(p, ins[:-1], outs)
    return new_ins + [ins[-1]], new_outs


def _adamw_type(n_same):
    """The first n_same inputs share the output's dtype; the rest are float32."""
    def rule(p, ins, outs):
        t = next((x for x in list(ins[:n_same]) + list(outs) if x is not None), None)
        return [t] * n_same + [np_dtype('float32')] * (len(ins) - n_same), [t] * len(outs)
    return rule


_ADAMW = dict(lr=Float(), beta1=Float(0.9), beta2=Float(0.999), epsilon=Float(1e-8),
              wd=Float(0.0), eta=Float(), clip_gradient=Float(-1.0))
register(OpDef('_adamw_update', _no_grad(_adamw_update), params=_ADAMW,
               inputs=('weight', 'grad', 'mean', 'var', 'rescale_grad'),
               infer_shape=_adamw_shape, infer_type=_adamw_type(4), head_grad='zero'))
register(OpDef('_mp_adamw_update', _no_grad(_mp_adamw_update), params=_ADAMW,
               inputs=('weight', 'grad', 'mean', 'var', 'weight32', 'rescale_grad'),
               infer_shape=_adamw_shape, infer_type=_adamw_type(2), head_grad='zero'))


# ---- multi-tensor AdamW and LAMB ---------------------------------------------------------------
def _check_lists(p, count_key, lists):
    n = getattr(p, count_key)
    for key, what in lists:
        if len(getattr(p, key)) != n:
            raise MXNetError('Number of %s is inconsistent with %s parameter passed. Expected '
                             'number of %s: %d, and got %d'
                             % (what, count_key, what, n, len(getattr(p, key))))
    return n


def _names(kinds, count_key, tail=()):
    return lambda p: tuple('%s_%d' % (k, i) for i in range(getattr(p, count_key))
                           for k in kinds) + tail


def _outputs(count_key):
    def names(p):
        n = getattr(p, count_key)
        return ('output',) if n == 1 else tuple('output%d' % i for i in range(n))
    return names


def _multi_shape(stride, count_key, tail=0):
    def rule(p, ins, outs):
        ins, outs = list(ins), list(outs)
        for i in range(getattr(p, count_key)):
            s = None
            for x in ins[i * stride:(i + 1) * stride] + [outs[i]]:
                s = merge(s, x)
            ins[i * stride:(i + 1) * stride] = [s] * stride
            outs[i] = s
        return ins, outs
    return rule


def _multi_type(stride, count_key, mp):
    """Without mp every input and output shares one dtype (MXNet's ElemwiseType); with mp each
    weight, grad and output share one and mean, var, weight32 (and rescale_grad) are float32."""
    def rule(p, ins, outs):
        ins, outs = list(ins), list(outs)
        if not mp:
            t = next((x for x in ins + outs if x is not None), None)
            return [t] * len(ins), [t] * len(outs)
        for i in range(getattr(p, count_key)):
            group = ins[i * stride:i * stride + 2] + [outs[i]]
            t = next((x for x in group if x is not None), None)
            ins[i * stride:i * stride + 2] = [t, t]
            ins[i * stride + 2:(i + 1) * stride] = [np_dtype('float32')] * (stride - 2)
            outs[i] = t
        ins[getattr(p, count_key) * stride:] = [np_dtype('float32')] * (
            len(ins) - getattr(p, count_key) * stride)
        return ins, outs
    return rule


def _split(inputs, stride, n):
    groups = [inputs[i * stride:(i + 1) * stride] for i in range(n)]
    return [list(col) for col in zip(*groups)] if groups else [[]] * stride


def _finish(outs):
    return tuple(outs) if len(outs) > 1 else outs[0]


def _multi_adamw(mp):
    stride = 5 if mp else 4

    def forward(p, *inputs):
        n = _check_lists(p, 'num_weights', [('lrs', 'learning rates'), ('wds', 'weight decays'),
                                            ('etas', 'learning rates schedule multiplier')])
        cols = _split(inputs[:-1], stride, n)
        weights, grads, means, variances = cols[:4]
        targets = cols[4] if mp else [w.clone() for w in weights]
        rescale = _rescale_of(inputs[-1])
        if rescale is not None:
            rules.adamw(targets, [g.float() for g in grads] if mp else grads, means, variances,
                        p.lrs, p.wds, p.etas, *_f32(p.beta1, p.beta2, p.epsilon), rescale,
                        _bound(p.clip_gradient), interpolate=True)
        return _finish([_as_out(t, w) for t, w in zip(targets, weights)] if mp else targets)
    forward.__doc__ = ('_%sadamw_update over num_weights weights (inputs interleaved per weight, '
                       'rescale_grad last), with per-weight lrs, wds and etas.'
                       % ('mp_' if mp else ''))
    return forward


def _multi_lamb(mp):
    stride = 5 if mp else 4

    def forward(p, *inputs):
        n = _check_lists(p, 'num_tensors', [('learning_rates', 'learning rates'),
                                            ('wds', 'weight decays'),
                                            ('step_count', 'step counts')])
        if n > 45:
            raise MXNetError('Invalid number of tensors, the maximum value is 45, and got %d' % n)
        cols = _split(inputs, stride, n)
        weights, grads, means, variances = cols[:4]
        targets = cols[4] if mp else [w.clone() for w in weights]
        u = rules.lamb_phase1(targets, [g.float() for g in grads] if mp else grads, means,
                              variances, p.wds, p.step_count, *_f32(p.beta1, p.beta2, p.epsilon),
                              p.bias_correction, p.rescale_grad, _bound(p.clip_gradient))
        # the norms in float32; r1 from the (low-precision) weight itself, its squares rounded
        # to the weight's dtype, as MXNet's kernel (multi_sum_sq)
        r1 = [(w * w).float().sum().sqrt() for w in weights]
        r2 = [torch.linalg.vector_norm(x.float()) for x in u]
        rules.lamb_phase2(targets, u, r1, r2, p.learning_rates, _bound(p.lower_bound),
                          _bound(p.upper_bound))
        return _finish([_as_out(t, w) for t, w in zip(targets, weights)] if mp else targets)
    forward.__doc__ = ('LAMB over num_tensors weights (inputs interleaved per weight), with '
                       'per-weight learning_rates, wds and step_count%s.'
                       % ('; the float32 master weight32 is updated in place' if mp else ''))
    return forward


_MULTI_ADAMW = dict(lrs=FloatTuple(), beta1=Float(0.9), beta2=Float(0.999),
                    epsilon=Float(1e-8), wds=FloatTuple(), etas=FloatTuple(),
                    clip_gradient=Float(-1.0), num_weights=Int(1, count=True))
_MULTI_LAMB = dict(learning_rates=FloatTuple(), beta1=Float(0.9), beta2=Float(0.999),
                   epsilon=Float(1e-6), wds=FloatTuple(), rescale_grad=Float(1.0),
                   lower_bound=Float(-1.0), upper_bound=Float(-1.0), clip_gradient=Float(-1.0),
                   bias_correction=Bool(True), step_count=Shape(),
                   num_tensors=Int(1, count=True))
for _mp in (False, True):
    _kinds = ('weight', 'grad', 'mean', 'var') + (('weight32',) if _mp else ())
    _pre = '_multi_mp_' if _mp else '_multi_'
    register(OpDef(_pre + 'adamw_update', _no_grad(_multi_adamw(_mp)), params=_MULTI_ADAMW,
                   inputs=_names(_kinds, 'num_weights', ('rescale_grad',)),
                   outputs=_outputs('num_weights'),
                   infer_shape=_multi_shape(len(_kinds), 'num_weights'),
                   infer_type=_multi_type(len(_kinds), 'num_weights', _mp), head_grad='zero'))
    register(OpDef(_pre + 'lamb_update', _no_grad(_multi_lamb(_mp)), params=_MULTI_LAMB,
                   inputs=_names(_kinds, 'num_tensors'), outputs=_outputs('num_tensors'),
                   infer_shape=_multi_shape(len(_kinds), 'num_tensors'),
                   infer_type=_multi_type(len(_kinds), 'num_tensors', _mp), head_grad='zero'))


# ---- group AdaGrad -----------------------------------------------------------------------------
def _group_adagrad_update(p, weight, grad, history):
    """AdaGrad with one rate per row: g = clip(rescale_grad * grad); history += the mean of g^2
    over each row; w -= lr * g / sqrt(history + epsilon)."""
    new = weight.clone()
    rules.group_adagrad([new], [grad], [history], [p.lr], p.epsilon, p.rescale_grad,
                        _bound(p.clip_gradient))
    return new


def _group_adagrad_shape(p, ins, outs):
    s = merge(merge(ins[0], ins[1]), outs[0])
    history = ins[2]
    if s is not None and history is not None and s[0] and history[0] and s[0] != history[0]:
        raise MXNetError('_contrib_group_adagrad_update: history has %d rows, weight %d'
                         % (history[0], s[0]))
    return [s, s, history], [s]


_single('_contrib_group_adagrad_update', _group_adagrad_update, ('weight', 'grad'),
        ('history',), params=dict(lr=Float(), rescale_grad=Float(1.0),
                                  clip_gradient=Float(-1.0), epsilon=Float(1e-5)),
        shape=_group_adagrad_shape)


# ---- Python front ends (mx.nd.contrib / mx.sym.contrib) --------------------------------------
def _rescale_array(rescale_grad, ctx):
    from ..ndarray.ndarray import NDArray, full
    if isinstance(rescale_grad, NDArray):
        return rescale_grad.as_in_context(ctx)
    return full((1,), rescale_grad, ctx=ctx)


def _flat(*lists):
    return [x for group in zip(*lists) for x in group]


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """AdamW step (see `_adamw_update`); rescale_grad may be a number or an NDArray."""
    from ..ndarray import _internal
    return _internal._adamw_update(
        weight=weight, grad=grad, mean=mean, var=var,
        rescale_grad=_rescale_array(rescale_grad, weight.context), lr=lr, eta=eta, beta1=beta1,
        beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient, out=out, name=name,
        **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None,
                    **kwargs):
    """Mixed-precision AdamW step (see `_mp_adamw_update`)."""
    from ..ndarray import _internal
    return _internal._mp_adamw_update(
        weight=weight, grad=grad, mean=mean, var=var, weight32=weight32,
        rescale_grad=_rescale_array(rescale_grad, weight.context), lr=lr, eta=eta, beta1=beta1,
        beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient, out=out, name=name,
        **kwargs)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """AdamW over lists of weights, grads, means and variances."""
    from ..ndarray import _internal
    inputs = _flat(weights, grads, mean, var)
    inputs.append(_rescale_array(rescale_grad, weights[0].context))
    return _internal._multi_adamw_update(*inputs, out=out, num_weights=size or len(weights),
                                         lrs=lrs, wds=wds, etas=etas, name=name, **kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """Mixed-precision AdamW over lists (float32 master copies weights32)."""
    from ..ndarray import _internal
    inputs = _flat(weights, grads, mean, var, weights32)
    inputs.append(_rescale_array(rescale_grad, weights[0].context))
    return _internal._multi_mp_adamw_update(*inputs, out=out, num_weights=size or len(weights),
                                            lrs=lrs, wds=wds, etas=etas, name=name, **kwargs)


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None,
                      num_tensors=0, **kwargs):
    """LAMB over lists of weights, grads, means and variances, with a step count, lr and wd
    per weight."""
    from ..ndarray import _internal
    return _internal._multi_lamb_update(*_flat(weights, grads, mean, var), out=out,
                                        num_tensors=num_tensors or len(weights),
                                        step_count=step_count, learning_rates=lrs, wds=wds,
                                        **kwargs)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds, out=None,
                         num_tensors=0, **kwargs):
    """Mixed-precision LAMB over lists (float32 master copies weights32)."""
    from ..ndarray import _internal
    return _internal._multi_mp_lamb_update(*_flat(weights, grads, mean, var, weights32),
                                           out=out, num_tensors=num_tensors or len(weights),
                                           step_count=step_count, learning_rates=lrs, wds=wds,
                                           **kwargs)


def sym_adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                     epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """Symbolic AdamW step; rescale_grad a Symbol, or a number made into a constant."""
    from ..symbol import _internal, full
    if not hasattr(rescale_grad, 'list_outputs'):
        rescale_grad = full(shape=(1,), val=rescale_grad)
    return _internal._adamw_update(weight=weight, grad=grad, mean=mean, var=var,
                                   rescale_grad=rescale_grad, lr=lr, eta=eta, beta1=beta1,
                                   beta2=beta2, epsilon=epsilon, wd=wd,
                                   clip_gradient=clip_gradient, name=name, **kwargs)


def sym_mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                        beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None,
                        **kwargs):
    """Symbolic mixed-precision AdamW step."""
    from ..symbol import _internal, full
    if not hasattr(rescale_grad, 'list_outputs'):
        rescale_grad = full(shape=(1,), val=rescale_grad)
    return _internal._mp_adamw_update(weight=weight, grad=grad, mean=mean, var=var,
                                      weight32=weight32, rescale_grad=rescale_grad, lr=lr,
                                      eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                                      clip_gradient=clip_gradient, name=name, **kwargs)
