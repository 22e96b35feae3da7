"""FullyConnected's products on PyTorch's GEMM or oneDNN's (mxtorch/ops/gemm.py): either backend,
forced by MXTORCH_GEMM or chosen by timing, gives F.linear's values and gradients to float
rounding, first and second order; what oneDNN does not take falls back to F.linear."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import mxtorch as mx
from mxtorch.ops import gemm
from mxtorch.test_utils import check_numeric_gradient

BACKENDS = ['torch', 'onednn', 'auto']


@pytest.fixture(autouse=True)
def fresh_choices(monkeypatch):
    """Each test decides afresh (linear and mm_nt remember their choice per call signature)."""
    monkeypatch.setattr(gemm, '_CHOICE', {})
    monkeypatch.setattr(gemm, '_NT', {})


@pytest.fixture(params=BACKENDS)
def backend(request, monkeypatch):
    monkeypatch.setenv('MXTORCH_GEMM', request.param)
    return request.param


def _operands(m=96, n=80, k=72, bias=True, dtype=torch.float32, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=gen, dtype=dtype)
    w = torch.randn(n, k, generator=gen, dtype=dtype) / k ** 0.5
    b = torch.randn(n, generator=gen, dtype=dtype) if bias else None
    return x, w, b


def _grads(fn, x, w, b, g, need_x=True):
    x = x.detach().requires_grad_(need_x)
    w = w.detach().requires_grad_()
    b = None if b is None else b.detach().requires_grad_()
    out = fn(x, w, b)
    out.backward(g)
    return out.detach(), x.grad, w.grad, None if b is None else b.grad


@pytest.mark.parametrize('bias', [True, False])
@pytest.mark.parametrize('need_x', [True, False])
def test_values_and_gradients_match_f_linear(backend, bias, need_x):
    x, w, b = _operands(bias=bias)
    g = torch.randn(96, 80, generator=torch.Generator().manual_seed(1))
    got = _grads(gemm.linear, x, w, b, g, need_x)
    want = _grads(F.linear, x, w, b, g, need_x)
    for a, e in zip(got, want):
        if e is None:
            assert a is None
        else:
            torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)


def test_forced_onednn_takes_the_onednn_path(monkeypatch):
    x, w, b = _operands()
    calls = []
    real = gemm._use_onednn
    monkeypatch.setattr(gemm, '_use_onednn', lambda *a: calls.append(1) or real(*a))
    monkeypatch.setenv('MXTORCH_GEMM', 'onednn')
    _grads(gemm.linear, x, w, b, torch.ones(96, 80))
    assert len(calls) == 3                   # forward, dX, dW
    calls.clear()
    _grads(gemm.linear, x, w, b, torch.ones(96, 80))
    assert calls == []                       # the same signatures again: remembered
    monkeypatch.setenv('MXTORCH_GEMM', 'torch')
    _grads(gemm.linear, x, w, b, torch.ones(96, 80))
    assert calls == []


def test_what_onednn_does_not_take_falls_back(monkeypatch):
    monkeypatch.setenv('MXTORCH_GEMM', 'auto')
    x, w, b = _operands()
    assert gemm._eligible(x, w, b)
    assert gemm._eligible(x.t().contiguous().t(), w, b)             # column-major
    assert not gemm._eligible(x[:, ::2], w[:, ::2], b)                # strided
    assert not gemm._eligible(*_operands(dtype=torch.float64))
    assert not gemm._eligible(*_operands(m=4, n=64, k=64))            # too small to time
    assert not gemm._eligible(x[:0], w, b)
    monkeypatch.setenv('MXTORCH_GEMM', 'onednn')
    assert gemm._eligible(*_operands(m=4, n=64, k=64))
    monkeypatch.setenv('MXTORCH_GEMM', 'torch')
    assert not gemm._eligible(x, w, b)


@pytest.mark.parametrize('kind', ['strided', 'float64', 'transposed'])
def test_odd_inputs_give_f_linear_numbers(backend, kind):
    x, w, b = _operands(dtype=torch.float64 if kind == 'float64' else torch.float32)
    if kind == 'strided':
        x = torch.cat([x, x], 1)[:, ::2]
    elif kind == 'transposed':
        x = x.t().contiguous().t()
    g = torch.randn(96, 80, dtype=x.dtype, generator=torch.Generator().manual_seed(2))
    for a, e in zip(_grads(gemm.linear, x, w, b, g), _grads(F.linear, x, w, b, g)):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)


def test_expanded_output_gradient(backend):
    x, w, b = _operands()
    got = _grads(lambda *a: gemm.linear(*a).sum() * 1, x, w, b, torch.tensor(1.0))
    want = _grads(lambda *a: F.linear(*a).sum() * 1, x, w, b, torch.tensor(1.0))
    for a, e in zip(got[1:], want[1:]):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)


def test_second_order_gradient_through_fully_connected(backend):
    rng = np.random.RandomState(3)
    x = mx.nd.array(rng.randn(70, 64))
    w = mx.nd.array(rng.randn(64, 64) / 8)
    b = mx.nd.array(rng.randn(64))
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        out = mx.nd.FullyConnected(x, w, b, num_hidden=64)
        loss = (out * out).sum()
        dx = mx.autograd.grad(loss, [x], create_graph=True)[0]
        second = (dx * dx).sum()
    second.backward()
    # loss = |xW^T + b|^2: dx = 2 (xW^T + b) W; d|dx|^2/dw and /db by torch in float64
    xt, wt, bt = (torch.tensor(a.asnumpy(), dtype=torch.float64, requires_grad=True)
                  for a in (x, w, b))
    dxt = 2 * (xt @ wt.T + bt) @ wt
    (dxt * dxt).sum().backward()
    np.testing.assert_allclose(dx.asnumpy(), dxt.detach().numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(w.grad.asnumpy(), wt.grad.numpy(), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(b.grad.asnumpy(), bt.grad.numpy(), rtol=1e-4, atol=1e-2)
    np.testing.assert_allclose(x.grad.asnumpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize('no_bias', [False, True])
def test_numeric_gradient_of_fully_connected(backend, no_bias):
    data = mx.sym.Variable('data')
    sym = mx.sym.FullyConnected(data, num_hidden=6, no_bias=no_bias, name='fc')
    rng = np.random.RandomState(4)
    location = {'data': rng.randn(5, 2, 4), 'fc_weight': rng.randn(6, 8)}
    if not no_bias:
        location['fc_bias'] = rng.randn(6)
    check_numeric_gradient(sym, location, numeric_eps=1e-2, rtol=1e-2, atol=1e-3)


def test_fully_connected_flatten_false_matches_numpy(backend):
    rng = np.random.RandomState(5)
    x = rng.randn(3, 40, 64).astype(np.float32)
    w = rng.randn(96, 64).astype(np.float32) / 8
    got = mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w), no_bias=True, num_hidden=96,
                               flatten=False).asnumpy()
    np.testing.assert_allclose(got, x.astype(np.float64) @ w.T, rtol=1e-4, atol=1e-4)


def test_choice_is_timed_once_per_shape_class(monkeypatch):
    monkeypatch.setenv('MXTORCH_GEMM', 'auto')
    monkeypatch.setattr(gemm, '_TIMES', {})
    monkeypatch.setattr(gemm, '_PAYS', {})
    timed = []
    monkeypatch.setattr(gemm, '_time_both', lambda *a: timed.append(a[0].shape) or (2e-3, 1e-3))
    x, w, b = _operands(m=100)
    gemm.linear(x, w, b)
    gemm.linear(x[:90], w, b)                 # same power-of-two class: no new timing
    assert timed == [(100, 72)] and len(gemm._TIMES) == 1
    gemm.linear(x.t().contiguous().t(), w, b)  # another layout is another class
    assert len(timed) == 2
    gemm.linear(x, w.requires_grad_(), b)     # training: the forward and dW products
    assert timed[2:] == [(80, 100)] and len(gemm._PAYS) == 1


@pytest.mark.parametrize('times,pays', [((2e-3, 1e-3), True), ((1e-3, 2e-3), False),
                                        ((30e-6, 20e-6), False)])
def test_training_uses_the_function_only_where_it_pays(monkeypatch, times, pays):
    monkeypatch.setenv('MXTORCH_GEMM', 'auto')
    monkeypatch.setattr(gemm, '_TIMES', {})
    monkeypatch.setattr(gemm, '_PAYS', {})
    monkeypatch.setattr(gemm, '_time_both', lambda *a: times)
    x, w, b = _operands()
    out = gemm.linear(x.requires_grad_(), w.requires_grad_(), b)
    assert (type(out.grad_fn).__name__ == '_LinearBackward') == pays
    state = torch.random.get_rng_state()
    monkeypatch.setattr(gemm, '_PAYS', {})
    monkeypatch.setattr(gemm, '_CHOICE', {})
    gemm.linear(x, w, b)
    assert torch.equal(torch.random.get_rng_state(), state)     # the global stream untouched


def test_timing_is_cheap_and_decides():
    x, w, b = _operands(m=256, n=256, k=256)
    import time
    start = time.perf_counter()
    pytorch, onednn = gemm._time_both(x, w, b)
    assert 0 < pytorch < 0.5 and 0 < onednn < 0.5
    assert time.perf_counter() - start < 0.5   # BUDGET is 20 ms; leeway for a busy machine


def test_traced_code_uses_f_linear(monkeypatch):
    monkeypatch.setenv('MXTORCH_GEMM', 'onednn')
    monkeypatch.setattr(torch.compiler, 'is_compiling', lambda: True)
    x, w, b = _operands()
    assert not gemm._eligible(x, w, b)


def test_torch_compile_traces_through(monkeypatch):
    monkeypatch.setenv('MXTORCH_GEMM', 'onednn')
    x, w, b = _operands()
    w = w.requires_grad_()
    fn = torch.compile(lambda x, w, b: gemm.linear(x, w, b).relu(), backend='aot_eager',
                       fullgraph=True, dynamic=False)
    out = fn(x, w, b)
    out.sum().backward()
    want = F.linear(x, w.detach(), b).relu()
    torch.testing.assert_close(out.detach(), want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(w.grad, ((want > 0).float()).t() @ x, rtol=1e-5, atol=1e-5)


def test_jit_trace_and_fake_tensors_use_f_linear(monkeypatch):
    monkeypatch.setenv('MXTORCH_GEMM', 'onednn')
    x, w, b = _operands()
    traced = torch.jit.trace(lambda x: gemm.linear(x, w, b), (x,))
    assert 'linear' in str(traced.graph) and 'mkldnn' not in str(traced.graph)
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode() as mode:
        fx, fw = mode.from_tensor(x), mode.from_tensor(w)
        assert not gemm._eligible(fx, fw, None)
        assert gemm.linear(fx, fw).shape == (96, 80)


def test_backend_probes_leave_the_global_random_stream():
    """The one-time checks that oneDNN works here (gemm's and fusion's) draw from their own
    generators: a seeded script draws the same numbers whichever call runs them first."""
    from mxtorch import fusion
    for probe in (gemm._onednn_available, fusion._onednn_available):
        probe.cache_clear()
        state = torch.random.get_rng_state()
        probe()
        assert torch.equal(state, torch.random.get_rng_state()), probe
