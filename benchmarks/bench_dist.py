"""Data-parallel training with the dist_sync KVStore on CPU worker processes (gloo, loopback).

    python benchmarks/bench_dist.py [--workers 1 2 4] [--steps 20] [--repeats 3] [--write]

For each worker count W, W worker processes (this file with --worker) train the 784-128-64-10 MLP
(batch 100 per worker) and LeNet (batch 64 per worker) on MNIST-shaped random data, once with
plain all-reduce and once with 2-bit compression, and time Module.forward_backward + update per
step: the median over the steps, of the slowest worker, then the median over --repeats jobs (run
interleaved with the other worker counts). Each worker keeps its batch (weak scaling), so scaling
efficiency = step time with 1 worker / step time with W workers (1.0 = perfect). Every worker
runs one torch thread, as under torchrun.

Bytes per step and worker: `payload` = what the worker hands to the collectives (kv.bytes_sent:
the float32 gradients, or their packed 2-bit codes); `wire` = bytes it wrote to its sockets
(/proc/self/io wchar), i.e. what the all-reduce / all-gather algorithm really sent.
--write appends the table to benchmarks/RESULTS.md (replacing an earlier one of this benchmark).
"""
import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, 'RESULTS.md')
TITLE = '## Distributed training (bench_dist.py)'
WORKLOADS = {'MLP': ((784,), 100), 'LeNet': ((1, 28, 28), 64)}


def wchar():
    with open('/proc/self/io') as f:
        return next(int(line.split()[1]) for line in f if line.startswith('wchar'))


def measure(mx, network, shape, batch, compression, steps):
    """(median step seconds, payload bytes per step, socket bytes per step) on this worker."""
    import numpy as np
    kv = mx.kv.create('dist_sync')
    if compression:
        kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    mod = mx.mod.Module(network, context=mx.cpu())
    mod.bind([('data', (batch,) + shape)], [('softmax_label', (batch,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(kvstore=kv, optimizer='sgd',
                       optimizer_params={'learning_rate': 0.01, 'momentum': 0.9})
    rng = np.random.RandomState(kv.rank)
    data = mx.io.DataBatch([mx.nd.array(rng.rand(batch, *shape))],
                           [mx.nd.array(rng.randint(0, 10, batch))])
    for _ in range(3):
        mod.forward_backward(data)
        mod.update()
    kv.barrier()
    times, sent, written = [], kv.bytes_sent, wchar()
    for _ in range(steps):
        start = time.perf_counter()
        mod.forward_backward(data)
        mod.update()
        times.append(time.perf_counter() - start)
    result = (statistics.median(times), (kv.bytes_sent - sent) / steps,
              (wchar() - written) / steps)
    kv.barrier()
    return result


def worker(out, steps):
    import torch
    torch.set_num_threads(1)
    import mxtorch as mx
    from mxtorch.models import lenet, mlp
    networks = {'MLP': mlp.get_symbol(10), 'LeNet': lenet.get_symbol(10)}
    results = {}
    for name, (shape, batch) in WORKLOADS.items():
        for compression in (False, True):
            results['%s %s' % (name, '2bit' if compression else 'none')] = measure(
                mx, networks[name], shape, batch, compression, steps)
    with open(out % int(os.environ['RANK']), 'w') as f:
        json.dump(results, f)


def job(workers, steps):
    """{config: (step seconds of the slowest worker, payload bytes, wire bytes)}."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'rank%d.json')
        procs = [subprocess.Popen(
            [sys.executable, __file__, '--worker', out, '--steps', str(steps)],
            env=dict(os.environ, RANK=str(r), WORLD_SIZE=str(workers), MASTER_ADDR='127.0.0.1',
                     MASTER_PORT=str(port), OMP_NUM_THREADS='1'))
            for r in range(workers)]
        if any(p.wait() for p in procs):
            sys.exit('a %d-worker job failed' % workers)
        ranks = []
        for r in range(workers):
            with open(out % r) as f:
                ranks.append(json.load(f))
    return {config: (max(rank[config][0] for rank in ranks), ranks[0][config][1],
                     ranks[0][config][2]) for config in ranks[0]}


def table(runs):
    base = runs[min(runs)]
    lines = ['| workload | compression | workers | step time (ms) | samples/s | scaling '
             'efficiency | payload B/step/worker | wire B/step/worker |',
             '|---|---|---|---|---|---|---|---|']
    for config in base:
        name, compression = config.split()
        batch = WORKLOADS[name][1]
        for workers, results in sorted(runs.items()):
            seconds, payload, wire = results[config]
            lines.append('| %s | %s | %d | %.2f | %.0f | %.2f | %d | %d |' % (
                name, compression, workers, seconds * 1e3, workers * batch / seconds,
                base[config][0] / seconds, payload, wire))
    return '\n'.join(lines)


def notes(runs):
    """What the table shows: the wire-byte saving of 2-bit per worker count, and the caveat."""
    ratios = []
    for workers, results in sorted(runs.items()):
        if workers > 1:
            ratios.append('%d workers: MLP %.1fx, LeNet %.1fx' % (
                workers, results['MLP none'][2] / results['MLP 2bit'][2],
                results['LeNet none'][2] / results['LeNet 2bit'][2]))
    return ('2-bit compression cuts the payload 16x; on the wire (wchar) it saves %s. A ring '
            'all-reduce sends 2(W-1)/W of the payload per worker while the all-gather of 2-bit '
            'codes sends (W-1) times its payload, so the saving shrinks as W grows.\n\n'
            'All W workers share the machine\'s %d cores, which other jobs used too (see the '
            'load average): beyond %d workers they take turns on the cores, so step time grows '
            'with W and the efficiencies measure contention plus communication overhead, not '
            'the speed-up of separate machines. On one worker, 2-bit compression only adds the '
            'quantise/pack/unpack time.'
            % ('; '.join(ratios), os.cpu_count(), os.cpu_count()))


def machine():
    load = os.getloadavg()[0]
    return ('%s, %d CPU cores, Python %s, torch %s, one torch thread per worker; load average '
            '%.1f when the run started (the machine is shared)'
            % (platform.processor() or platform.machine(), os.cpu_count(),
               platform.python_version(), __import__('torch').__version__, load))


def main(argv=()):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2, 4])
    parser.add_argument('--steps', type=int, default=20)
    parser.add_argument('--repeats', type=int, default=3,
                        help='jobs per worker count; the table shows the median step time')
    parser.add_argument('--write', action='store_true', help='append the table to RESULTS.md')
    parser.add_argument('--worker', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.steps)
        return
    header = machine()
    repeats = []                    # worker counts interleaved, so load drift hits all alike
    for r in range(args.repeats):
        order = args.workers[r % len(args.workers):] + args.workers[:r % len(args.workers)]
        repeats.append({w: job(w, args.steps) for w in order})
    runs = {w: {config: (statistics.median(rep[w][config][0] for rep in repeats),)
                + repeats[0][w][config][1:] for config in repeats[0][w]}
            for w in args.workers}
    text = '\n'.join([TITLE, '', header, '', table(runs), '', notes(runs), ''])
    print(text)
    if args.write:
        old = open(RESULTS).read() if os.path.exists(RESULTS) else '# Benchmark results\n'
        if TITLE in old:
            start = old.index(TITLE)
            end = old.find('\n## ', start + len(TITLE))
            old = old[:start] + (old[end + 1:] if end >= 0 else '')
        with open(RESULTS, 'w') as f:
            f.write(old.rstrip('\n') + '\n\n' + text)


if __name__ == '__main__':
    main(sys.argv[1:])
