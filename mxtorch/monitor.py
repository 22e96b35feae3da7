"""mx.monitor (mx.mon): statistics of every operator output, argument and auxiliary state of the
installed executors, gathered every `interval` batches.

    mon = mx.mon.Monitor(10, pattern='.*weight|.*output')
    mod.fit(..., monitor=mon)       # fit calls mon.tic() before and mon.toc_print() after a batch
"""
import logging
import math
import re

import torch

from .base import py_str
from .capi import as_array
from .ndarray.ndarray import NDArray


def _rms(array):
    """norm(x) / sqrt(x.size) as a shape-(1,) NDArray (integer arrays give float32)."""
    tensor = array._tensor.detach()
    if not tensor.is_floating_point():
        tensor = tensor.float()
    value = torch.linalg.vector_norm(tensor).reshape(1) / math.sqrt(tensor.numel())
    return NDArray(value, ctx=array.context)


class Monitor:
    """Collect `stat_func(array)` for the arrays whose names `pattern` matches (re.match).

    Parameters: interval (collect on every interval-th batch), stat_func (NDArray -> NDArray or
    list of NDArrays; default norm(x)/sqrt(x.size)), pattern, sort (order results by name),
    monitor_all (also operator inputs, not only outputs).
    """

    def __init__(self, interval, stat_func=None, pattern='.*', sort=False, monitor_all=False):
        self.interval = interval
        self.stat_func = _rms if stat_func is None else stat_func
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []

    def stat_helper(self, name, array):
        """The executor's monitor callback (a name and an NDArray handle, as MXNet's): record
        the stat while a collection is active."""
        name = py_str(name)
        if self.activated and self.re_prog.match(name):
            self.queue.append((self.step, name, self.stat_func(as_array(array))))

    def install(self, exe):
        """Watch an executor (Module.install_monitor calls this for each of its executors)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def tic(self):
        """Start a batch: begin collecting if this batch is due. Steps count from 1."""
        if self.step % self.interval == 0:
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """End a batch: add the stats of the executors' arguments and auxiliary states and return
        `[(step, name, text)]`, text being each stat value followed by a tab; [] when inactive."""
        if not self.activated:
            return []
        for exe in self.exes:
            symbol = exe._symbol
            named = (list(zip(symbol.list_arguments(), exe.arg_arrays))
                     + list(zip(symbol.list_auxiliary_states(), exe.aux_arrays)))
            for name, array in named:
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda entry: entry[1])
        result = [(step, name, _render(stats)) for step, name, stats in self.queue]
        self.queue = []
        return result

    def toc_print(self):
        """toc(), logging each entry as `Batch: <step> <name> <text>`."""
        for step, name, text in self.toc():
            logging.info('Batch: {:7d} {:30s} {:s}'.format(step, name, text))


def _render(stats):
    if isinstance(stats, NDArray):
        stats = [stats]
    if not isinstance(stats, list) or not all(isinstance(v, NDArray) for v in stats):
        raise TypeError('Monitor stat_func must return an NDArray or a list of NDArrays, got %r'
                        % (stats,))
    return ''.join((str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + '\t'
                   for v in stats)
