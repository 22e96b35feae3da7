"""_contrib_hawkesll: the log likelihood of K independent univariate Hawkes processes with
exponential kernels, as MXNet 1.9.1 computes it, and MXNet's gradient.

Per sample i (a row of the ragged `lags` / `marks`, valid_length[i] points long), a point of
mark k at time t (the running sum of lags) adds log(lambda_k(t)) minus the compensator since
mark k's previous point, where

    lambda_k(t) = lda[i, k] + alpha[k] * beta[k] * s_k * exp(-beta[k] * d)

with d the time since mark k's previous point (or 0) and s_k the process's memory there (it
starts at `state[i, k]` and becomes 1 + s_k * exp(-beta[k] * d) after the point). The remaining
compensators up to max_time[i] are subtracted at the end; the second output is the memory
decayed to max_time[i].

The gradient is MXNet's: w.r.t. lda, alpha and beta from the log likelihood's head gradient
(the out_state output passes none back); zero for state; the other inputs get none.
"""
import math

import numpy as np
import torch

from .registry import OpDef, register
from .shapes import require

_INPUTS = ('lda', 'alpha', 'beta', 'state', 'lags', 'marks', 'valid_length', 'max_time')


def _loglike(mu, alpha, beta, state, lags, marks, valid_length, max_time):
    """(log likelihood (N,), memory at max_time (N, K)) in torch ops of mu, alpha, beta."""
    n, k = mu.shape
    t = torch.zeros(n, dtype=mu.dtype, device=mu.device)
    last = torch.zeros_like(mu)
    memory = state.to(mu.dtype).expand(n, k)
    ll = torch.zeros(n, dtype=mu.dtype, device=mu.device)
    rows = torch.arange(n, device=mu.device)
    steps = math.ceil(float(valid_length.max())) if valid_length.numel() else 0
    for j in range(min(steps, lags.shape[1])):
        valid = valid_length > j
        mark = torch.where(valid, marks[:, j].long(), torch.zeros_like(marks[:, j].long()))
        t = t + torch.where(valid, lags[:, j].to(mu.dtype), torch.zeros_like(t))
        d = t - last[rows, mark]
        a, b, s = alpha[mark], beta[mark], memory[rows, mark]
        decay = torch.exp(-b * d)
        intensity = mu[rows, mark] + a * b * s * decay
        compensator = mu[rows, mark] * d + a * s * (1 - decay)
        ll = ll + torch.where(valid, torch.log(intensity) - compensator, torch.zeros_like(ll))
        hit = torch.nn.functional.one_hot(mark, k).bool() & valid[:, None]
        memory = torch.where(hit, (1 + s * decay)[:, None], memory)
        last = torch.where(hit, t[:, None], last)
    d = max_time.to(mu.dtype)[:, None] - last
    decay = torch.exp(-beta * d)
    ll = ll - (mu * d + alpha * memory * (1 - decay)).sum(1)
    return ll, decay * memory


class _HawkesLL(torch.autograd.Function):
    @staticmethod
    def forward(ctx, mu, alpha, beta, state, lags, marks, valid_length, max_time):
        ctx.save_for_backward(mu, alpha, beta, state, lags, marks, valid_length, max_time)
        with torch.no_grad():
            return _loglike(mu, alpha, beta, state, lags, marks, valid_length, max_time)

    @staticmethod
    def backward(ctx, grad_ll, grad_state):
        mu, alpha, beta, state, lags, marks, valid_length, max_time = ctx.saved_tensors
        params = [x.detach().requires_grad_() for x in (mu, alpha, beta)]
        with torch.enable_grad():
            ll, _ = _loglike(*params, state, lags, marks, valid_length, max_time)
            grads = torch.autograd.grad(ll, params, grad_ll)
        return grads + (torch.zeros_like(state),) + (None,) * 4


def _hawkesll(p, *inputs):
    """Log likelihood (N,) of K univariate Hawkes processes per sample, and the processes'
    memory at max_time (N, K): lda (N, K), alpha (K,), beta (K,), state (N, K), lags and
    marks (N, T), valid_length (N,), max_time (N,)."""
    require(inputs[5].dtype == torch.int32, 'hawkesll: marks must be int32, got %s',
            str(inputs[5].dtype).replace('torch.', ''))
    return _HawkesLL.apply(*inputs)


def _hawkesll_shape(p, ins, outs):
    lda, alpha, beta, state, lags, marks, valid_length, max_time = ins
    n = next((s[0] for s in (lda, state, lags, marks, valid_length, max_time)
              if s is not None and len(s) >= 1 and s[0]), 0)
    k = next((s[-1] for s in (lda, state) if s is not None and len(s) == 2 and s[-1]), 0) or \
        next((s[0] for s in (alpha, beta) if s is not None and len(s) == 1 and s[0]), 0)
    t = next((s[1] for s in (lags, marks) if s is not None and len(s) == 2 and s[1]), 0)
    for name, s, ndim in zip(_INPUTS, ins, (2, 1, 1, 2, 2, 2, 1, 1)):
        require(s is None or len(s) == ndim, 'hawkesll: %s must be %d-D, got shape %s',
                name, ndim, s)
    nk, kk, nt, nn = (n, k), (k,), (n, t), (n,)
    return [nk, kk, kk, nk, nt, nt, nn, nn], [nn, nk]


def _hawkesll_type(p, ins, outs):
    t = next((x for i, x in enumerate(ins) if x is not None and i != 5), None)
    t = t if t is not None else next((x for x in outs if x is not None), None)
    if ins[5] is not None:
        require(ins[5] == np.int32, 'hawkesll: marks must be int32, got %s', np.dtype(ins[5]))
    return [t] * 5 + [np.dtype('int32')] + [t] * 2, [t, t]


register(OpDef('_contrib_hawkesll', _hawkesll, inputs=_INPUTS,
               outputs=('output', 'out_state'), infer_shape=_hawkesll_shape,
               infer_type=_hawkesll_type))
