"""MXNet 1.9.1's optimizer update rules, once each, as pure torch functions.

Both the update operators (optimizer_ops.py, sparse_updates.py, optimizer_contrib.py) and the
Optimizer classes (mx.optimizer) call these; nothing else states the math.

Conventions shared by every rule:

* `weights` and the state lists (`moms`, `means`, ...) are lists of torch tensors updated in
  place; an entry of a state list may be None where the rule allows it (SGD without momentum).
  `grads` are read only (never written).
* hyper-parameters are Python numbers: per-parameter `lrs` and `wds` lists, scalars such as
  `rescale` (rescale_grad), `clip` (the gradient clip bound, None for no clipping), `momentum`,
  betas, epsilons, and per-parameter update counts `ts` where the rule bias-corrects.
* no NDArray, numpy, `.item()` or other host synchronisation: a rule can be traced by
  torch.compile and captured in a CUDA graph as part of a training step. Rules run under
  torch.no_grad().
* mixed precision is the caller's business: it passes the float32 master weights and float32
  gradients, then casts back.
"""
import math

import torch

__all__ = ['scaled_grads', 'scaled_grads_', 'sgd', 'nag', 'adam', 'adamw', 'adagrad',
           'group_adagrad', 'rmsprop', 'rmsprop_centered', 'adadelta', 'adamax', 'nadam', 'ftrl', 'ftml', 'signum',
           'lamb_phase1', 'lamb_phase2', 'lamb', 'lars_rates', 'lars_sgd', 'sgld', 'dcasgd']


def _clamp_(tensors, bound):
    if bound is not None:
        torch._foreach_clamp_min_(tensors, -bound)
        torch._foreach_clamp_max_(tensors, bound)
    return tensors


@torch.no_grad()
def scaled_grads(grads, rescale, clip, weights=None, wds=None):
    """New tensors clip(rescale * g), or clip(rescale * g + wd * w) when weights are given."""
    out = list(torch._foreach_mul(grads, rescale))
    if weights is not None and any(wds):
        torch._foreach_add_(out, torch._foreach_mul(weights, [float(wd) for wd in wds]))
    return _clamp_(out, clip)


@torch.no_grad()
def scaled_grads_(grads, rescale, clip):
    """grads = clip(rescale * g), in place."""
    torch._foreach_mul_(grads, rescale)
    return _clamp_(grads, clip)


def _groups(*keys):
    """{key tuple: [positions]} over zipped per-parameter keys."""
    groups = {}
    for i, key in enumerate(zip(*keys)):
        groups.setdefault(key, []).append(i)
    return groups


@torch.no_grad()
def sgd(weights, grads, moms, lrs, wds, momentum=0.0, rescale=1.0, clip=None):
    """SGD, where moms[i] is None: w = (1 - lr*wd) * w - lr * clip(rescale * g);
    else mom = momentum * mom - lr * wd * w - lr * clip(rescale * g); w += mom.
    A few multi-tensor calls per (lr, wd) group, no temporaries unless clipping."""
    has_mom = [m is not None for m in moms]
    for (lr, wd, buffered), members in _groups(lrs, wds, has_mom).items():
        lr, wd = float(lr), float(wd)
        w = [weights[i] for i in members]
        g = [grads[i] for i in members]
        g_scale = -lr * rescale
        if clip is not None:                  # the weight decay comes after the clip
            g = _clamp_(list(torch._foreach_mul(g, rescale)), clip)
            g_scale = -lr
        if not buffered:
            if wd:
                torch._foreach_mul_(w, 1.0 - lr * wd)
            torch._foreach_add_(w, g, alpha=g_scale)
            continue
        m = [moms[i] for i in members]
        torch._foreach_mul_(m, momentum)
        torch._foreach_add_(m, g, alpha=g_scale)
        if wd:
            torch._foreach_add_(m, w, alpha=-lr * wd)
        torch._foreach_add_(w, m)


@torch.no_grad()
def nag(weights, grads, moms, lrs, wds, momentum=0.0, rescale=1.0, clip=None,
        decay_new_weight=True):
    """Nesterov momentum. With G = clip(rescale * g) and step = -lr * (G + wd * w):

        w = w + momentum^2 * mom + (1 + momentum) * step
        mom = momentum * mom - lr * (G + wd * w')

    where w' is the updated weight when decay_new_weight (what MXNet 1.9.1's kernel computes
    when its output is the weight itself, as mx.optimizer.NAG calls it, and always for
    mp_nag_mom_update), else the old one (the kernel writing a separate output). A None mom is
    plain SGD: w += step."""
    neg_lrs = [-float(lr) for lr in lrs]
    wds = [float(wd) for wd in wds]
    g = scaled_grads(grads, rescale, clip)
    steps = [x.clone() for x in g]
    if any(wds):
        torch._foreach_add_(steps, torch._foreach_mul(weights, wds))
    torch._foreach_mul_(steps, neg_lrs)                          # -lr * (G + wd * w)
    buffered = [i for i, m in enumerate(moms) if m is not None]
    if buffered:
        m = [moms[i] for i in buffered]
        bw = [weights[i] for i in buffered]
        bsteps = [steps[i] for i in buffered]
        torch._foreach_mul_(m, float(momentum))                 # momentum * mom
        torch._foreach_sub_(bw, m)
        torch._foreach_add_(bw, torch._foreach_mul(torch._foreach_add(m, bsteps),
                                                   momentum + 1))
        if decay_new_weight:
            bg = [g[i] for i in buffered]
            b_wds = [wds[i] for i in buffered]
            if any(b_wds):
                torch._foreach_add_(bg, torch._foreach_mul(bw, b_wds))
            torch._foreach_mul_(bg, [neg_lrs[i] for i in buffered])
            torch._foreach_add_(m, bg)
        else:
            torch._foreach_add_(m, bsteps)
    plain = [i for i, m in enumerate(moms) if m is None]
    if plain:
        torch._foreach_add_([weights[i] for i in plain], [steps[i] for i in plain])


@torch.no_grad()
def adam(weights, grads, means, variances, lrs, wds, beta1=0.9, beta2=0.999, epsilon=1e-8,
         rescale=1.0, clip=None):
    """Adam without bias correction (callers fold it into lrs). G = clip(rescale*g + wd*w);
    m = beta1*m + (1-beta1)*G; v = beta2*v + (1-beta2)*G^2; w -= lr * m / (sqrt(v) + epsilon)."""
    g = scaled_grads(grads, rescale, clip, weights, wds)
    denom = _adam_moments(means, variances, g, beta1, beta2, epsilon)
    torch._foreach_addcdiv_(weights, means, denom, [-float(lr) for lr in lrs])


def _adam_moments(means, variances, g, beta1, beta2, epsilon):
    """m = beta1*m + (1-beta1)*g; v = beta2*v + (1-beta2)*g^2 in place; sqrt(v) + epsilon."""
    torch._foreach_mul_(means, beta1)
    torch._foreach_add_(means, g, alpha=1. - beta1)
    torch._foreach_mul_(variances, beta2)
    torch._foreach_addcmul_(variances, g, g, value=1. - beta2)
    denom = torch._foreach_sqrt(variances)
    torch._foreach_add_(denom, epsilon)
    return denom


@torch.no_grad()
def adamw(weights, grads, means, variances, lrs, wds, etas, beta1=0.9, beta2=0.999,
          epsilon=1e-8, rescale=1.0, clip=None, interpolate=False):
    """AdamW (decoupled weight decay): G = clip(rescale * g); m, v as in Adam;
    w -= eta * (lr * m / (sqrt(v) + epsilon) + wd * w). `rescale` may be a float or a 0-d
    tensor. With interpolate, the moving averages are computed as m = beta1 * (m - G) + G
    (and likewise v), the rounding of MXNet's multi-tensor kernel."""
    g = _clamp_(list(torch._foreach_mul(grads, rescale)), clip)
    if interpolate:
        g2 = torch._foreach_mul(g, g)
        for state, x, beta in ((means, g, beta1), (variances, g2, beta2)):
            torch._foreach_sub_(state, x)
            torch._foreach_mul_(state, beta)
            torch._foreach_add_(state, x)
        denom = torch._foreach_sqrt(variances)
        torch._foreach_add_(denom, epsilon)
    else:
        denom = _adam_moments(means, variances, g, beta1, beta2, epsilon)
    step = torch._foreach_div(means, denom)
    torch._foreach_mul_(step, [float(lr) for lr in lrs])
    torch._foreach_add_(step, torch._foreach_mul(weights, [float(wd) for wd in wds]))
    torch._foreach_mul_(step, [-float(eta) for eta in etas])
    torch._foreach_add_(weights, step)


@torch.no_grad()
def adagrad(weights, grads, histories, lrs, wds, epsilon=1e-7, rescale=1.0, clip=None):
    """AdaGrad: G = clip(rescale * g); h += G^2; w -= lr * (G / sqrt(h + epsilon) + wd * w)."""
    for w, g, h, lr, wd in zip(weights, scaled_grads(grads, rescale, clip), histories, lrs,
                               wds):
        h.addcmul_(g, g)
        step = g / torch.sqrt(h + epsilon)
        if wd:
            step = step + wd * w
        w.sub_(step * lr)


@torch.no_grad()
def group_adagrad(weights, grads, histories, lrs, epsilon=1e-5, rescale=1.0, clip=None):
    """AdaGrad with one rate per row: G = clip(rescale * g);
    h += mean of G^2 over each row (h has one entry per row); w -= lr * G / sqrt(h + epsilon)."""
    for w, g, h, lr in zip(weights, scaled_grads(grads, rescale, clip), histories, lrs):
        rows = g.flatten(1) if g.dim() > 1 else g.unsqueeze(1)
        h.add_(((rows * rows).sum(dim=1) / rows.shape[1]).reshape(h.shape))
        w.sub_((lr * rows / torch.sqrt(h.reshape(-1, 1) + epsilon)).reshape(w.shape))


@torch.no_grad()
def rmsprop(weights, grads, ns, lrs, wds, gamma1=0.95, epsilon=1e-8, rescale=1.0, clip=None,
            clip_weights=None):
    """Tieleman & Hinton's RMSProp: G = clip(rescale*g + wd*w); n = (1-gamma1)*G^2 + gamma1*n;
    w -= lr * G / sqrt(n + epsilon), then clipped to +-clip_weights when that is not None."""
    g = scaled_grads(grads, rescale, clip, weights, wds)
    torch._foreach_mul_(ns, gamma1)
    torch._foreach_addcmul_(ns, g, g, value=1. - gamma1)
    denom = torch._foreach_add(ns, epsilon)
    torch._foreach_sqrt_(denom)
    torch._foreach_addcdiv_(weights, g, denom, [-float(lr) for lr in lrs])
    _clamp_(weights, clip_weights)


@torch.no_grad()
def rmsprop_centered(weights, grads, ns, g_avgs, deltas, lrs, wds, gamma1=0.95, gamma2=0.9,
                     epsilon=1e-8, rescale=1.0, clip=None, clip_weights=None):
    """Graves' centred RMSProp: n and g_avg the moving averages of G^2 and G,
    delta = gamma2 * delta - lr * G / sqrt(n - g_avg^2 + epsilon); w += delta, then clipped."""
    g = scaled_grads(grads, rescale, clip, weights, wds)
    torch._foreach_mul_(ns, gamma1)
    torch._foreach_addcmul_(ns, g, g, value=1. - gamma1)
    torch._foreach_mul_(g_avgs, gamma1)
    torch._foreach_add_(g_avgs, g, alpha=1. - gamma1)
    denom = torch._foreach_sub(ns, torch._foreach_mul(g_avgs, g_avgs))
    torch._foreach_add_(denom, epsilon)
    torch._foreach_sqrt_(denom)
    torch._foreach_mul_(deltas, gamma2)
    torch._foreach_addcdiv_(deltas, g, denom, [-float(lr) for lr in lrs])
    torch._foreach_add_(weights, deltas)
    _clamp_(weights, clip_weights)


@torch.no_grad()
def adadelta(weights, grads, acc_gs, acc_deltas, wds, rho=0.9, epsilon=1e-5, rescale=1.0,
             clip=None):
    """AdaDelta: G = clip(rescale * g); acc_g = rho*acc_g + (1-rho)*G^2;
    d = sqrt(acc_delta + eps) / sqrt(acc_g + eps) * G; acc_delta = rho*acc_delta + (1-rho)*d^2;
    w -= d + wd * w."""
    for w, g, acc_g, acc_d, wd in zip(weights, scaled_grads(grads, rescale, clip), acc_gs,
                                      acc_deltas, wds):
        acc_g.mul_(rho).addcmul_(g, g, value=1. - rho)
        delta = torch.sqrt(acc_d + epsilon) / torch.sqrt(acc_g + epsilon) * g
        acc_d.mul_(rho).addcmul_(delta, delta, value=1. - rho)
        w.sub_(delta + wd * w)


@torch.no_grad()
def adamax(weights, grads, means, norms, lrs, wds, beta1=0.9, beta2=0.999, rescale=1.0,
           clip=None):
    """AdaMax: G = clip(rescale*g + wd*w); m = beta1*m + (1-beta1)*G; u = max(beta2*u, |G|);
    w -= lr * m / u (callers fold the bias correction 1 / (1 - beta1^t) into lrs)."""
    for w, g, m, u, lr in zip(weights, scaled_grads(grads, rescale, clip, weights, wds), means,
                              norms, lrs):
        m.mul_(beta1).add_(g, alpha=1. - beta1)
        torch.maximum(u * beta2, g.abs(), out=u)
        w.sub_(lr * m / u)


@torch.no_grad()
def nadam(weights, grads, means, variances, lrs, wds, ts, m_schedules, beta1=0.9, beta2=0.999,
          epsilon=1e-8, schedule_decay=0.004, rescale=1.0, clip=None):
    """Nesterov Adam at update counts ts, with M = m_schedules[i] the running product of the
    mu_t up to this update: mu_t = beta1 * (1 - 0.5 * 0.96^(t * schedule_decay)),
    w -= lr * ((1 - mu_t) * G / (1 - M) + mu_{t+1} * m / (1 - M * mu_{t+1}))
         / (sqrt(v / (1 - beta2^t)) + epsilon)."""
    g_all = scaled_grads(grads, rescale, clip, weights, wds)
    for w, g, m, v, lr, t, sched in zip(weights, g_all, means, variances, lrs, ts, m_schedules):
        mu_t = beta1 * (1. - 0.5 * 0.96 ** (t * schedule_decay))
        mu_next = beta1 * (1. - 0.5 * 0.96 ** ((t + 1) * schedule_decay))
        m.mul_(beta1).add_(g, alpha=1. - beta1)
        v.mul_(beta2).addcmul_(g, g, value=1. - beta2)
        g_prime = g / (1. - sched)
        m_prime = m / (1. - sched * mu_next)
        v_prime = v / (1. - beta2 ** t)
        m_bar = (1. - mu_t) * g_prime + mu_next * m_prime
        w.sub_(lr * m_bar / (torch.sqrt(v_prime) + epsilon))


@torch.no_grad()
def ftrl(weights, grads, zs, ns, lrs, wds, lamda1=0.01, beta=1.0, rescale=1.0, clip=None):
    """FTRL-proximal: G = clip(rescale*g); z += G - (sqrt(n + G^2) - sqrt(n)) * w / lr;
    n += G^2; w = (sign(z)*lamda1 - z) / ((beta + sqrt(n)) / lr + wd) where |z| > lamda1,
    else 0."""
    for w, g, z, n, lr, wd in zip(weights, scaled_grads(grads, rescale, clip), zs, ns, lrs,
                                  wds):
        z.add_(g - (torch.sqrt(n + g * g) - torch.sqrt(n)) * w / lr)
        n.addcmul_(g, g)
        shrunk = (torch.sign(z) * lamda1 - z) / ((beta + torch.sqrt(n)) / lr + wd)
        w.copy_(torch.where(z.abs() > lamda1, shrunk, torch.zeros_like(shrunk)))


@torch.no_grad()
def ftml(weights, grads, ds, vs, zs, lrs, wds, ts, beta1=0.6, beta2=0.999, epsilon=1e-8,
         rescale=1.0, clip=None):
    """FTML at update counts ts: G = clip(rescale*g + wd*w); v = beta2*v + (1-beta2)*G^2;
    d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon);
    z = beta1*z + (1-beta1)*G - (d_t - beta1*d)*w; d = d_t; w = -z / d_t."""
    g_all = scaled_grads(grads, rescale, clip, weights, wds)
    for w, g, d, v, z, lr, t in zip(weights, g_all, ds, vs, zs, lrs, ts):
        v.mul_(beta2).addcmul_(g, g, value=1. - beta2)
        d_t = (1. - beta1 ** t) / lr * (torch.sqrt(v / (1. - beta2 ** t)) + epsilon)
        z.mul_(beta1).add_(g, alpha=1. - beta1).sub_((d_t - beta1 * d) * w)
        d.copy_(d_t)
        w.copy_(-z / d_t)


@torch.no_grad()
def signum(weights, grads, moms, lrs, wds, momentum=0.9, wd_lh=0.0, rescale=1.0, clip=None):
    """Signum; where moms[i] is None, SignSGD: w = (1 - lr*wd) * w - lr * sign(g) (the raw
    gradient's sign, as MXNet's kernel). Else mom = momentum*mom - (1-momentum) *
    (wd*w + clip(rescale*g)); w = (1 - lr*wd_lh) * w + lr * sign(mom)."""
    for w, g, m, lr, wd in zip(weights, grads, moms, lrs, wds):
        if m is None:
            w.mul_(1. - lr * wd).sub_(torch.sign(g), alpha=lr)
            continue
        step = scaled_grads([g], rescale, clip)[0].add_(w, alpha=wd)
        m.mul_(momentum).sub_(step, alpha=1. - momentum)
        w.mul_(1. - lr * wd_lh).add_(torch.sign(m), alpha=lr)


@torch.no_grad()
def lamb_phase1(weights, grads, means, variances, wds, ts, beta1=0.9, beta2=0.999,
                epsilon=1e-6, bias_correction=True, rescale=1.0, clip=None):
    """LAMB's direction, new tensors: G = clip(rescale*g); m, v as in Adam (bias corrected at
    update counts ts when bias_correction); u = m / (sqrt(v) + epsilon) + wd * w."""
    g = scaled_grads(grads, rescale, clip)
    torch._foreach_mul_(means, beta1)
    torch._foreach_add_(means, g, alpha=1. - beta1)
    torch._foreach_mul_(variances, beta2)
    torch._foreach_addcmul_(variances, g, g, value=1. - beta2)
    out = []
    for w, m, v, wd, t in zip(weights, means, variances, wds, ts):
        if bias_correction:
            m = m / (1. - beta1 ** t)
            v = v / (1. - beta2 ** t)
        out.append(m / (torch.sqrt(v) + epsilon) + wd * w)
    return out


@torch.no_grad()
def lamb_phase2(weights, directions, r1s, r2s, lrs, lower_bound=None, upper_bound=None):
    """w -= lr * ratio * u with r1 (the weight's norm, a tensor) clamped to [lower_bound,
    upper_bound] where those are not None, and ratio = r1 / r2, or 1 where r1 or r2 is 0."""
    for w, u, r1, r2, lr in zip(weights, directions, r1s, r2s, lrs):
        r1 = r1.reshape(())
        r2 = r2.reshape(())
        if lower_bound is not None:
            r1 = r1.clamp(min=lower_bound)
        if upper_bound is not None:
            r1 = r1.clamp(max=upper_bound)
        ratio = torch.where((r1 == 0) | (r2 == 0), torch.ones_like(r1), r1 / r2)
        w.sub_(u * (ratio * lr))


@torch.no_grad()
def lamb(weights, grads, means, variances, lrs, wds, ts, beta1=0.9, beta2=0.999, epsilon=1e-6,
         bias_correction=True, lower_bound=None, upper_bound=None, rescale=1.0, clip=None):
    """LAMB: lamb_phase1, then lamb_phase2 with r1 = ||w|| and r2 = ||u||."""
    u = lamb_phase1(weights, grads, means, variances, wds, ts, beta1, beta2, epsilon,
                    bias_correction, rescale, clip)
    r1 = [torch.linalg.vector_norm(w) for w in weights]
    r2 = [torch.linalg.vector_norm(x) for x in u]
    lamb_phase2(weights, u, r1, r2, lrs, lower_bound, upper_bound)


def lars_rates(lrs, w_norms, g_norms, wds, eta, eps, rescale=1.0):
    """Layer-wise (LARS) rates, elementwise over tensors (or numbers): lr * eta * |w| /
    (rescale * |g| + wd * |w| + eps) where both norms are > 0, else lr."""
    trust = lrs * eta * w_norms / (g_norms * rescale + wds * w_norms + eps)
    return torch.where((w_norms > 0) & (g_norms > 0), trust, lrs * torch.ones_like(trust))


@torch.no_grad()
def lars_sgd(weights, grads, moms, lrs, wds, scale_rate, momentum=0.0, eta=0.001, eps=0.0,
             rescale=1.0, clip=None):
    """SGD with layer-wise adaptive rates: where scale_rate[i], the rate becomes
    lr * eta * ||w|| / (rescale * ||g|| + wd * ||w|| + eps) (when both norms are > 0); then
    step = -rate * (clip(rescale*g) + wd*w); mom = momentum*mom + step (where mom is not None);
    w += mom (or step)."""
    steps = scaled_grads(grads, rescale, clip)
    for i, (w, g, lr, wd) in enumerate(zip(weights, grads, lrs, wds)):
        steps[i].add_(w, alpha=wd)
        if scale_rate[i]:
            lr = lars_rates(lr, torch.linalg.vector_norm(w), torch.linalg.vector_norm(g), wd,
                            eta, eps, rescale)
        steps[i].mul_(-lr)
    buffered = [i for i, m in enumerate(moms) if m is not None]
    if buffered:
        bufs = [moms[i] for i in buffered]
        torch._foreach_mul_(bufs, float(momentum))
        torch._foreach_add_(bufs, [steps[i] for i in buffered])
        for i, buf in zip(buffered, bufs):
            steps[i] = buf
    torch._foreach_add_(weights, steps)


@torch.no_grad()
def sgld(weights, grads, lrs, wds, rescale=1.0, clip=None):
    """Langevin dynamics: w += -lr/2 * (clip(rescale*g) + wd*w) + N(0, sqrt(lr)) noise
    (torch's generator)."""
    for w, g, lr, wd in zip(weights, scaled_grads(grads, rescale, clip), lrs, wds):
        w.add_(g.add_(w, alpha=wd), alpha=-lr / 2)
        w.add_(torch.randn_like(w), alpha=math.sqrt(lr))


@torch.no_grad()
def dcasgd(weights, grads, moms, previous, lrs, wds, momentum=0.0, lamda=0.04, rescale=1.0,
           clip=None):
    """Delay-compensated SGD: G = clip(rescale*g);
    delta = -lr * (G + wd*w + lamda * G^2 * (w - previous)); mom = momentum*mom + delta (where
    mom is not None, else delta); previous = w; w += mom."""
    for w, g, m, prev, lr, wd in zip(weights, scaled_grads(grads, rescale, clip), moms, previous,
                                     lrs, wds):
        delta = (g + wd * w + lamda * g * g * (w - prev)) * -lr
        if m is not None:
            delta = m.mul_(momentum).add_(delta)
        prev.copy_(w)
        w.add_(delta)
