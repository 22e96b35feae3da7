"""Interleaved timing: every candidate runs in every round, in rotating order, so drift of a
shared machine hits all of them alike. Reports medians over rounds and ratios to a baseline."""
import contextlib
import os
import platform
import statistics
import time

import torch


def machine():
    return '%s, %d torch threads, torch %s, %s' % (
        platform.processor() or platform.machine(), torch.get_num_threads(), torch.__version__,
        platform.python_version())


def interleaved(candidates, rounds=9, seconds=0.5, warmup=3, samples=None,
                timer=time.perf_counter):
    """{name: fn} -> {name: median seconds per call}. Each round times each fn for ~`seconds`.
    A dict passed as `samples` receives every round's time per call: {name: [seconds]}.
    `timer`: the clock the rounds are timed with (time.thread_time: this thread's CPU time,
    steadier than wall time on a machine other jobs share, for single-threaded work; a
    candidate run by a worker process (workers.py) is then timed by the worker's CPU time)."""
    names = list(candidates)
    for name in names:
        for _ in range(warmup):
            candidates[name]()
    calls = {}
    for name in names:                       # how many calls fill `seconds`
        start = time.perf_counter()
        n = 0
        while time.perf_counter() - start < seconds / 4:
            candidates[name]()
            n += 1
        calls[name] = max(1, int(n * 4))
    samples = samples if samples is not None else {}
    samples.update({name: [] for name in names})
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            fn, n = candidates[name], calls[name]
            if timer is not time.perf_counter and hasattr(fn, 'cpu_seconds'):
                samples[name].append(fn.cpu_seconds(n) / n)
                continue
            start = timer()
            for _ in range(n):
                fn()
            samples[name].append((timer() - start) / n)
    return {name: statistics.median(s) for name, s in samples.items()}


def report(title, medians, baseline, unit=1e3, unit_name='ms'):
    lines = ['%s (median of interleaved rounds; %s)' % (title, machine())]
    base = medians[baseline]
    for name, value in medians.items():
        lines.append('  %-40s %9.3f %s   %.3fx %s' % (name, value * unit, unit_name,
                                                      value / base, baseline))
    text = '\n'.join(lines)
    print(text)
    return text


@contextlib.contextmanager
def environ(name, value):
    """os.environ[name] = value inside the block, as it was after it."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old
