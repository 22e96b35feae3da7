"""Optimizer update operators (sgd_update, adam_update, ...), as MXNet 1.9.1 registers them.

Each returns the new weight (write it back with `out=weight`); the optimizer states it takes
(mom, mean, var, n, g, delta, z, d, v, weight32) are mutated inputs, updated in place by the
forward. As in MXNet, a single-weight operator lists its states as auxiliary states; the
multi-tensor operators (multi_sgd_update, ...) interleave them with the weights
(weight_0, grad_0, mom_0, ...), so there they are ordinary inputs. `lazy_update` only matters
for row-sparse gradients and is accepted and ignored (arrays are dense here). The preloaded_multi_*
variants take lrs and wds as the last two input arrays instead of params; mp_lamb_update_phase1
lists mean, var and weight32 as ordinary inputs so that MXNet's positional order holds.
"""
import numpy as np
import torch

from ..base import np_dtype
from . import optimizer_rules as rules
from .params import Bool, Float, Int, Param
from .registry import OpDef, get_op, register
from .shapes import merge


class FloatTuple(Param):
    """A tuple of floats: "(0.1, 0.2)", "[0.1]", a bare number, or a Python sequence."""
    kind = 'tuple of <float>'

    def _parse(self, value):
        if isinstance(value, str):
            import ast
            text = value.strip()
            try:
                value = ast.literal_eval(text) if text else ()
            except (ValueError, SyntaxError):
                raise ValueError('expected a tuple of floats') from None
        if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            value = (value,)
        if not isinstance(value, (tuple, list)):
            raise ValueError('expected a tuple of floats')
        try:
            return tuple(float(v) for v in value)
        except (TypeError, ValueError):
            raise ValueError('expected a tuple of floats') from None


def _common(lr=True, clip_key='clip_gradient', lazy=False):
    params = {'wd': Float(0.0), 'rescale_grad': Float(1.0), clip_key: Float(-1.0)}
    if lr:
        params['lr'] = Float()
    if lazy:
        params['lazy_update'] = Bool(True)
    return params


def _bound(value):
    """A clip parameter as the rules take it: None (no clipping) when negative."""
    return None if value < 0 else float(value)


def _as_out(tensor, like):
    """A new tensor holding `tensor` in `like`'s dtype (never `tensor` itself)."""
    return tensor.to(like.dtype, copy=True)


def _no_grad(forward):
    def run(p, *inputs):
        with torch.no_grad():
            return forward(p, *(x.detach() for x in inputs))
    run.__doc__ = forward.__doc__
    return run


# ---- shape and type rules --------------------------------------------------------------------
def _all_same_shape(p, ins, outs):
    s = None
    for x in list(ins) + list(outs):
        s = merge(s, x)
    return [s] * len(ins), [s] * len(outs)


def _types(fp32_inputs=()):
    """weight, grad and the output share a dtype; inputs at `fp32_inputs` are float32 (the
    mixed-precision states); other states follow the weight."""
    def rule(p, ins, outs):
        t = next((x for i, x in enumerate(list(ins)) if x is not None and i not in fp32_inputs),
                 None)
        if t is None:
            t = next((x for x in outs if x is not None), None)
        new_ins = [np_dtype('float32') if i in fp32_inputs else t for i in range(len(ins))]
        return new_ins, [t] * len(outs)
    return rule


def _single(name, forward, args, aux=(), params=None, fp32=(), shape=_all_same_shape):
    register(OpDef(name, _no_grad(forward), params=params, inputs=args, aux=aux,
                   infer_shape=shape, infer_type=_types(fp32), head_grad='zero'))


# ---- SGD family ------------------------------------------------------------------------------
# Each forward runs its rule (optimizer_rules) in place on a copy of the weight (the weight
# itself only changes through out=weight), or on the float32 master weight32 (an auxiliary state,
# updated in place as in MXNet), and on the state tensors (updated in place).
def _sgd_like(rule, weight, grad, moms, p, master=None, **hyper):
    target = master if master is not None else weight.clone()
    g = grad.float() if master is not None else grad
    rule([target], [g], moms, lrs=[p.lr], wds=[p.wd], rescale=p.rescale_grad,
         clip=_bound(p.clip_gradient), **hyper)
    return _as_out(target, weight) if master is not None else target


def _sgd_update(p, weight, grad):
    """w = (1 - lr*wd) * w - lr * clip(rescale_grad * grad)."""
    return _sgd_like(rules.sgd, weight, grad, [None], p)


def _sgd_mom_update(p, weight, grad, mom):
    """mom = momentum*mom - lr*wd*w - lr*clip(rescale_grad*grad); w = w + mom."""
    return _sgd_like(rules.sgd, weight, grad, [mom], p, momentum=p.momentum)


def _mp_sgd_update(p, weight, grad, weight32):
    """sgd_update on the float32 master copy weight32 (updated in place); returns it cast to
    the weight's dtype."""
    return _sgd_like(rules.sgd, weight, grad, [None], p, master=weight32)


def _mp_sgd_mom_update(p, weight, grad, mom, weight32):
    return _sgd_like(rules.sgd, weight, grad, [mom], p, master=weight32, momentum=p.momentum)


def _nag_mom_update(p, weight, grad, mom):
    """Nesterov momentum: g = clip(rescale_grad*grad) + wd*w; mom = momentum*mom - lr*g;
    w = w + momentum*mom - lr*g. As MXNet's kernel, which reads the weight after writing the
    output: with out=weight (as mx.optimizer.NAG calls it) mom's weight-decay term uses the new
    weight."""
    return _sgd_like(rules.nag, weight, grad, [mom], p, momentum=p.momentum,
                     decay_new_weight=False)


def _nag_mom_update_into_weight(p, weight, grad, mom):
    with torch.no_grad():
        return _sgd_like(rules.nag, weight.detach(), grad.detach(), [mom.detach()], p,
                         momentum=p.momentum, decay_new_weight=True)


def _mp_nag_mom_update(p, weight, grad, mom, weight32):
    """nag_mom_update on the float32 master copy weight32. As MXNet 1.9.1's kernel does, the
    weight-decay term of the new mom uses the already updated weight32."""
    return _sgd_like(rules.nag, weight, grad, [mom], p, master=weight32, momentum=p.momentum,
                     decay_new_weight=True)


_MOM = {'momentum': Float(0.0)}
_single('sgd_update', _sgd_update, ('weight', 'grad'), params=_common(lazy=True))
_single('sgd_mom_update', _sgd_mom_update, ('weight', 'grad'), ('mom',),
        params=dict(_common(lazy=True), **_MOM))
_single('mp_sgd_update', _mp_sgd_update, ('weight', 'grad'), ('weight32',),
        params=_common(lazy=True), fp32=(2,))
_single('mp_sgd_mom_update', _mp_sgd_mom_update, ('weight', 'grad'), ('mom', 'weight32'),
        params=dict(_common(lazy=True), **_MOM), fp32=(2, 3))
_single('nag_mom_update', _nag_mom_update, ('weight', 'grad'), ('mom',),
        params=dict(_common(), **_MOM))
get_op('nag_mom_update').forward_into_input0 = _nag_mom_update_into_weight
_single('mp_nag_mom_update', _mp_nag_mom_update, ('weight', 'grad'), ('mom', 'weight32'),
        params=dict(_common(), **_MOM), fp32=(2, 3))


# ---- adaptive methods ------------------------------------------------------------------------
def _adam_update(p, weight, grad, mean, var):
    """g = clip(rescale_grad*grad + wd*w); mean, var: moving averages of g and g^2 (in place);
    w = w - lr * mean / (sqrt(var) + epsilon). No bias correction (the optimizer folds it into
    lr)."""
    return _sgd_like(rules.adam, weight, grad, [mean], p, variances=[var], beta1=p.beta1,
                     beta2=p.beta2, epsilon=p.epsilon)


def _rmsprop_update(p, weight, grad, n):
    """Tieleman & Hinton's RMSProp: n = (1-gamma1)*g^2 + gamma1*n;
    w = w - lr * g / sqrt(n + epsilon), clipped to +-clip_weights when that is >= 0."""
    return _sgd_like(rules.rmsprop, weight, grad, [n], p, gamma1=p.gamma1, epsilon=p.epsilon,
                     clip_weights=_bound(p.clip_weights))


def _rmspropalex_update(p, weight, grad, n, g_avg, delta):
    """Graves' RMSProp (centred, with momentum gamma2)."""
    return _sgd_like(rules.rmsprop_centered, weight, grad, [n], p, g_avgs=[g_avg],
                     deltas=[delta], gamma1=p.gamma1, gamma2=p.gamma2, epsilon=p.epsilon,
                     clip_weights=_bound(p.clip_weights))


def _ftrl_update(p, weight, grad, z, n):
    """FTRL-proximal: z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr; n += g^2;
    w = (sign(z)*lamda1 - z) / ((beta + sqrt(n)) / lr + wd) where |z| > lamda1, else 0."""
    return _sgd_like(rules.ftrl, weight, grad, [z], p, ns=[n], lamda1=p.lamda1, beta=p.beta)


def _ftml_update(p, weight, grad, d, v, z):
    """FTML (Zheng & Kwok 2017) at step t."""
    new = weight.clone()
    rules.ftml([new], [grad], [d], [v], [z], [p.lr], [p.wd], [p.t], p.beta1, p.beta2,
               p.epsilon, p.rescale_grad, _bound(p.clip_grad))
    return new


def _signsgd_update(p, weight, grad):
    """w = (1 - lr*wd) * w - lr * sign(grad)."""
    return _sgd_like(rules.signum, weight, grad, [None], p)


def _signum_update(p, weight, grad, mom):
    """mom = momentum*mom - (1-momentum)*(wd*w + clip(rescale_grad*grad));
    w = (1 - lr*wd_lh) * w + lr * sign(mom)."""
    return _sgd_like(rules.signum, weight, grad, [mom], p, momentum=p.momentum,
                     wd_lh=p.wd_lh)


_single('adam_update', _adam_update, ('weight', 'grad'), ('mean', 'var'),
        params=dict(_common(lazy=True), beta1=Float(0.9), beta2=Float(0.999),
                    epsilon=Float(1e-8)))
_single('rmsprop_update', _rmsprop_update, ('weight', 'grad'), ('n',),
        params=dict(_common(), gamma1=Float(0.95), epsilon=Float(1e-8),
                    clip_weights=Float(-1.0)))
_single('rmspropalex_update', _rmspropalex_update, ('weight', 'grad'), ('n', 'g', 'delta'),
        params=dict(_common(), gamma1=Float(0.95), gamma2=Float(0.9), epsilon=Float(1e-8),
                    clip_weights=Float(-1.0)))
_single('ftrl_update', _ftrl_update, ('weight', 'grad'), ('z', 'n'),
        params=dict(_common(), lamda1=Float(0.01), beta=Float(1.0)))
_single('ftml_update', _ftml_update, ('weight', 'grad'), ('d', 'v', 'z'),
        params=dict(_common(clip_key='clip_grad'), beta1=Float(0.6), beta2=Float(0.999),
                    epsilon=Float(1e-8), t=Int()))
_single('signsgd_update', _signsgd_update, ('weight', 'grad'), params=_common())
_single('signum_update', _signum_update, ('weight', 'grad'), ('mom',),
        params=dict(_common(), momentum=Float(0.0), wd_lh=Float(0.0)))


# ---- LAMB ------------------------------------------------------------------------------------
def _lamb_update_phase1(p, weight, grad, mean, var):
    """The LAMB direction: Adam's step (bias-corrected when bias_correction) plus wd * w."""
    return rules.lamb_phase1([weight], [grad], [mean], [var], [p.wd], [p.t], p.beta1, p.beta2,
                             p.epsilon, p.bias_correction, p.rescale_grad,
                             _bound(p.clip_gradient))[0]


def _lamb_update_phase2(p, weight, g, r1, r2):
    """w = w - lr * (r1 / r2) * g, with r1 (the weight's norm) clamped to
    [lower_bound, upper_bound] where those are >= 0, and a ratio of 1 where r1 or r2 is 0."""
    new = weight.clone()
    rules.lamb_phase2([new], [g], [r1], [r2], [p.lr], _bound(p.lower_bound),
                      _bound(p.upper_bound))
    return new


def _lamb2_shape(p, ins, outs):
    s = merge(merge(ins[0], ins[1]), outs[0])
    return [s, s, merge(ins[2], (1,)), merge(ins[3], (1,))], [s]


_single('lamb_update_phase1', _lamb_update_phase1, ('weight', 'grad'), ('mean', 'var'),
        params=dict(_common(lr=False), beta1=Float(0.9), beta2=Float(0.999),
                    epsilon=Float(1e-6), t=Int(), bias_correction=Bool(True), wd=Float()))
_single('lamb_update_phase2', _lamb_update_phase2, ('weight', 'g', 'r1', 'r2'),
        params={'lr': Float(), 'lower_bound': Float(-1.0), 'upper_bound': Float(-1.0)},
        shape=_lamb2_shape)


def _mp_lamb_update_phase1(p, weight, grad, mean, var, weight32):
    """lamb_update_phase1 on the float32 master copy weight32 and the float32 gradient; the
    direction g is float32."""
    return _lamb_update_phase1(p, weight32, grad.float(), mean, var)


def _mp_lamb_update_phase2(p, weight, g, r1, r2, weight32):
    """lamb_update_phase2 on weight32, cast to the weight's dtype. As MXNet 1.9.1's kernel,
    weight32 itself is left unchanged."""
    return _lamb_update_phase2(p, weight32, g, r1, r2).to(weight.dtype)


def _mp_lamb1_type(p, ins, outs):
    t = next((x for x in ins[:2] if x is not None), None)
    return [t, t] + [np_dtype('float32')] * 3, [np_dtype('float32')]


def _mp_lamb2_shape(p, ins, outs):
    new_ins, new_outs = _lamb2_shape(p, ins[:4], outs)
    s = merge(new_ins[0], ins[4])
    return [s, s] + new_ins[2:] + [s], [s]


def _mp_lamb2_type(p, ins, outs):
    t = next((x for x in (ins[0], outs[0]) if x is not None), None)
    return [t] + [np_dtype('float32')] * 4, [t]


# mean and var are mutated, weight32 is not: all three are ordinary inputs here, so that the
# positional order stays MXNet's (weight, grad, mean, var, weight32)
register(OpDef('mp_lamb_update_phase1', _no_grad(_mp_lamb_update_phase1),
               params=get_op('lamb_update_phase1').params,
               inputs=('weight', 'grad', 'mean', 'var', 'weight32'),
               infer_shape=_all_same_shape, infer_type=_mp_lamb1_type, head_grad='zero'))
register(OpDef('mp_lamb_update_phase2', _no_grad(_mp_lamb_update_phase2),
               params=get_op('lamb_update_phase2').params,
               inputs=('weight', 'g', 'r1', 'r2', 'weight32'),
               infer_shape=_mp_lamb2_shape, infer_type=_mp_lamb2_type, head_grad='zero'))


# ---- LARS ------------------------------------------------------------------------------------
def _multi_lars(p, lrs, weights_sum_sq, grads_sum_sq, wds):
    """Per-layer LARS learning rates: lr * eta * |w| / (rescale_grad * |g| + wd * |w| + eps)
    where both norms are positive, else lr unchanged."""
    return rules.lars_rates(lrs, weights_sum_sq.sqrt(), grads_sum_sq.sqrt(), wds, p.eta, p.eps,
                            p.rescale_grad)


register(OpDef('multi_lars', _no_grad(_multi_lars),
               params={'eta': Float(), 'eps': Float(), 'rescale_grad': Float(1.0)},
               inputs=('lrs', 'weights_sum_sq', 'grads_sum_sq', 'wds'),
               infer_shape=_all_same_shape, head_grad='zero'))


# ---- multi-tensor SGD ------------------------------------------------------------------------
_MULTI_KINDS = {
    'multi_sgd_update': ('weight', 'grad'),
    'multi_sgd_mom_update': ('weight', 'grad', 'mom'),
    'multi_mp_sgd_update': ('weight', 'grad', 'weight32'),
    'multi_mp_sgd_mom_update': ('weight', 'grad', 'mom', 'weight32'),
}


def _multi_names(kinds, preloaded=False):
    tail = ('lrs', 'wds') if preloaded else ()
    return lambda p: tuple('%s_%d' % (k, i) for i in range(p.num_weights) for k in kinds) + tail


def _multi_outputs(p):
    n = p.num_weights
    return ('output',) if n == 1 else tuple('output%d' % i for i in range(n))


def _multi_forward(kinds, preloaded=False):
    def forward(p, *inputs):
        k, n = len(kinds), p.num_weights
        if preloaded:          # lrs and wds are the last two inputs (arrays of num_weights)
            lrs, wds = inputs[-2].tolist(), inputs[-1].tolist()
        else:
            lrs, wds = p.lrs, p.wds
        if len(lrs) < n or len(wds) < n:
            raise ValueError('lrs and wds need num_weights=%d entries' % n)
        groups = [dict(zip(kinds, inputs[i * k:(i + 1) * k])) for i in range(n)]
        weights = [gr['weight'] for gr in groups]
        if 'weight32' in kinds:
            targets = [gr['weight32'] for gr in groups]
            grads = [gr['grad'].float() for gr in groups]
        else:
            targets = [w.clone() for w in weights]
            grads = [gr['grad'] for gr in groups]
        moms = [gr.get('mom') for gr in groups]
        rules.sgd(targets, grads, moms, list(lrs[:n]), list(wds[:n]),
                  p.momentum if 'mom' in kinds else 0.0, p.rescale_grad,
                  _bound(p.clip_gradient))
        outs = [_as_out(t, w) if 'weight32' in kinds else t for t, w in zip(targets, weights)]
        return tuple(outs) if len(outs) > 1 else outs[0]
    forward.__doc__ = 'sgd_update / sgd_mom_update over num_weights (%s) groups of inputs, ' \
        'with per-weight lrs and wds (%s).' % (', '.join(kinds), 'the last two inputs'
                                               if preloaded else 'params')
    return forward


def _multi_shape(kinds, preloaded=False):
    k = len(kinds)

    def rule(p, ins, outs):
        ins, outs = list(ins), list(outs)
        if preloaded:
            n = k * p.num_weights
            ins[n:] = [merge(x, (p.num_weights,)) for x in ins[n:]]
        for i in range(p.num_weights):
            s = None
            for x in ins[i * k:(i + 1) * k] + [outs[i]]:
                s = merge(s, x)
            ins[i * k:(i + 1) * k] = [s] * k
            outs[i] = s
        return ins, outs
    return rule


def _multi_type(kinds, preloaded=False):
    k = len(kinds)

    def rule(p, ins, outs):
        ins, outs = list(ins), list(outs)
        if preloaded:
            ins[k * p.num_weights:] = [np_dtype('float32')] * 2
        for i in range(p.num_weights):
            group = ins[i * k:(i + 1) * k]
            t = next((x for x, kind in zip(group, kinds)
                      if x is not None and kind in ('weight', 'grad')), outs[i])
            for j, kind in enumerate(kinds):
                mp = 'weight32' in kinds and kind in ('mom', 'weight32')
                ins[i * k + j] = np_dtype('float32') if mp else t
            outs[i] = t
        return ins, outs
    return rule


for _name, _kinds in _MULTI_KINDS.items():
    for _preloaded in (False, True):
        _params = {'rescale_grad': Float(1.0), 'clip_gradient': Float(-1.0),
                   'num_weights': Int(1, count=True)}
        if not _preloaded:
            _params.update(lrs=FloatTuple(), wds=FloatTuple())
        if 'mom' in _kinds:
            _params['momentum'] = Float(0.0)
        register(OpDef(('preloaded_' if _preloaded else '') + _name,
                       _no_grad(_multi_forward(_kinds, _preloaded)), params=_params,
                       inputs=_multi_names(_kinds, _preloaded), outputs=_multi_outputs,
                       infer_shape=_multi_shape(_kinds, _preloaded),
                       infer_type=_multi_type(_kinds, _preloaded), head_grad='zero'))


# ---- helpers of mixed-precision training -----------------------------------------------------
def _finite(tensors):
    ok = torch.ones((), dtype=torch.bool, device=tensors[0].device)
    for t in tensors:
        ok = ok & torch.isfinite(t).all()
    return ok.to(torch.float32).reshape(1)


def _all_finite(p, data):
    """[1.] when every element of data is finite, else [0.] (float32, shape (1,))."""
    return _finite([data])


def _multi_all_finite(p, *arrays):
    """[1.] when every element of every array is finite, else [0.]."""
    return _finite(arrays)


def _multi_sum_sq(p, *arrays):
    """The sum of squares of each array: float32, shape (num_arrays,); as MXNet's kernel, each
    square is rounded to the array's dtype before the float32 sum."""
    return torch.stack([(a * a).float().sum() for a in arrays])


def _reset_arrays(p, *arrays):
    """Sets every input array to zero in place; no outputs."""
    for a in arrays:
        with torch.no_grad():
            a.zero_()
    return ()


def _array_names(p):
    return tuple('array_%d' % i for i in range(p.num_arrays))


def _fixed(shape_of, dtype='float32'):
    def shape_rule(p, ins, outs):
        return ins, [merge(outs[0], shape_of(p))]

    def type_rule(p, ins, outs):
        return ins, [np_dtype(dtype)]
    return shape_rule, type_rule


_s1, _t1 = _fixed(lambda p: (1,))
_sn, _tn = _fixed(lambda p: (p.num_arrays,))
register(OpDef('all_finite', _no_grad(_all_finite), params={'init_output': Bool(True)},
               infer_shape=_s1, infer_type=_t1, head_grad='zero'))
register(OpDef('multi_all_finite', _no_grad(_multi_all_finite),
               params={'num_arrays': Int(1), 'init_output': Bool(True)}, inputs=_array_names,
               infer_shape=_s1, infer_type=_t1, head_grad='zero'))
register(OpDef('multi_sum_sq', _no_grad(_multi_sum_sq), params={'num_arrays': Int()},
               inputs=_array_names, infer_shape=_sn, infer_type=_tn, head_grad='zero'))
register(OpDef('reset_arrays', _no_grad(_reset_arrays), params={'num_arrays': Int()},
               inputs=_array_names, outputs=(), infer_shape=lambda p, ins, outs: (ins, []),
               infer_type=lambda p, ins, outs: (ins, []), head_grad='zero'))


from . import optimizer_contrib  # noqa: E402,F401  (AdamW, multi-tensor LAMB, group AdaGrad)
