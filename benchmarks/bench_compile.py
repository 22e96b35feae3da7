"""Issue 13, CPU: Module.fit with the bound plan compiled by torch.compile (MXTORCH_COMPILE=1,
mxtorch/compiler.py) against the same Module uncompiled and a hand-written PyTorch eager loop
(bench_module.py's), interleaved. The compile itself (cached on disk) is paid before timing."""
import os
import time

import mxtorch as mx
from mxtorch import compiler
from mxtorch.models import lenet, mlp
from bench_module import _param, mxtorch_epoch, synthetic, torch_epoch
from harness import interleaved, report


def compiled_epoch(sym, x, y, batch):
    """mxtorch_epoch with MXTORCH_COMPILE=1 while the module binds and first runs."""
    saved = os.environ.get('MXTORCH_COMPILE')
    os.environ['MXTORCH_COMPILE'] = '1'
    try:
        start = time.perf_counter()
        epoch = mxtorch_epoch(sym, x, y, batch)
        compiler.wait()
        print('  compile + first epoch: %.1f s' % (time.perf_counter() - start))
    finally:
        if saved is None:
            del os.environ['MXTORCH_COMPILE']
        else:
            os.environ['MXTORCH_COMPILE'] = saved
    return epoch


def main():
    results = []
    cases = [('MLP 784-128-64-10, batch 100, 6000 samples', mlp.get_symbol(10), (784,), 6000, 100,
              [('fc_relu', _param(128, 784), _param(128)), ('fc_relu', _param(64, 128), _param(64)),
               ('fc', _param(10, 64), _param(10))]),
             ('LeNet, batch 64, 3200 samples of 1x28x28', lenet.get_symbol(10), (1, 28, 28), 3200,
              64, [('conv', _param(20, 1, 5, 5), _param(20)), ('conv', _param(50, 20, 5, 5),
                                                             _param(50)),
                   ('fc_tanh', _param(500, 800), _param(500)), ('fc', _param(10, 500), _param(10))])]
    for title, sym, shape, n, batch, layers in cases:
        x, y = synthetic(shape, n)
        medians = interleaved({'PyTorch eager loop': torch_epoch(layers, x, y, batch),
                               'mxtorch Module.fit': mxtorch_epoch(sym, x, y, batch),
                               'mxtorch Module.fit, compiled': compiled_epoch(sym, x, y, batch)},
                              rounds=7, seconds=1.0, warmup=1)
        results.append(report(title + ': epoch time', medians, 'PyTorch eager loop', unit=1.0,
                              unit_name='s'))
    return results


if __name__ == '__main__':
    main()
