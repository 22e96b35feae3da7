"""FullyConnected's GEMM backend (mxtorch/ops/gemm.py), one thread: the three products of one
784 -> 128 layer at batch 1000 by PyTorch's F.linear/mm and by oneDNN's matmul, and a Module
training step of the MLP 784-128-64-10 (batch 100 and 1000) with MXTORCH_GEMM=torch (always
PyTorch's GEMM) against the default per-shape choice, interleaved in one process. Reported
as CPU time of this thread (time.thread_time), which a busy shared machine distorts less than
wall time (preemptions land on whichever candidate is running); wall medians are printed too."""
import os
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from mxtorch.models import mlp
from harness import machine


def products():
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(1000, 784, generator=gen), torch.randn(128, 784, generator=gen) / 28
    b, g = torch.randn(128, generator=gen), torch.randn(1000, 128, generator=gen)
    onednn = torch.ops.mkldnn._linear_pointwise
    cases = {'forward x W^T + b': (lambda: F.linear(x, w, b),
                                   lambda: onednn(x, w, b, 'none', [], '')),
             'dX = g W': (lambda: g.mm(w), lambda: onednn(g, w.t(), None, 'none', [], '')),
             'dW = g^T x': (lambda: g.t().mm(x),
                            lambda: onednn(g.t(), x.t(), None, 'none', [], ''))}
    out = []
    for title, (pytorch, dnn) in cases.items():
        out.append(compare('%s, (1000, 784) x (128, 784)' % title,
                           {'PyTorch (MKL)': pytorch, 'oneDNN': dnn}, calls=20))
    return out


def compare(title, candidates, calls, rounds=9):
    """Interleaved rounds of `calls` calls each; medians of CPU and wall time per call."""
    cpu = {name: [] for name in candidates}
    wall = {name: [] for name in candidates}
    for fn in candidates.values():
        for _ in range(3):
            fn()
    names = list(candidates)
    for r in range(rounds):
        for name in names[r % 2:] + names[:r % 2]:
            start_cpu, start_wall = time.thread_time(), time.perf_counter()
            for _ in range(calls):
                candidates[name]()
            cpu[name].append((time.thread_time() - start_cpu) / calls)
            wall[name].append((time.perf_counter() - start_wall) / calls)
    lines = ['%s, 1 thread (medians of %d interleaved rounds; %s)' % (title, rounds, machine())]
    base = statistics.median(cpu[names[0]])
    for name in names:
        c, w = statistics.median(cpu[name]), statistics.median(wall[name])
        lines.append('  %-28s CPU %8.3f ms  %.3fx   (wall %8.3f ms)' % (name, c * 1e3, c / base,
                                                                      w * 1e3))
    print('\n'.join(lines))
    return '\n'.join(lines)


def module_step(batch, mode):
    rng = np.random.RandomState(1)
    mod = mx.mod.Module(mlp.get_symbol(10))
    mod.bind([('data', (batch, 784))], [('softmax_label', (batch,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 0.01, 'momentum': 0.9})
    data = mx.io.DataBatch([mx.nd.array(rng.rand(batch, 784))],
                           [mx.nd.array(rng.randint(0, 10, batch))])

    def step():
        os.environ['MXTORCH_GEMM'] = mode
        mod.forward_backward(data)
        mod.update()
    return step


def main():
    torch.set_num_threads(1)
    saved = os.environ.get('MXTORCH_GEMM')
    try:
        results = products()
        for batch in (100, 1000):
            results.append(compare('MLP 784-128-64-10 Module step, batch %d' % batch,
                                   {'MXTORCH_GEMM=torch': module_step(batch, 'torch'),
                                    'per-shape choice (default)': module_step(batch, 'auto')},
                                   calls=200 if batch == 100 else 30))
    finally:
        if saved is None:
            os.environ.pop('MXTORCH_GEMM', None)
        else:
            os.environ['MXTORCH_GEMM'] = saved
    return results


if __name__ == '__main__':
    main()
