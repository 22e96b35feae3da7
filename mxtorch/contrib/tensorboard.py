"""mx.contrib.tensorboard: training metrics (and weights) as TensorBoard event files, written
with torch.utils.tensorboard (needs the tensorboard package: pip install "mxtorch[watch]").

    mod.fit(train, eval_data=val,
            batch_end_callback=mx.contrib.tensorboard.LogMetricsCallback('logs/train'),
            eval_end_callback=mx.contrib.tensorboard.LogMetricsCallback('logs/eval'))
    # then: tensorboard --logdir logs
"""
__all__ = ['LogMetricsCallback', 'LogBatchCallback']


def _writer(logging_dir, flush_secs):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        raise ImportError('mx.contrib.tensorboard needs the tensorboard package: '
                          'pip install "mxtorch[watch]" (or pip install tensorboard)') from None
    return SummaryWriter(logging_dir, flush_secs=flush_secs)


class LogMetricsCallback:
    """Batch-end or eval-end callback writing each metric value as a TensorBoard scalar
    `<prefix>-<name>` at step `param.epoch` (as MXNet's: train and evaluation logged to two
    directories with the same names share a chart)."""

    def __init__(self, logging_dir, prefix=None, flush_secs=10):
        self.prefix = prefix
        self.summary_writer = _writer(logging_dir, flush_secs)

    def __call__(self, param):
        if param.eval_metric is None:
            return
        for name, value in param.eval_metric.get_name_value():
            if self.prefix is not None:
                name = '%s-%s' % (self.prefix, name)
            self.summary_writer.add_scalar(name, value, global_step=param.epoch)

    def close(self):
        self.summary_writer.close()


class LogBatchCallback:
    """Batch-end callback for Module.fit logging per batch (the global batch count is the step):
    every `scalar_every` batches, the metric values (`<prefix>/<name>`) and the learning rate;
    every `histogram_every` batches (0: never), a histogram of each parameter
    (`<prefix>/weight/<name>`) and of its gradient (`<prefix>/grad/<name>`).
    `module`: the Module to read (default: the one calling back, from the callback's locals).
    """

    def __init__(self, logging_dir, module=None, prefix='train', scalar_every=1,
                 histogram_every=0, flush_secs=10):
        if int(scalar_every) < 1 or int(histogram_every) < 0:
            raise ValueError('scalar_every must be >= 1 and histogram_every >= 0, got %r and %r'
                             % (scalar_every, histogram_every))
        self.module = module
        self.prefix = prefix
        self.scalar_every = int(scalar_every)
        self.histogram_every = int(histogram_every)
        self.step = 0
        self.summary_writer = _writer(logging_dir, flush_secs)

    def __call__(self, param):
        self.step += 1
        write = self.summary_writer
        if self.step % self.scalar_every == 0:
            if param.eval_metric is not None:
                for name, value in param.eval_metric.get_name_value():
                    write.add_scalar('%s/%s' % (self.prefix, name), value, self.step)
            lr = _learning_rate(self._module(param))
            if lr is not None:
                write.add_scalar('%s/learning_rate' % self.prefix, lr, self.step)
        if self.histogram_every and self.step % self.histogram_every == 0:
            module = self._module(param)
            if module is not None:
                for kind, arrays in (('weight', _params(module)), ('grad', _grads(module))):
                    for name, array in arrays:
                        write.add_histogram('%s/%s/%s' % (self.prefix, kind, name),
                                            array._tensor.detach().float().cpu(), self.step)

    def _module(self, param):
        return self.module if self.module is not None else (param.locals or {}).get('self')

    def close(self):
        self.summary_writer.close()


def _learning_rate(module):
    optimizer = getattr(module, '_optimizer', None)
    return getattr(optimizer, 'learning_rate', None) if optimizer is not None else None


def _on_first_device(module, what):
    """(name, array) of the module's parameters (what='param_arrays') or their gradients
    (what='grad_arrays') on its first device; the executor group keeps them in argument order."""
    group = getattr(module, '_exec_group', None)
    blocks = getattr(group, what, None) if group is not None else None
    if not blocks:
        return []
    names = [n for n in group.arg_names if n in group.param_names]
    return [(n, b[0]) for n, b in zip(names, blocks) if b and b[0] is not None]


def _params(module):
    return _on_first_device(module, 'param_arrays')


def _grads(module):
    return _on_first_device(module, 'grad_arrays')
