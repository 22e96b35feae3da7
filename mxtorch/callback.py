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


def loggable(value):
    """A metric value ready for '%f': a one-element array (what a CustomMetric whose function
    returns an array gives) as its number, which NumPy 1.x formatted and NumPy 2 refuses."""
    if getattr(value, 'ndim', 0) and getattr(value, 'size', 0) == 1:
        return value.reshape(-1)[0]
    return value


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
                             param.epoch, param.nbatch, name, loggable(value))
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
            values = [x for name, value in name_value for x in (name, loggable(value))]
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
            logging.info('Epoch[%d] Validation-%s=%f', param.epoch, name, loggable(value))


# ---- live progress --------------------------------------------------------------------------------
def _batches_per_epoch(data_iter):
    """How many batches one pass of `data_iter` gives, when it can tell (NDArrayIter can)."""
    num, size = getattr(data_iter, 'num_data', None), getattr(data_iter, 'batch_size', None)
    if not isinstance(num, int) or not isinstance(size, int) or size < 1:
        return None
    if getattr(data_iter, 'last_batch_handle', 'pad') == 'discard':
        return num // size
    return -(-num // size)


def _format_time(seconds):
    seconds = int(max(0, seconds))
    return '%d:%02d:%02d' % (seconds // 3600, seconds // 60 % 60, seconds % 60) \
        if seconds >= 3600 else '%02d:%02d' % (seconds // 60, seconds % 60)


class _PlainBar:
    """The part of tqdm's interface `Progress` uses, drawn as one rewritten text line."""

    def __init__(self, total, desc, file, mininterval):
        self.total, self.desc, self.file, self.mininterval = total, desc, file, mininterval
        self.n, self.postfix, self.start, self.shown = 0, '', time.time(), 0.0
        self.width, self.drawn = 0, None

    def set_postfix_str(self, text, refresh=True):
        self.postfix = text

    def update(self, k):
        self.n += k
        now = time.time()
        if now - self.shown >= self.mininterval or self.n == self.total:
            self.shown = now
            self.draw(now)

    def draw(self, now):
        line = self.line(now)
        self.file.write('\r' + line.ljust(self.width))     # over all of a longer last line
        self.file.flush()
        self.width, self.drawn = len(line), self.n

    def line(self, now):
        elapsed = now - self.start
        if self.total:
            frac = min(1.0, self.n / float(self.total))
            bar = '=' * int(24 * frac) + ' ' * (24 - int(24 * frac))
            eta = elapsed / self.n * (self.total - self.n) if self.n else 0
            head = '%s %3d%% [%s] %d/%d [%s<%s]' % (self.desc, 100 * frac, bar, self.n,
                                                    self.total, _format_time(elapsed),
                                                    _format_time(eta))
        else:
            head = '%s %d batches [%s]' % (self.desc, self.n, _format_time(elapsed))
        return head + (', ' + self.postfix if self.postfix else '')

    def close(self):
        if self.drawn != self.n:
            self.draw(time.time())
        self.file.write('\n')
        self.file.flush()


class Progress:
    """Batch-end callback: a live progress bar per epoch, with the batches done out of the
    epoch's total, the elapsed time and ETA, and the metric's current values (a loss among them
    when the metric has one, e.g. eval_metric=['acc', 'ce']).

        mod.fit(train, num_epoch=5, eval_metric=['acc', 'ce'],
                batch_end_callback=mx.callback.Progress())
        mod.score(val, 'acc', batch_end_callback=mx.callback.Progress(desc='score'))
        mod.predict(mx.callback.progress_iter(val, desc='predict'))

    The bar is tqdm's when tqdm is installed (pip install "mxtorch[watch]"), else a plain
    text line; `file` defaults to stderr. `total` (batches per epoch) is read from the
    iterator when it can tell (NDArrayIter), else learnt from the first epoch.
    """

    def __init__(self, total=None, desc='Epoch', file=None, mininterval=0.1, use_tqdm=None):
        import sys
        self.total = total
        self.desc = desc
        self.file = file if file is not None else sys.stderr
        self.mininterval = mininterval
        if use_tqdm is None:
            try:
                import tqdm  # noqa: F401
                use_tqdm = True
            except ImportError:
                use_tqdm = False
        self.use_tqdm = use_tqdm
        self._bar = None
        self._epoch = None
        self._done = 0

    def _open(self, epoch, total):
        desc = '%s %d' % (self.desc, epoch) if self.desc == 'Epoch' else self.desc
        if self.use_tqdm:
            from tqdm import tqdm
            return tqdm(total=total, desc=desc, file=self.file, mininterval=self.mininterval,
                        unit='batch', leave=True, dynamic_ncols=True)
        return _PlainBar(total, desc, self.file, self.mininterval)

    def __call__(self, param):
        done = param.nbatch + 1
        if self._bar is None or param.epoch != self._epoch or done <= self._done:
            if self._bar is not None:
                self.total = self.total or self._done      # an epoch's length, learnt
                self.close()
            locals_ = param.locals or {}
            data = locals_.get('train_data', locals_.get('eval_data'))
            self._bar = self._open(param.epoch, self.total or _batches_per_epoch(data))
            self._epoch, self._done = param.epoch, 0
        if param.eval_metric is not None:
            values = ', '.join('%s=%.4g' % nv for nv in param.eval_metric.get_name_value())
            self._bar.set_postfix_str(values, refresh=False)
        self._bar.update(done - self._done)
        self._done = done
        if self._bar.total and done >= self._bar.total:
            self.close()

    def close(self):
        """End the current bar (an epoch's bar also ends by itself after its last batch)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def progress_iter(data_iter, desc='predict', **kwargs):
    """`data_iter` drawing a Progress bar as it is read: for Module.predict / iter_predict,
    which take no callback."""
    from .io.io import DataIter

    class _WithProgress(DataIter):
        def __init__(self):
            super().__init__(getattr(data_iter, 'batch_size', 0))
            self._progress = Progress(desc=desc, **kwargs)
            self._n = 0

        def __getattr__(self, name):
            return getattr(data_iter, name)

        @property
        def provide_data(self):
            return data_iter.provide_data

        @property
        def provide_label(self):
            return data_iter.provide_label

        def reset(self):
            self._progress.close()
            self._n = 0
            data_iter.reset()

        def next(self):
            try:
                batch = data_iter.next()
            except StopIteration:
                self._progress.close()
                raise
            from .model import BatchEndParam
            self._progress(BatchEndParam(epoch=0, nbatch=self._n, eval_metric=None,
                                         locals={'eval_data': data_iter}))
            self._n += 1
            return batch
    return _WithProgress()
