"""Issue 14 targets: a hybridized Gluon model trains at least as fast as the same model as a
Module, and a non-hybridized Block runs at PyTorch eager speed.

One training step (forward, softmax cross-entropy, backward, SGD with momentum) of two nets,
each written four ways and timed interleaved:
  * Gluon HybridSequential, hybridized, with gluon.Trainer (the loss block imperative, or
    hybridized too)
  * the same Gluon net not hybridized (every layer runs imperatively)
  * the same net as an mx.sym graph with SoftmaxOutput in an mx.mod.Module
    (forward_backward + update)
  * a PyTorch nn.Module of the same layers with torch.optim.SGD
Nets: MLP 784-256-128-10 (relu), batch 64; CNN conv 3x3x16 - relu - maxpool - conv 3x3x32 -
relu - maxpool - dense 10 on 1x28x28, batch 32.

    python benchmarks/bench_gluon.py [--rounds 9] [--ctx gpu] [--calls] [--cpu-time]

--calls times single small calls instead (mx.nd.relu, x + y, FullyConnected, a Dense layer)
against the same torch calls: the per-call Python overhead of the imperative path.
"""
import argparse
import logging
import statistics
import sys
import time

import numpy as np
import torch
from torch import nn as tnn

import mxtorch as mx
from mxtorch import autograd, gluon
from mxtorch.gluon import nn
from harness import interleaved, report

LR, MOMENTUM = 0.01, 0.9


def gluon_net(kind):
    net = nn.HybridSequential(prefix='net_')
    with net.name_scope():
        if kind == 'mlp':
            net.add(nn.Dense(256, activation='relu'), nn.Dense(128, activation='relu'),
                    nn.Dense(10))
        else:
            net.add(nn.Conv2D(16, 3, activation='relu'), nn.MaxPool2D(2),
                    nn.Conv2D(32, 3, activation='relu'), nn.MaxPool2D(2), nn.Dense(10))
    return net


def symbol_net(kind):
    h = mx.sym.var('data')
    if kind == 'mlp':
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=256, name='fc1'), 'relu')
        h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=128, name='fc2'), 'relu')
    else:
        h = mx.sym.Activation(mx.sym.Convolution(h, kernel=(3, 3), num_filter=16,
                                                 name='conv1'), 'relu')
        h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='max')
        h = mx.sym.Activation(mx.sym.Convolution(h, kernel=(3, 3), num_filter=32,
                                                 name='conv2'), 'relu')
        h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type='max')
    h = mx.sym.FullyConnected(h, num_hidden=10, name='fc3')
    return mx.sym.SoftmaxOutput(h, name='softmax')


def torch_net(kind):
    if kind == 'mlp':
        return tnn.Sequential(tnn.Linear(784, 256), tnn.ReLU(), tnn.Linear(256, 128),
                              tnn.ReLU(), tnn.Linear(128, 10))
    return tnn.Sequential(tnn.Conv2d(1, 16, 3), tnn.ReLU(), tnn.MaxPool2d(2),
                          tnn.Conv2d(16, 32, 3), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Flatten(),
                          tnn.Linear(32 * 5 * 5, 10))


def data(kind, ctx):
    batch, shape = (64, (784,)) if kind == 'mlp' else (32, (1, 28, 28))
    rng = np.random.RandomState(0)
    x = rng.rand(batch, *shape).astype(np.float32)
    y = rng.randint(0, 10, batch).astype(np.float32)
    return mx.nd.array(x, ctx=ctx), mx.nd.array(y, ctx=ctx)


def gluon_step(kind, ctx, hybridize, hybridize_loss=False):
    net = gluon_net(kind)
    net.initialize(mx.init.Xavier(), ctx=ctx)
    if hybridize:
        net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), 'sgd',
                            {'learning_rate': LR, 'momentum': MOMENTUM})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    if hybridize_loss:
        loss_fn.hybridize(static_alloc=True, static_shape=True)
    x, y = data(kind, ctx)

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        return loss
    return step


def module_step(kind, ctx):
    x, y = data(kind, ctx)
    mod = mx.mod.Module(symbol_net(kind), context=ctx, logger=logging.getLogger('quiet'))
    mod.bind(data_shapes=[('data', x.shape)], label_shapes=[('softmax_label', y.shape)])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer='sgd', optimizer_params={
        'learning_rate': LR, 'momentum': MOMENTUM, 'rescale_grad': 1.0 / x.shape[0]})
    batch = mx.io.DataBatch([x], [y])

    def step():
        mod.forward_backward(batch)
        mod.update()
    return step


def torch_step(kind, device):
    net = torch_net(kind).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    x, y = data(kind, mx.cpu())
    xt = torch.from_numpy(x.asnumpy()).to(device)
    yt = torch.from_numpy(y.asnumpy()).long().to(device)

    def step():
        loss = tnn.functional.cross_entropy(net(xt), yt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


def call_overheads(rounds, seconds):
    """Per-call time of small imperative calls (mx.nd / a Gluon layer against the same torch
    call on the same tensors), where the per-call Python overhead shows: 100 calls per sample."""
    x, w, b = mx.nd.ones((64, 32)), mx.nd.ones((16, 32)), mx.nd.ones((16,))
    t, tw, tb = x._tensor, w._tensor, b._tensor
    dense = nn.Dense(16, in_units=32)
    dense.initialize()
    linear = tnn.Linear(32, 16)
    pairs = {
        'relu': (lambda: mx.nd.relu(x), lambda: torch.relu(t)),
        'x + y': (lambda: x + x, lambda: t + t),
        'FullyConnected / linear': (lambda: mx.nd.FullyConnected(x, w, b, num_hidden=16),
                                    lambda: tnn.functional.linear(t, tw, tb)),
        'Dense(16) / nn.Linear(16) call': (lambda: dense(x), lambda: linear(t)),
    }

    def hundred(fn):
        def run():
            for _ in range(100):
                fn()
        return run
    candidates = {}
    for name, (mx_fn, torch_fn) in pairs.items():
        candidates['mxtorch ' + name] = hundred(mx_fn)
        candidates['torch ' + name] = hundred(torch_fn)
    with torch.no_grad():
        medians = interleaved(candidates, rounds=rounds, seconds=seconds)
    lines = ['per-call time, (64, 32) float32 input, no autograd recording (median of '
             'interleaved rounds)']
    for name in pairs:
        mine, theirs = medians['mxtorch ' + name] / 100, medians['torch ' + name] / 100
        lines.append('  %-32s mxtorch %7.2f us   torch %7.2f us   overhead %6.2f us' % (
            name, mine * 1e6, theirs * 1e6, (mine - theirs) * 1e6))
    text = '\n'.join(lines)
    print(text)
    return text


def _synced(fn, ctx):
    if ctx.device_type != 'gpu':
        return fn

    def run():
        fn()
        torch.cuda.synchronize()
    return run


def main(argv=()):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rounds', type=int, default=9)
    parser.add_argument('--seconds', type=float, default=0.5)
    parser.add_argument('--ctx', default='cpu', choices=('cpu', 'gpu'))
    parser.add_argument('--calls', action='store_true',
                        help='time single small calls instead (per-call overhead)')
    parser.add_argument('--cpu-time', action='store_true',
                        help="time by this thread's CPU time instead of wall time (steadier "
                             'when other jobs share the machine; 1 torch thread, CPU only)')
    args = parser.parse_args(list(argv))
    timer = time.thread_time if args.cpu_time else time.perf_counter
    if args.calls:
        return [call_overheads(args.rounds, args.seconds)]
    ctx = mx.gpu(0) if args.ctx == 'gpu' else mx.cpu()
    device = 'cuda' if args.ctx == 'gpu' else 'cpu'
    results = []
    for kind, title in (('mlp', 'MLP 784-256-128-10, batch 64'),
                        ('cnn', 'CNN conv16-pool-conv32-pool-dense10, 1x28x28, batch 32')):
        candidates = {
            'PyTorch nn.Module eager': torch_step(kind, device),
            'Gluon hybridized': gluon_step(kind, ctx, True),
            'Gluon hybridized, loss too': gluon_step(kind, ctx, True, True),
            'Module forward_backward+update': module_step(kind, ctx),
            'Gluon not hybridized': gluon_step(kind, ctx, False),
        }
        candidates = {k: _synced(v, ctx) for k, v in candidates.items()}
        samples = {}
        medians = interleaved(candidates, rounds=args.rounds, seconds=args.seconds,
                              samples=samples, timer=timer)
        text = report('%s: training step (%s)' % (title, args.ctx), medians,
                      'PyTorch nn.Module eager')

        def paired(name, base):       # the median of the per-round ratios: steadier under load
            return statistics.median(a / b for a, b in zip(samples[name], samples[base]))
        mod, eager = 'Module forward_backward+update', 'PyTorch nn.Module eager'
        line = ('  per-round ratios (medians): hybridized / Module %.3f, hybridized with its loss '
                '/ Module %.3f, not hybridized / PyTorch %.3f' % (
                    paired('Gluon hybridized', mod), paired('Gluon hybridized, loss too', mod),
                    paired('Gluon not hybridized', eager)))
        print(line)
        results.append(text + '\n' + line)
    return results


if __name__ == '__main__':
    main(sys.argv[1:])
