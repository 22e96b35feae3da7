"""The matrix products of FullyConnected on CPU, forward and backward, by PyTorch's GEMM (MKL,
behind F.linear) or oneDNN's matmul (torch.ops.mkldnn._linear_pointwise), whichever is faster
here for the shape.

On some CPUs (AMD EPYC) oneDNN's single-thread sgemm is about twice MKL's; on Intel's they are
close. So the first time a product of a new shape is needed, both are timed on it (a few calls,
interleaved, at most ~20 ms) and the times are remembered for that shape class: each of the
three sizes rounded up to a power of two, the operands' layouts and the thread count, so that
varying batch or sequence lengths are timed a handful of times, not once per length. oneDNN is
used where it is 5% faster; in training, only where its savings over the forward and backward
products outweigh the ~30 us that the Python autograd Function costs.

Only float32 CPU operands, each contiguous or a transposed contiguous matrix, and products of at
least 64^3 multiply-adds take part; anything else, and code being traced (torch.compile,
torch.export, torch.jit and so ONNX export), is F.linear. With gradients, `linear` is an autograd Function whose backward computes dX = g W and
dW = g^T x with the backend chosen for each of those shapes; when the backward is itself
recorded (create_graph) it uses differentiable PyTorch ops, so higher-order gradients hold.

`MXTORCH_GEMM=torch` always uses F.linear; `MXTORCH_GEMM=onednn` uses oneDNN wherever it applies.
"""
import functools
import os
import time

from typing import List, Optional

import torch
import torch.nn.functional as F

from .. import inference_graph

MIN_WORK = 64 ** 3          # multiply-adds below which the choice is not worth timing
BUDGET = 0.02               # seconds of timing per new shape class (one call each if slower)
FUNCTION_COST = 30e-6       # seconds the Python autograd Function adds to a training step
_TIMES = {}                 # shape class -> (seconds by PyTorch, seconds by oneDNN)
_PAYS = {}                  # shape class, which inputs need gradients -> whether _Linear pays
_PLAIN = (torch.Tensor, torch.nn.Parameter)     # not fake or traced tensors
_TORCH, _FUNCTION, _ONEDNN = 'torch', 'function', 'onednn'
_CHOICE = {}                # linear's call signature -> _TORCH / _FUNCTION / _ONEDNN
_NT = {}                    # mm_nt's call signature -> whether oneDNN computes it
MAX_SIGNATURES = 4096


def linear(x, weight, bias=None):
    """x (M, K) . weight (N, K)^T + bias (N,), differentiable like F.linear."""
    if _tracing(x, weight):                 # before any shape test: no guards on the shapes
        if inference_graph.capturing():
            return _captured(x, weight, bias)
        return F.linear(x, weight, bias)
    grad = torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad or
                                        (bias is not None and bias.requires_grad))
    # the choice depends only on this signature: decided once, then one dict lookup a call
    key = (_mode(), torch.get_num_threads(), grad and (x.requires_grad, weight.requires_grad),
           x.shape, x.stride(), x.dtype, x.is_cpu, weight.shape, weight.stride(), weight.dtype,
           weight.is_cpu, None if bias is None else (bias.shape, bias.dtype, bias.is_cpu))
    choice = _CHOICE.get(key)
    if choice is None:
        choice = _remember(_CHOICE, key, _choose(x, weight, bias, grad, key[0]))
    if choice is _ONEDNN:
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, 'none', [], '')
    if choice is _FUNCTION:
        return _Linear.apply(x, weight, bias)
    return F.linear(x, weight, bias)


def _captured(x, weight, bias):
    """In an inference graph being traced (inference_graph.py, no gradients): the product
    the eager calls before chose for these operands (the tracer's shapes made plain numbers)."""
    key = (_mode(), torch.get_num_threads(), False, torch.Size(int(d) for d in x.shape),
           x.stride(), x.dtype, x.is_cpu, torch.Size(int(d) for d in weight.shape),
           weight.stride(), weight.dtype, weight.is_cpu,
           None if bias is None else (torch.Size(int(d) for d in bias.shape), bias.dtype,
                                      bias.is_cpu))
    if _CHOICE.get(key) is _ONEDNN:
        return _scripted_onednn()(x, weight, bias)
    return F.linear(x, weight, bias)


def _onednn_linear(x: torch.Tensor, weight: torch.Tensor,
                   bias: Optional[torch.Tensor]) -> torch.Tensor:
    scalars: List[Optional[number]] = []            # noqa: F821 - TorchScript's type
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, 'none', scalars, '')


@functools.lru_cache(maxsize=1)
def _scripted_onednn():
    """oneDNN's product as a TorchScript function: the tracer cannot record its list of
    optional scalars, a TorchScript call can."""
    return torch.jit.script(_onednn_linear)


def _choose(x, weight, bias, grad, mode):
    """F.linear, the _Linear Function (grad) or oneDNN's product (no grad) for this call."""
    if not _eligible(x, weight, bias, mode):
        return _TORCH
    if grad:
        return _FUNCTION if mode != 'auto' or _function_pays(x, weight, bias) else _TORCH
    return _ONEDNN if _use_onednn(x, weight, bias, mode) else _TORCH


def _remember(table, key, value):
    if len(table) >= MAX_SIGNATURES:        # many distinct shapes (varying lengths): start over
        table.clear()
    table[key] = value
    return value


def mm_nt(a, b, bias=None, mode=None):
    """a (M, K) . b (N, K)^T [+ bias], by the backend chosen for this shape; no gradients."""
    mode = mode or _mode()
    key = (mode, torch.get_num_threads(), a.shape, a.stride(), b.shape, b.stride(),
           bias is None)
    use = _NT.get(key)
    if use is None:
        use = _remember(_NT, key, _use_onednn(a, b, bias, mode))
    if use:
        return torch.ops.mkldnn._linear_pointwise(a, b, bias, 'none', [], '')
    return F.linear(a, b, bias)


class _Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return mm_nt(x, weight, bias)

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad
        dx = dw = db = None
        if torch.is_grad_enabled():        # create_graph: the backward is recorded too
            dx = g.mm(weight) if need_x else None
            dw = g.t().mm(x) if need_w else None
        else:
            g = g if _layout_ok(g) else g.contiguous()
            dx = mm_nt(g, weight.t()) if need_x else None
            dw = mm_nt(g.t(), x.t()) if need_w else None
        if need_b and ctx.has_bias:
            db = g.sum(0)
        return dx, dw, db


def _mode():
    return os.environ.get('MXTORCH_GEMM', 'auto')


def _eligible(x, weight, bias, mode=None):
    mode = mode or _mode()
    if _tracing(x, weight):                 # before any shape test: no guards on the shapes
        return False
    if mode == 'torch' or x.dim() != 2 or weight.dim() != 2 or not x.numel() * weight.numel():
        return False
    if x.shape[0] * weight.shape[0] * weight.shape[1] < MIN_WORK and mode != 'onednn':
        return False
    return all(t is None or (t.dtype == torch.float32 and t.device.type == 'cpu')
               for t in (x, weight, bias)) and _layout_ok(x) and _layout_ok(weight) and \
        (bias is None or bias.dim() == 1) and _onednn_available()


def _tracing(x, weight):
    """Code traced into a graph (torch.compile, torch.export, torch.jit and so ONNX export), or
    fake tensors: the plain F.linear, which every tracer and exporter knows."""
    return torch.compiler.is_compiling() or torch.jit.is_tracing() or \
        type(x) not in _PLAIN or type(weight) not in _PLAIN


def _layout_ok(t):
    """A dense matrix, row- or column-major (a transposed contiguous one)."""
    return t.layout == torch.strided and (t.is_contiguous() or t.t().is_contiguous())


def _use_onednn(a, b, bias, mode=None):
    mode = mode or _mode()
    if mode != 'auto':
        return mode == 'onednn'
    return _saving(a, b, bias) > 0


def _saving(a, b, bias):
    """Seconds oneDNN saves on a . b^T [+ bias] over PyTorch: 0 unless it is 5% faster."""
    key = (_bucket(a.shape[0]), _bucket(b.shape[0]), _bucket(a.shape[1]), a.is_contiguous(),
           b.is_contiguous(), bias is not None, torch.get_num_threads())
    times = _TIMES.get(key)
    if times is None:
        times = _TIMES[key] = _time_both(a, b, bias)
    pytorch, onednn = times
    return pytorch - onednn if onednn < 0.95 * pytorch else 0.0


def _function_pays(x, weight, bias):
    """Whether oneDNN's savings on the forward product and the backward ones (dX = g W only
    where x needs a gradient, dW = g^T x where the weight does) outweigh the Function's cost;
    if not, F.linear does all three. Decided once per shape class, on a stand-in g."""
    key = (_bucket(x.shape[0]), _bucket(weight.shape[0]), _bucket(x.shape[1]),
           x.is_contiguous(), weight.is_contiguous(), bias is not None, x.requires_grad,
           weight.requires_grad, torch.get_num_threads())
    pays = _PAYS.get(key)
    if pays is None:
        g = torch.randn(x.shape[0], weight.shape[0],              # not the global stream
                        generator=torch.Generator().manual_seed(0))
        saving = _saving(x, weight, bias)
        saving += _saving(g, weight.t(), None) if x.requires_grad else 0.0
        saving += _saving(g.t(), x.t(), None) if weight.requires_grad else 0.0
        pays = _PAYS[key] = saving > FUNCTION_COST
    return pays


def _bucket(size):
    return (size - 1).bit_length()


def _time_both(a, b, bias):
    """(seconds by F.linear, seconds by oneDNN's matmul) on these operands: the best of one
    warm-up call each and of as many interleaved rounds (up to 5) as fit in BUDGET. On one
    thread, the thread's CPU time: on a busy machine a preemption in the wall time of a call
    or two could pick the slower kernel."""
    clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    def onednn():
        torch.ops.mkldnn._linear_pointwise(a, b, bias, 'none', [], '')

    def pytorch():
        F.linear(a, b, bias)
    with torch.no_grad():
        start = time.perf_counter()
        best = {fn: _seconds(fn, clock) for fn in (pytorch, onednn)}    # warm-up, upper bound
        for _ in range(5):
            if time.perf_counter() - start + best[pytorch] + best[onednn] > BUDGET:
                break
            for fn in (onednn, pytorch):
                best[fn] = min(best[fn], _seconds(fn, clock))
    return best[pytorch], best[onednn]


def _seconds(fn, clock):
    start = clock()
    fn()
    return clock() - start


@functools.lru_cache(maxsize=1)
def _onednn_available():
    """True when PyTorch's oneDNN linear works here (checked once, on a tiny case)."""
    try:
        gen = torch.Generator().manual_seed(0)           # (not the global stream)
        x, w, b = (torch.randn(*s, generator=gen) for s in ((3, 4), (5, 4), (5,)))
        with torch.no_grad():
            got = torch.ops.mkldnn._linear_pointwise(x, w, b, 'none', [], '')
            return bool(torch.allclose(got, F.linear(x, w, b), atol=1e-5))
    except (AttributeError, RuntimeError):
        return False
