"""mx.callback: the batch-end and epoch-end callbacks that `Module.fit` calls.

Batch-end callbacks receive a `mx.model.BatchEndParam` (epoch, nbatch, eval_metric, locals);
epoch-end callbacks receive `(epoch, symbol, arg_params, aux_params)`. Everything is logged through
the root logger at INFO level, in MXNet's formats.
"""
import logging
import math
import time

from .kvstore import worker_rank
from .model import save_checkpoint


def do_checkpoint(prefix, period=1):
    """Epoch-end callback: `save_checkpoint(prefix, epoch + 1, ...)` every `period` epochs
    (in a distributed job only rank 0 writes)."""
    period = int(max(1, period))

    def _callback(epoch, symbol, arg_params, aux_params):
        if (epoch + 1) % period == 0 and worker_rank() == 0:
            save_checkpoint(prefix, epoch + 1, symbol, arg_params, aux_params)
    return _callback


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """Epoch-end callback: `mod.save_checkpoint(prefix, epoch + 1, save_optimizer_states)` every
    `period` epochs (the symbol and params passed by fit are not used: the module saves its own;
    in a distributed job only rank 0 writes)."""
    period = int(max(1, period))

    def _callback(epoch, symbol=None, arg_params=None, aux_params=None):
        if (epoch + 1) % period == 0 and worker_rank() == 0:
            mod.save_checkpoint(prefix, epoch + 1, save_optimizer_states)
    return _callback


def log_train_metric(period, auto_reset=False):
    """Batch-end callback: log `Iter[e] Batch[n] Train-<name>=<value>` every `period` batches,
    then reset the metric's local statistics if `auto_reset`."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info('Iter[%d] Batch[%d] Train-%s=%f',
                             param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Batch-end callback logging the training speed (and the metric) every `frequent` batches.

    The first call of an epoch only starts the clock; a batch number lower than the previous one
    means a new epoch began. With `auto_reset` the metric's local statistics are reset after each
    report, so every line shows the metric over the last `frequent` batches only.
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0
        self.last_count = 0

    def __call__(self, param):
        count = param.nbatch
        if count < self.last_count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed else float('inf')
        metric = param.eval_metric
        if metric is None:
            logging.info('Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec', param.epoch, count, speed)
        else:
            name_value = metric.get_name_value()
            values = [x for pair in name_value for x in pair]
            pairs_fmt = '\t%s=%f' * len(name_value)
            if self.auto_reset:
                metric.reset_local()
                logging.info('Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec' + pairs_fmt,
                             param.epoch, count - self.frequent, count, speed, *values)
            else:
                logging.info('Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec' + pairs_fmt,
                             param.epoch, count, speed, *values)
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback drawing `[=====-----] NN%` for `param.nbatch` out of `total` batches."""

    def __init__(self, total, length=80):
        self.total = total
        self.bar_len = length

    def __call__(self, param):
        fraction = param.nbatch / float(self.total)
        filled = min(self.bar_len, int(round(self.bar_len * fraction)))
        bar = '=' * filled + '-' * (self.bar_len - filled)
        logging.info('[%s] %s%s\r', bar, math.ceil(100.0 * fraction), '%')


class LogValidationMetricsCallback:
    """Eval-end callback: log `Epoch[e] Validation-<name>=<value>` for every metric value."""

    def __call__(self, param):
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info('Epoch[%d] Validation-%s=%f', param.epoch, name, value)
