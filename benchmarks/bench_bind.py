"""Cost of loading a checkpoint and binding it, mxtorch against MXNet 1.9.1, interleaved.

    python benchmarks/bench_bind.py [--rounds 7] [--mxnet-python /tmp/mxref/bin/python]

Large graphs: VGG-11 with BatchNorm and AlexNet (mxtorch.models, random weights saved once as an
MXNet checkpoint, which both load). Each round, in rotating order, each framework runs the whole
sequence a user runs: `mx.model.load_checkpoint`, `Module.bind` (inference, batch 1),
`set_params`, the first forward (output read back), and separately a training `simple_bind`
(gradients for every argument). MXNet computes asynchronously, so each of its stages ends with
`mx.nd.waitall()`: a stage's time is the work it causes. Small graphs: binding one small network
again and again (an LSTM step over FusedRNNCell's fused RNN, a spatial-transformer net), per
`simple_bind` + forward + backward, as MXNet's unit tests do. MXNet runs in its own process
(--mxnet-python), driven step by step; medians over the rounds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

STAGES = ('load', 'bind', 'set_params', 'first forward', 'total', 'train simple_bind')


def small_graphs(mx):
    """name -> (symbol, input shapes): small graphs bound once per use."""
    data = mx.sym.Variable('data')
    rnn = mx.sym.RNN(data=data, parameters=mx.sym.Variable('params'),
                     state=mx.sym.Variable('state'), state_cell=mx.sym.Variable('cell'),
                     state_size=32, num_layers=2, mode='lstm', name='rnn')
    n_params = 4 * 32 * (16 + 32 + 2) + 4 * 32 * (32 + 32 + 2)
    loc = mx.sym.FullyConnected(mx.sym.Flatten(data), num_hidden=6, name='loc')
    stn = mx.sym.SpatialTransformer(data=data, loc=loc, target_shape=(8, 8),
                                    transform_type='affine', sampler_type='bilinear')
    return {'fused LSTM 2x32, T=5': (rnn, dict(data=(5, 4, 16), params=(n_params,),
                                                state=(2, 4, 32), cell=(2, 4, 32))),
            'spatial transformer 1x3x16x16': (stn, dict(data=(1, 3, 16, 16)))}


def time_large(mx, prefix, waitall):
    """Seconds per stage of loading and binding `prefix`-0000 (see the module's doc)."""
    times = {}
    t = time.perf_counter()
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    waitall()
    times['load'] = time.perf_counter() - t
    t = time.perf_counter()
    mod = mx.mod.Module(sym, data_names=['data'], label_names=None, context=mx.cpu())
    mod.bind(data_shapes=[('data', (1, 3, 224, 224))], for_training=False)
    waitall()
    times['bind'] = time.perf_counter() - t
    t = time.perf_counter()
    mod.set_params(args, auxs)
    waitall()
    times['set_params'] = time.perf_counter() - t
    t = time.perf_counter()
    mod.forward(mx.io.DataBatch([mx.nd.ones((1, 3, 224, 224))]), is_train=False)
    mod.get_outputs()[0].asnumpy()
    times['first forward'] = time.perf_counter() - t
    times['total'] = sum(times.values())
    del mod, args, auxs
    t = time.perf_counter()
    exe = sym.simple_bind(mx.cpu(), grad_req='write', data=(1, 3, 224, 224))
    waitall()
    times['train simple_bind'] = time.perf_counter() - t
    del exe
    return times


def time_small(mx, name, repeat=20):
    """Seconds per simple_bind + forward + backward of one small graph."""
    sym, shapes = small_graphs(mx)[name]
    start = time.perf_counter()
    for _ in range(repeat):
        exe = sym.simple_bind(mx.cpu(), **shapes)
        for arr in exe.arg_arrays:
            arr[:] = 0.1
        exe.forward(is_train=True)
        exe.backward([mx.nd.ones(o.shape) for o in exe.outputs])
        exe.grad_arrays[0].asnumpy()
    return (time.perf_counter() - start) / repeat


def worker():
    """The MXNet side: one JSON request per line on stdin, one reply per line."""
    import mxnet as mx
    for line in sys.stdin:
        req = json.loads(line)
        if req['kind'] == 'large':
            reply = time_large(mx, req['prefix'], mx.nd.waitall)
        else:
            reply = time_small(mx, req['name'])
        print(json.dumps(reply), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--mxnet-python', default=os.environ.get('MXNET_PYTHON',
                                                                 '/tmp/mxref/bin/python'))
    parser.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker()
    import mxtorch as mx
    import harness
    proc = subprocess.Popen([args.mxnet_python, os.path.abspath(__file__), '--worker'],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(**req):
        proc.stdin.write(json.dumps(req) + '\n')
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    with tempfile.TemporaryDirectory() as tmp:
        from mxtorch.models import get_model
        large = {}
        for name, kwargs in (('vgg11_bn', dict(num_layers=11, batch_norm=True)), ('alexnet', {})):
            sym = get_model('vgg' if name.startswith('vgg') else name, num_classes=1000,
                            **kwargs).get_children()[0]     # the scores, as an export
            prefix = os.path.join(tmp, name)
            mod = mx.mod.Module(sym, label_names=None)
            mod.bind([('data', (1, 3, 224, 224))], for_training=False)
            mod.init_params(mx.init.Xavier())
            mod.save_checkpoint(prefix, 0)
            large[name] = prefix
            del mod
        print('machine: %s; MXNet: %s' % (harness.machine(), args.mxnet_python))
        results = {}
        for r in range(args.rounds):
            for name, prefix in large.items():
                pair = [('mxtorch', lambda p=prefix: time_large(mx, p, lambda: None)),
                        ('MXNet 1.9.1', lambda p=prefix: ask(kind='large', prefix=p))]
                for who, fn in (pair if r % 2 == 0 else pair[::-1]):
                    results.setdefault((name, who), []).append(fn())
            for name in small_graphs(mx):
                pair = [('mxtorch', lambda n=name: time_small(mx, n)),
                        ('MXNet 1.9.1', lambda n=name: ask(kind='small', name=n))]
                for who, fn in (pair if r % 2 == 0 else pair[::-1]):
                    results.setdefault((name, who), []).append(fn())
        proc.stdin.close()
        proc.wait()
    print('\n| graph | stage | mxtorch | MXNet 1.9.1 | ratio |')
    print('|---|---|---:|---:|---:|')
    for name in large:
        for stage in STAGES:
            ours = statistics.median(t[stage] for t in results[(name, 'mxtorch')]) * 1e3
            theirs = statistics.median(t[stage] for t in results[(name, 'MXNet 1.9.1')]) * 1e3
            print('| %s | %s | %.1f ms | %.1f ms | %.2f |' % (name, stage, ours, theirs,
                                                             ours / theirs))
    for name in small_graphs(mx):
        ours = statistics.median(results[(name, 'mxtorch')]) * 1e3
        theirs = statistics.median(results[(name, 'MXNet 1.9.1')]) * 1e3
        print('| %s | simple_bind+forward+backward | %.2f ms | %.2f ms | %.2f |'
              % (name, ours, theirs, ours / theirs))


if __name__ == '__main__':
    main()
