"""Issue 13, CPU: one training step (forward, backward, SGD with momentum) of the MLP
784-128-64-10 (batch 100 and 1000) and LeNet (batch 64) as a Module, uncompiled and with the bound
plan compiled (MXTORCH_COMPILE=1, mxtorch/compiler.py), against a hand-written PyTorch eager
step, MXNet 1.9.1 (mxnet_worker.py, where MXNET_PYTHON or /tmp/mxref has it) and JAX with the
whole step under jax.jit (jax_worker.py, where JAX_PYTHON names a Python with JAX),
interleaved in one run, one thread each. The compiles (cached on disk) are paid before timing.
"""
import os
import time

import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from mxtorch import compiler
from mxtorch.models import lenet, mlp
from harness import interleaved, report
from workers import Worker, available

MXREF = os.environ.get('MXNET_PYTHON', '/tmp/mxref/bin/python')
JAXPY = os.environ.get('JAX_PYTHON', '/tmp/jaxenv/bin/python')
ONE_THREAD = {'OMP_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1', 'OMP_WAIT_POLICY': 'PASSIVE',
              'XLA_FLAGS': '--xla_cpu_multi_thread_eigen=false',
              'MXNET_ENGINE_TYPE': 'NaiveEngine'}


def module_step(sym, shape, batch, compiled):
    saved = os.environ.get('MXTORCH_COMPILE')
    os.environ['MXTORCH_COMPILE'] = '1' if compiled else '0'
    try:
        rng = np.random.RandomState(1)
        mod = mx.mod.Module(sym)
        mod.bind([('data', (batch,) + shape)], [('softmax_label', (batch,))])
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(optimizer_params={'learning_rate': 0.01, 'momentum': 0.9})
        data = mx.io.DataBatch([mx.nd.array(rng.rand(batch, *shape))],
                               [mx.nd.array(rng.randint(0, 10, batch))])

        def step():
            mod.forward_backward(data)
            mod.update()
        start = time.perf_counter()
        step()
        compiler.wait()
        if compiled:
            print('  compile (cached on disk after the first run): %.1f s'
                  % (time.perf_counter() - start))
        return step
    finally:
        if saved is None:
            del os.environ['MXTORCH_COMPILE']
        else:
            os.environ['MXTORCH_COMPILE'] = saved


def torch_step(kind, shape, batch):
    """The same network as plain torch tensors and ops, trained the way a PyTorch user would."""
    torch.manual_seed(0)
    if kind == 'mlp':
        sizes = [(128, 784), (128,), (64, 128), (64,), (10, 64), (10,)]
    else:
        sizes = [(20, 1, 5, 5), (20,), (50, 20, 5, 5), (50,), (500, 800), (500,), (10, 500),
                 (10,)]
    params = [(torch.randn(*s) * 0.05).requires_grad_() for s in sizes]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    x = torch.rand(batch, *shape)
    y = torch.randint(0, 10, (batch,))

    def forward(h):
        if kind == 'mlp':
            h = F.relu(F.linear(h, params[0], params[1]))
            h = F.relu(F.linear(h, params[2], params[3]))
            return F.linear(h, params[4], params[5])
        h = F.max_pool2d(torch.tanh(F.conv2d(h, params[0], params[1])), 2, 2)
        h = F.max_pool2d(torch.tanh(F.conv2d(h, params[2], params[3])), 2, 2)
        h = torch.tanh(F.linear(h.flatten(1), params[4], params[5]))
        return F.linear(h, params[6], params[7])

    def step():
        loss = F.cross_entropy(forward(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def main():
    torch.set_num_threads(1)
    mxnet = Worker(MXREF, 'mxnet_worker.py', ONE_THREAD) if available(MXREF, 'mxnet') else None
    jax = Worker(JAXPY, 'jax_worker.py', ONE_THREAD, one_core=True) \
        if available(JAXPY, 'jax') else None
    results = []
    cases = [('MLP 784-128-64-10, batch 100', 'mlp', mlp.get_symbol(10), (784,), 100),
             ('MLP 784-128-64-10, batch 1000', 'mlp', mlp.get_symbol(10), (784,), 1000),
             ('LeNet, batch 64', 'lenet', lenet.get_symbol(10), (1, 28, 28), 64)]
    for title, kind, sym, shape, batch in cases:
        candidates = {'PyTorch eager': torch_step(kind, shape, batch),
                      'mxtorch Module': module_step(sym, shape, batch, False),
                      'mxtorch Module, compiled': module_step(sym, shape, batch, True)}
        if mxnet is not None:
            candidates['MXNet 1.9.1 Module'] = mxnet.step_fn(
                mode='train', json=sym.tojson(), data=(batch,) + shape, label=(batch,))
        if jax is not None:
            candidates['JAX jit (whole step)'] = jax.step_fn(model=kind, batch=batch)
        medians = interleaved(candidates, rounds=7, seconds=1.0, warmup=3)
        results.append(report(title + ': training step, 1 thread', medians, 'PyTorch eager'))
    for worker in (mxnet, jax):
        if worker is not None:
            worker.close()
    return results


if __name__ == '__main__':
    main()
