"""Benchmark workers: a reference implementation (MXNet 1.9.1, JAX) in its own Python, driven
step by step over stdin/stdout so a benchmark can interleave it with mxtorch in one run.
Standard library only: the worker side runs in environments without mxtorch or torch.

Protocol (one JSON object per line on stdin, one reply line on stdout):
  {"cmd": "setup", ...what the worker's setup() reads...}  -> {"ok": true}
  {"cmd": "run", "n": k}     -> {"seconds": <time of k steps>, "cpu": <the worker's CPU time>}
"""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def serve(setup):
    """The worker's loop: setup(request) returns the step function that `run` times."""
    step = None
    for line in sys.stdin:
        request = json.loads(line)
        if request['cmd'] == 'setup':
            step = setup(request)
            reply = {'ok': True}
        else:
            start, cpu = time.perf_counter(), time.process_time()
            for _ in range(request['n']):
                step()
            reply = {'seconds': time.perf_counter() - start, 'cpu': time.process_time() - cpu}
        print(json.dumps(reply), flush=True)


class Worker:
    """The benchmark's side: a worker script run by `python` with `env` added to the
    environment; `one_core` pins it to one core (for runtimes whose thread pools ignore
    OMP_NUM_THREADS)."""

    def __init__(self, python, script, env=None, one_core=False):
        pin = []
        if one_core and hasattr(os, 'sched_getaffinity') and shutil.which('taskset'):
            pin = ['taskset', '-c', str(min(os.sched_getaffinity(0)))]
        self.proc = subprocess.Popen(pin + [python, os.path.join(HERE, script)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=dict(os.environ, **(env or {})))

    def ask(self, **request):
        self.proc.stdin.write(json.dumps(request) + '\n')
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def step_fn(self, **setup):
        """One step per call; its `cpu_seconds(n)`: the worker's CPU time for n steps (what
        harness.interleaved times it by when it times the others by CPU time)."""
        self.ask(cmd='setup', **setup)

        def step():
            self.ask(cmd='run', n=1)
        step.cpu_seconds = lambda n: self.ask(cmd='run', n=n)['cpu']
        return step

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def available(python, module):
    """Whether `python` exists and imports `module`."""
    return os.path.exists(python) and subprocess.run(
        [python, '-c', 'import ' + module], capture_output=True).returncode == 0
