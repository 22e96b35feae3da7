"""Issue 3 target: Module.fit throughput (samples/s) for the 784-128-64-10 MLP (batch 100) and
LeNet (batch 64) on synthetic data, against hand-written PyTorch eager training loops of the
same math (forward, softmax cross-entropy gradient, SGD with momentum, accuracy), >= 0.9x."""
import logging

import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from mxtorch.models import lenet, mlp
from harness import interleaved, report

QUIET = logging.getLogger('bench')
QUIET.setLevel(logging.ERROR)


def synthetic(shape, n, seed=0):
    rng = np.random.RandomState(seed)
    return rng.rand(n, *shape).astype(np.float32), rng.randint(0, 10, n).astype(np.float32)


def mxtorch_epoch(sym, x, y, batch):
    it = mx.io.NDArrayIter(x, y, batch_size=batch)
    mod = mx.mod.Module(sym, logger=QUIET)
    params = {'learning_rate': 0.01, 'momentum': 0.9}
    mod.fit(it, num_epoch=1, optimizer_params=params, initializer=mx.init.Xavier())

    def epoch():
        mod.fit(it, num_epoch=1, optimizer_params=params)
    return epoch


def torch_epoch(layers, x, y, batch):
    """The same network as plain torch tensors and ops, trained the way a PyTorch user would."""
    data, labels = torch.from_numpy(x), torch.from_numpy(y).long()
    params = [p for layer in layers for p in layer[1:] if p is not None]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)

    def forward(h):
        for kind, w, b in layers:
            if kind == 'conv':
                h = torch.tanh(F.conv2d(h, w, b))
                h = F.max_pool2d(h, 2, 2)
            elif kind == 'fc_tanh':
                h = torch.tanh(F.linear(h.flatten(1), w, b))
            elif kind == 'fc_relu':
                h = torch.relu(F.linear(h.flatten(1), w, b))
            else:
                h = F.linear(h.flatten(1), w, b)
        return h

    def epoch():
        correct = 0
        for start in range(0, len(labels), batch):
            xb, yb = data[start:start + batch], labels[start:start + batch]
            logits = forward(xb)
            loss = F.cross_entropy(logits, yb, reduction='sum') / batch
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            correct += int((logits.argmax(1) == yb).sum())
        return correct
    return epoch


def _param(*shape):
    return (torch.randn(*shape) * 0.05).requires_grad_()


def main():
    results = []
    x, y = synthetic((784,), 6000)
    mlp_layers = [('fc_relu', _param(128, 784), _param(128)), ('fc_relu', _param(64, 128),
                  _param(64)), ('fc', _param(10, 64), _param(10))]
    medians = interleaved({'PyTorch eager loop': torch_epoch(mlp_layers, x, y, 100),
                           'mxtorch Module.fit': mxtorch_epoch(mlp.get_symbol(10), x, y, 100)},
                          rounds=7, seconds=1.0, warmup=1)
    results.append(report('MLP 784-128-64-10, batch 100, 6000 samples per epoch: epoch time',
                          medians, 'PyTorch eager loop', unit=1.0, unit_name='s'))
    print('  throughput: %s' % ', '.join('%s %.0f samples/s' % (k, 6000 / v)
                                         for k, v in medians.items()))
    x, y = synthetic((1, 28, 28), 3200)
    lenet_layers = [('conv', _param(20, 1, 5, 5), _param(20)),
                    ('conv', _param(50, 20, 5, 5), _param(50)),
                    ('fc_tanh', _param(500, 800), _param(500)), ('fc', _param(10, 500), _param(10))]
    medians = interleaved({'PyTorch eager loop': torch_epoch(lenet_layers, x, y, 64),
                           'mxtorch Module.fit': mxtorch_epoch(lenet.get_symbol(10), x, y, 64)},
                          rounds=7, seconds=2.0, warmup=1)
    results.append(report('LeNet, batch 64, 3200 samples of 1x28x28 per epoch: epoch time',
                          medians, 'PyTorch eager loop', unit=1.0, unit_name='s'))
    print('  throughput: %s' % ', '.join('%s %.0f samples/s' % (k, 3200 / v)
                                         for k, v in medians.items()))
    return results


if __name__ == '__main__':
    main()
