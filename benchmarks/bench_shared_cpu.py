"""`mxtorch train` on an idle machine against the same run while one core is kept busy.

    python benchmarks/bench_shared_cpu.py [--rounds 3] [--cpus 0,1] [--compare OTHER_SRC]

Each round runs the default `mxtorch train` (LeNet, 10 epochs on the bundled digits) once
idle and once beside a busy loop (one process spinning on one core, as `yes > /dev/null`),
interleaved, and reports the median wall time of each. --cpus pins everything (training and the
busy loop) to those CPUs (to emulate a small machine on a big one); --compare also runs the
mxtorch found under OTHER_SRC (a source tree, e.g. an older checkout) in the same rounds.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_train(src, prefix, cpus):
    env = dict(os.environ, PYTHONPATH=src)      # run from elsewhere: `-m` looks in cwd first
    cmd = [sys.executable, '-m', 'mxtorch', 'train', '--prefix', prefix]
    if cpus:
        cmd = ['taskset', '-c', cpus] + cmd
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(prefix)).stdout
    elapsed = time.perf_counter() - start
    first = out.splitlines()[0] if out else ''
    return elapsed, first


def _busy(cpus):
    """A process spinning on one core (the last of --cpus, if given)."""
    cmd = [sys.executable, '-c', 'while True: pass']
    if cpus:
        cmd = ['taskset', '-c', cpus.split(',')[-1]] + cmd
    return subprocess.Popen(cmd)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--rounds', type=int, default=3)
    parser.add_argument('--cpus', default='', help='taskset CPU list, e.g. 0,1')
    parser.add_argument('--compare', default='', help='another source tree to time alongside')
    args = parser.parse_args()
    sources = [('this tree', HERE)] + ([('compared', args.compare)] if args.compare else [])
    times = {(name, load): [] for name, _ in sources for load in ('idle', 'busy')}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, src in (sources if r % 2 == 0 else sources[::-1]):
                for load in (('idle', 'busy') if r % 2 == 0 else ('busy', 'idle')):
                    busy = _busy(args.cpus) if load == 'busy' else None
                    try:
                        elapsed, first = _run_train(src, os.path.join(tmp, 'ck'), args.cpus)
                    finally:
                        if busy is not None:
                            busy.kill()
                            busy.wait()
                    times[(name, load)].append(elapsed)
                    print('round %d %-9s %-4s %6.1f s   %s' % (r, name, load, elapsed, first),
                          flush=True)
    print('\n| code | idle (median) | one core busy (median) | busy / idle |')
    print('|---|---:|---:|---:|')
    for name, _ in sources:
        idle = statistics.median(times[(name, 'idle')])
        busy = statistics.median(times[(name, 'busy')])
        print('| %s | %.1f s | %.1f s | %.2f |' % (name, idle, busy, busy / idle))


if __name__ == '__main__':
    main()
