"""Event handlers of the Estimator's training loop.

A handler subclasses the event classes it reacts to (TrainBegin, EpochBegin, BatchBegin,
BatchEnd, EpochEnd, TrainEnd); `batch_end`/`epoch_end` returning True stops training. Handlers
run in increasing `priority` (GradientUpdateHandler -2000, MetricHandler and
ValidationHandler -1000, user handlers 0, LoggingHandler last).
"""
import os
import time
import warnings

import numpy as np

from ....metric import CompositeEvalMetric, EvalMetric
from ....metric import Loss as metric_loss
from .utils import _check_metrics

__all__ = ['TrainBegin', 'TrainEnd', 'EpochBegin', 'EpochEnd', 'BatchBegin', 'BatchEnd',
           'StoppingHandler', 'MetricHandler', 'ValidationHandler', 'LoggingHandler',
           'CheckpointHandler', 'EarlyStoppingHandler', 'GradientUpdateHandler']


class EventHandler:
    """Base of all event handlers."""


def _check_event_handlers(handlers):
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = handlers or []
    if not all(isinstance(h, EventHandler) for h in handlers):
        raise ValueError('handlers must be an EventHandler or a list of EventHandler, '
                         'got: {}'.format(handlers))
    return handlers


class TrainBegin(EventHandler):
    def train_begin(self, estimator, *args, **kwargs):
        pass


class TrainEnd(EventHandler):
    def train_end(self, estimator, *args, **kwargs):
        pass


class EpochBegin(EventHandler):
    def epoch_begin(self, estimator, *args, **kwargs):
        pass


class EpochEnd(EventHandler):
    def epoch_end(self, estimator, *args, **kwargs):
        return False


class BatchBegin(EventHandler):
    def batch_begin(self, estimator, *args, **kwargs):
        pass


class BatchEnd(EventHandler):
    def batch_end(self, estimator, *args, **kwargs):
        return False


class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops training after max_epoch epochs or max_batch batches (the estimator's)."""

    def __init__(self, max_epoch=None, max_batch=None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs):
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets the metrics each epoch and updates them each batch (loss metrics from the
    losses, the others from labels and predictions)."""

    def __init__(self, metrics, priority=-1000):
        self.metrics = _check_metrics(metrics)
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs):
        for metric in self.metrics:
            if isinstance(metric, metric_loss):
                metric.update(0, kwargs['loss'])
            else:
                metric.update(kwargs['label'], kwargs['pred'])


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs `eval_fn(val_data=..., batch_axis=..., event_handlers=...)` every epoch_period
    epochs and/or every batch_period batches."""

    def __init__(self, val_data, eval_fn, epoch_period=1, batch_period=None, priority=-1000,
                 event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs):
        self.current_batch = 0
        self.current_epoch = 0

    def _evaluate(self, estimator):
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs):
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._evaluate(estimator)

    def epoch_end(self, estimator, *args, **kwargs):
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._evaluate(estimator)


def _metrics_text(metrics):
    return ''.join('%s: %.4f, ' % metric.get() for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the optimizer and learning rate at the start, the metrics every `log_interval`
    batches (an int) or every epoch ('epoch'), and the totals at the end."""

    def __init__(self, log_interval='epoch', metrics=None, priority=np.inf):
        if not isinstance(log_interval, int) and log_interval != 'epoch':
            raise ValueError("log_interval must be either an integer or string 'epoch'")
        self.metrics = _check_metrics(metrics)
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.priority = priority
        self.log_interval = log_interval
        self.log_interval_time = 0

    def train_begin(self, estimator, *args, **kwargs):
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info('Training begin: using optimizer %s with current learning rate '
                              '%.4f ', trainer.optimizer.__class__.__name__,
                              trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info('Train for %d epochs.', estimator.max_epoch)
        else:
            estimator.logger.info('Train for %d batches.', estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0

    def train_end(self, estimator, *args, **kwargs):
        msg = 'Train finished using total %ds with %d epochs. ' % (
            time.time() - self.train_start, self.current_epoch)
        estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(', '))

    def batch_begin(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs):
        if isinstance(self.log_interval, int):
            self.log_interval_time += time.time() - self.batch_start
            self.processed_samples += kwargs['batch'][0].shape[0]
            msg = '[Epoch %d][Batch %d][Samples %s] ' % (self.current_epoch, self.batch_index,
                                                         self.processed_samples)
            if self.batch_index % self.log_interval == 0:
                msg += 'time/interval: %.3fs ' % self.log_interval_time
                self.log_interval_time = 0
                estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(', '))
        self.batch_index += 1

    def epoch_begin(self, estimator, *args, **kwargs):
        self.epoch_start = time.time()
        if any('training' in metric.name for metric in self.metrics):
            estimator.logger.info('[Epoch %d] Begin, current learning rate: %.4f',
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info('Validation Begin')

    def epoch_end(self, estimator, *args, **kwargs):
        msg = '[Epoch %d] Finished in %.3fs, ' % (self.current_epoch,
                                                  time.time() - self.epoch_start)
        estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(', '))
        self.current_epoch += 1
        self.batch_index = 0


def _compare_op(mode, monitor, owner):
    """np.less for mode 'min', np.greater otherwise ('auto' compares with greater, as MXNet
    1.9.1 does, and says so)."""
    if mode not in ('auto', 'min', 'max'):
        warnings.warn('%s mode %s is unknown, fallback to auto mode. CheckpointHandler will use'
                      'max mode for f1 and accuracy metric comparison and use min mode other '
                      'wise' % (owner, mode), RuntimeWarning)
        mode = 'auto'
    if mode == 'min':
        return np.less
    if mode == 'auto':
        warnings.warn('`greater` operator will be used to determine if {} has improved. Please '
                      "specify `mode='min'` to use the `less` operator. Specify `mode='max' to "
                      'disable this warning.`'.format(monitor.get()[0]))
    return np.greater


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves `<model_dir>/<prefix>-epoch<E>batch<B>.params/.states` every epoch_period epochs
    and/or batch_period batches (keeping the last max_checkpoints), `<prefix>-symbol.json` of
    a hybridized net, `<prefix>-best.*` when the monitored metric improves (save_best), and
    can resume training from the latest checkpoint."""

    def __init__(self, model_dir, model_prefix='model', monitor=None, verbose=0,
                 save_best=False, mode='auto', epoch_period=1, batch_period=None,
                 max_checkpoints=5, resume_from_checkpoint=False):
        self.monitor = monitor
        self.verbose = verbose
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.save_best = save_best
        if self.save_best and not isinstance(self.monitor, EvalMetric):
            raise ValueError('To save best model only, please provide one of the metric objects '
                             'from estimator.train_metrics and estimator.val_metrics as monitor.')
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.saved_checkpoints = []
        if self.save_best:
            self.monitor_op = _compare_op(mode, monitor, 'ModelCheckpoint')
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def train_begin(self, estimator, *args, **kwargs):
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = np.inf if self.monitor_op is np.less else -np.inf
        if self.resume_from_checkpoint:
            error_msg = 'To use resume from checkpoint, you must only specify the same type of ' \
                        'period you used for training.For example, if you are training based ' \
                        'on number of epochs,you must save only based on epochs, and set ' \
                        'batch_period to None.'
            if estimator.max_batch:
                assert self.batch_period, error_msg
                assert not self.epoch_period, error_msg
            if estimator.max_epoch:
                assert self.epoch_period, error_msg
                assert not self.batch_period, error_msg
            self._resume_from_checkpoint(estimator)

    def batch_end(self, estimator, *args, **kwargs):
        if self.current_batch == 0:
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1

    def epoch_end(self, estimator, *args, **kwargs):
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1

    def _save_checkpoint(self, estimator):
        if self.resume_from_checkpoint:
            epoch = self.current_epoch + self.trained_epoch + 1
            batch = self.current_batch + self.trained_batch + (0 if estimator.max_epoch else 1)
        else:
            epoch, batch = self.current_epoch, self.current_batch
        prefix = '%s-epoch%dbatch%d' % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info('[Epoch %d] CheckpointHandler: trained total %d batches, '
                                  'saving model at %s with prefix: %s', self.current_epoch,
                                  self.current_batch + 1, self.model_dir, prefix)
        if not self.save_best:
            return
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(RuntimeWarning(
                'Skipping save best because %s is not updated, make sure you pass one of the '
                'metric objects estimator.train_metrics and estimator.val_metrics as monitor',
                name))
        elif self.monitor_op(value, self.best):
            self._save_params_and_trainer(estimator, self.model_prefix + '-best')
            if self.verbose > 0:
                estimator.logger.info('[Epoch %d] CheckpointHandler: %s improved from %0.5f to '
                                      '%0.5f, updating best model at %s with prefix: %s',
                                      self.current_epoch, name, self.best, value,
                                      self.model_dir, self.model_prefix + '-best')
            self.best = value
        elif self.verbose > 0:
            estimator.logger.info('[Epoch %d] CheckpointHandler: %s did not improve from '
                                  '%0.5f, skipping updating best model', self.current_batch,
                                  name, self.best)

    def _save_symbol(self, estimator):
        symbol_file = os.path.join(self.model_dir, self.model_prefix + '-symbol.json')
        graph = getattr(estimator.net, '_cached_graph', None)
        if graph:
            graph[1].save(symbol_file)
        else:
            estimator.logger.info('Model architecture(symbol file) is not saved, please use '
                                  'HybridBlock to construct your model, and call '
                                  'net.hybridize() before passing to Estimator in order to save '
                                  'model architecture as %s.', symbol_file)

    def _save_params_and_trainer(self, estimator, file_prefix):
        estimator.net.save_parameters(os.path.join(self.model_dir, file_prefix + '.params'))
        estimator.trainer.save_states(os.path.join(self.model_dir, file_prefix + '.states'))
        if 'best' not in file_prefix:
            self.saved_checkpoints.append(file_prefix)
        if len(self.saved_checkpoints) > self.max_checkpoints:
            oldest = self.saved_checkpoints.pop(0)
            for fname in os.listdir(self.model_dir):
                if fname.startswith(oldest):
                    os.remove(os.path.join(self.model_dir, fname))

    def _resume_from_checkpoint(self, estimator):
        prefix = self.model_prefix + '-epoch'
        self.trained_epoch = self._find_max_iteration(self.model_dir, prefix, 'epoch', 'batch',
                                                      self.saved_checkpoints)
        prefix += str(self.trained_epoch)
        self.trained_batch = self._find_max_iteration(self.model_dir, prefix, 'batch',
                                                      '.params')
        if self.trained_epoch == -1:
            msg = 'CheckpointHandler: No checkpoint found, training from scratch for '
            msg += '%d batches' % estimator.max_batch if estimator.max_batch \
                else '%d epochs' % estimator.max_epoch
            estimator.logger.info(msg)
            return
        msg = 'CheckpointHandler: Checkpoint resumed from epoch %d batch %d, continue to ' \
              'train for ' % (self.trained_epoch, self.trained_batch)
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError('Found checkpoint with maximum number of epoch %d reached, '
                                 'please specify resume_from_checkpoint=False (default value) '
                                 'if you wan to train from scratch.' % estimator.max_epoch)
            estimator.max_epoch = estimator.max_epoch - self.trained_epoch - 1
            msg += '%d epochs ' % estimator.max_epoch
        if estimator.max_batch:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError('Found checkpoint with maximum number of batch %d reached, '
                                 'please specifyresume_from_checkpoint=False (default value) '
                                 'if you wan to train from scratch.' % self.trained_batch)
            estimator.max_batch = estimator.max_batch - self.trained_batch - 1
            msg += '%d batches ' % estimator.max_batch
        stem = os.path.join(self.model_dir, '%s-epoch%dbatch%d' % (
            self.model_prefix, self.trained_epoch, self.trained_batch))
        for ext in ('.params', '.states'):
            assert os.path.exists(stem + ext), \
                'Failed to load checkpoint, %s does not exist' % (stem + ext)
        estimator.net.load_parameters(stem + '.params', ctx=estimator.context)
        estimator.trainer.load_states(stem + '.states')
        estimator.logger.warning(msg)

    @staticmethod
    def _find_max_iteration(folder, prefix, start, end, saved_checkpoints=None):
        """The largest number between `start` and `end` in the names of the .params files
        starting with `prefix` (-1 when none)."""
        best = -1
        for fname in os.listdir(folder):
            if fname.startswith(prefix) and '.params' in fname:
                if saved_checkpoints:
                    saved_checkpoints.append(fname[:fname.find('.params')])
                try:
                    best = max(best, int(fname[fname.find(start) + len(start):fname.find(end)]))
                except ValueError:
                    raise ValueError('Error parsing checkpoint file, please check your '
                                     'checkpoints have the format: {model_name}-epoch'
                                     '{epoch_number}batch{batch_number}.params, there should '
                                     'also be a .states file for each .params file ') from None
        return best


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops training when the monitored metric has not improved by min_delta for `patience`
    epochs (relative to `baseline` when given)."""

    def __init__(self, monitor, min_delta=0, patience=0, mode='auto', baseline=None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError('Please provide one of the metric objects from '
                             'estimator.train_metrics and estimator.val_metrics as monitor.')
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError('CompositeEvalMetric is not supported for EarlyStoppingHandler, '
                             'please specify a simple metric instead.')
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.monitor_op = _compare_op(mode, monitor, 'EarlyStopping')
        self.min_delta = min_delta if self.monitor_op is np.greater else -min_delta

    def train_begin(self, estimator, *args, **kwargs):
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = np.inf if self.monitor_op is np.less else -np.inf

    def epoch_end(self, estimator, *args, **kwargs):
        name, value = self.monitor.get()
        if np.isnan(value):
            warnings.warn(RuntimeWarning(
                '%s is not updated, make sure you pass one of the metric objects from'
                'estimator.train_metrics and estimator.val_metrics as monitor.', name))
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs):
        if self.stopped_epoch > 0:
            estimator.logger.info('[Epoch %d] EarlyStoppingHanlder: early stopping due to %s '
                                  'not improving', self.stopped_epoch, self.monitor.get()[0])


class GradientUpdateHandler(BatchEnd):
    """trainer.step(total samples of the batch's losses) after each batch."""

    def __init__(self, priority=-2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs):
        loss = kwargs['loss']
        loss = loss if isinstance(loss, list) else [loss]
        estimator.trainer.step(sum(value.shape[0] for value in loss))
