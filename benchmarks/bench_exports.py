"""Inference and checkpoint loading of real exported models, mxtorch against MXNet 1.9.1.

    python benchmarks/bench_exports.py [--rounds 7] [--dir /tmp/exports] [--no-load] [--cpu] [NAME ...]

The models are what tests/fixtures/gen_gluoncv_exports.py writes with the real MXNet 1.9.1
(GluonCV / GluonNLP `HybridBlock.export` and a few symbol checkpoints: NAME-symbol.json,
NAME-0000.params, and NAME-io.npz holding the inputs and MXNet's outputs). Both frameworks run
the same user code: `mx.model.load_checkpoint`, a `Module` bound for inference with the
inputs' shapes, `set_params`, then `forward` with the outputs read back (`wait_to_read`).
MXNet runs in its own process (this script with --worker under --mxnet-python), driven step
by step, so that the two alternate: every round times each framework in turn, the order
alternating between rounds, and the figures are medians over the rounds. Both run on one
thread (OMP_NUM_THREADS=1, torch.set_num_threads(1)).

Per model it prints the inference time of each (after up to 12 untimed forwards, or 5 s of
them, each; a round runs as many forwards as fill about 0.3 s), their ratio (of the medians,
and of the fastest rounds: on a busy machine the fastest round is the one least disturbed; --cpu times by each process's CPU time instead, which a
machine shared with other jobs disturbs less; MXNet's engine threads are counted), whether mxtorch's outputs match MXNet's saved ones, and (unless
--no-load) the time of load_checkpoint + bind + set_params + first forward and of
load_checkpoint alone, with their ratios; then the median and geometric mean of the ratios.
"""
import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_SECONDS = 0.3
WARM_FORWARDS, WARM_SECONDS = 12, 5.0      # untimed forwards before the rounds


def _inputs(prefix):
    io = np.load(prefix + '-io.npz')
    inputs = [io['in%d' % i] for i in range(sum(k.startswith('in') for k in io.files))]
    expected = [io['out%d' % i] for i in range(sum(k.startswith('out') for k in io.files))]
    return inputs, expected


class Model:
    """One export loaded and bound by `mx` (mxtorch or mxnet), timed stage by stage."""

    def __init__(self, mx, prefix):
        self.mx = mx
        inputs, _ = _inputs(prefix)
        start = time.perf_counter()
        sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
        mx.nd.waitall()
        loaded = time.perf_counter()
        data_names = [n for n in sym.list_arguments() if n not in args]
        mod = mx.mod.Module(sym, data_names=data_names, label_names=None)
        mod.bind([(n, x.shape) for n, x in zip(data_names, inputs)], for_training=False)
        mod.set_params(args, auxs)
        self.batch = mx.io.DataBatch([mx.nd.array(x) for x in inputs])
        self.mod = mod
        self.outputs = self.forward()
        self.times = {'load_checkpoint': loaded - start,
                      'load+bind+first forward': time.perf_counter() - start}

    def forward(self):
        self.mod.forward(self.batch, is_train=False)
        outs = self.mod.get_outputs()
        for o in outs:
            o.wait_to_read()
        return outs

    def run(self, n, cpu=False):
        clock = time.process_time if cpu else time.perf_counter
        start = clock()
        for _ in range(n):
            self.forward()
        return clock() - start


def matches(outs, expected):
    """'ok' or what differs (detections whose scores tie may come in either order)."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'tests', 'fixtures'))
    import gen_gluoncv_exports as gen
    got = [o.asnumpy() for o in outs]
    if gen._detections(expected) and not gen._close(got, expected):
        got, expected = gen._sorted_detections(got), gen._sorted_detections(expected)
    for g, e in zip(got, expected):
        if g.shape != e.shape:
            return 'shape %s != %s' % (g.shape, e.shape)
        scale = max(1.0, float(np.abs(e).max())) if e.size else 1.0
        err = float(np.abs(g.astype('float64') - e).max()) / scale if e.size else 0.0
        if err > 1e-4:
            return 'rel err %.1e' % err
    return 'ok'


def worker():
    """The MXNet side: one JSON request per line on stdin, one JSON reply per line."""
    import mxnet as mx
    model = None
    for line in sys.stdin:
        req = json.loads(line)
        if req['cmd'] == 'load':
            model = None
            gc.collect()
            model = Model(mx, req['prefix'])
            reply = model.times
        elif req['cmd'] == 'run':
            reply = {'seconds': model.run(req['n'], req.get('cpu', False))}
        else:
            model = None
            gc.collect()
            reply = {}
        print(json.dumps(reply), flush=True)


class Worker:
    def __init__(self, python):
        env = dict(os.environ, OMP_NUM_THREADS='1', MKL_NUM_THREADS='1',
                   OMP_WAIT_POLICY='PASSIVE', KMP_BLOCKTIME='0')
        self.proc = subprocess.Popen([python, os.path.abspath(__file__), '--worker'],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + '\n')
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError('the MXNet worker died (exit %s)' % self.proc.wait())
        return json.loads(line)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()


def bench_one(mx, prefix, worker, rounds, load_rounds, cpu=False):
    name = os.path.basename(prefix)
    _, expected = _inputs(prefix)
    loads = {'mxtorch': [], 'MXNet': []}
    model = None

    def load_ours():
        nonlocal model
        model = None
        gc.collect()
        model = Model(mx, prefix)
        return model.times

    for r in range(max(1, load_rounds)):
        pair = [('mxtorch', load_ours), ('MXNet', lambda: worker.ask(cmd='load', prefix=prefix))]
        for who, fn in (pair if r % 2 == 0 else pair[::-1]):
            loads[who].append(fn())
    check = matches(model.outputs, expected)
    # calibrate: forwards per round filling about TARGET_SECONDS
    single = min(model.run(1) for _ in range(2))
    theirs1 = min(worker.ask(cmd='run', n=1)['seconds'] for _ in range(2))
    n = max(1, int(round(TARGET_SECONDS / max(single, theirs1))))
    # warm-up, both alike: mxtorch settles what it traces and times in its first ~10 forwards
    # (inference_graph.py), which would otherwise fall into the first rounds of slow models
    warm = min(WARM_FORWARDS, max(3, int(WARM_SECONDS / max(single, theirs1))))
    model.run(warm)
    worker.ask(cmd='run', n=warm)
    times = {'mxtorch': [], 'MXNet': []}
    for r in range(rounds):
        pair = [('mxtorch', lambda: model.run(n, cpu)),
                ('MXNet', lambda: worker.ask(cmd='run', n=n, cpu=cpu)['seconds'])]
        for who, fn in (pair if r % 2 == 0 else pair[::-1]):
            times[who].append(fn() / n)
    worker.ask(cmd='drop')
    row = {'name': name, 'check': check,
           'ours': statistics.median(times['mxtorch']), 'theirs': statistics.median(times['MXNet']),
           'ours_min': min(times['mxtorch']), 'theirs_min': min(times['MXNet'])}
    if load_rounds:
        for stage in ('load_checkpoint', 'load+bind+first forward'):
            row[stage] = (statistics.median(t[stage] for t in loads['mxtorch']),
                          statistics.median(t[stage] for t in loads['MXNet']))
    return row


def _geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('names', nargs='*')
    parser.add_argument('--dir', default='/tmp/exports')
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--load-rounds', type=int, default=3)
    parser.add_argument('--no-load', action='store_true')
    parser.add_argument('--cpu', action='store_true',
                        help='time inference by process CPU time (both sides) instead of wall '
                             'time: steadier on a machine shared with other jobs')
    parser.add_argument('--json', help='also write the rows to this file')
    parser.add_argument('--mxnet-python', default=os.environ.get('MXNET_PYTHON',
                                                                 '/tmp/mxref/bin/python'))
    parser.add_argument('--worker', action='store_true', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker()
    os.environ['OMP_NUM_THREADS'] = '1'
    import torch
    torch.set_num_threads(1)
    sys.path.append(os.path.dirname(HERE))     # an installed (or PYTHONPATH) mxtorch first
    import mxtorch as mx
    import harness
    names = args.names or sorted(f[:-len('-symbol.json')] for f in os.listdir(args.dir)
                                 if f.endswith('-symbol.json'))
    print('machine: %s; MXNet: %s; clock: %s; load average %s' % (
        harness.machine(), args.mxnet_python, 'process CPU time' if args.cpu else 'wall',
        ' '.join('%.2f' % v for v in os.getloadavg())))
    load_rounds = 0 if args.no_load else args.load_rounds
    print('%-36s %10s %10s %6s %6s  %-10s %s' % ('model', 'mxtorch', 'MXNet', 'ratio', 'min r',
                                                'outputs',
                                           '' if args.no_load else
                                           'load_ckpt ratio / load+bind+1st fwd (ours, ratio)'))
    rows = []
    worker_proc = Worker(args.mxnet_python)
    for name in names:
        try:
            row = bench_one(mx, os.path.join(args.dir, name), worker_proc, args.rounds,
                            load_rounds, args.cpu)
        except Exception as err:  # noqa: BLE001 - the report's row
            print('%-36s FAILS %s: %s' % (name, type(err).__name__, str(err)[:200]), flush=True)
            worker_proc.close()
            worker_proc = Worker(args.mxnet_python)
            continue
        rows.append(row)
        line = '%-36s %8.2fms %8.2fms %6.2f %6.2f  %-10s' % (
            name, row['ours'] * 1e3, row['theirs'] * 1e3, row['ours'] / row['theirs'],
            row['ours_min'] / row['theirs_min'], row['check'])
        if load_rounds:
            (lo, lt), (to, tt) = row['load_checkpoint'], row['load+bind+first forward']
            line += ' %5.2f / %8.1fms %5.2f' % (lo / lt, to * 1e3, to / tt)
        print(line, flush=True)
    worker_proc.close()
    if rows:
        for label, ours, theirs in (('median', 'ours', 'theirs'),
                                    ('fastest', 'ours_min', 'theirs_min')):
            ratios = [r[ours] / r[theirs] for r in rows]
            print('inference ratio of %s rounds: median %.3f, geomean %.3f, max %.2f (%s)' % (
                label, statistics.median(ratios), _geomean(ratios), max(ratios),
                rows[ratios.index(max(ratios))]['name']))
        print('load average %s' % ' '.join('%.2f' % v for v in os.getloadavg()))
        if load_rounds:
            for stage in ('load_checkpoint', 'load+bind+first forward'):
                lr = [r[stage][0] / r[stage][1] for r in rows]
                print('%s ratio: median %.3f, geomean %.3f, max %.2f (%s)' % (
                    stage, statistics.median(lr), _geomean(lr), max(lr),
                    rows[lr.index(max(lr))]['name']))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == '__main__':
    main()
