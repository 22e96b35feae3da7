"""Estimator: fit / evaluate a Gluon network with a loss, metrics, a Trainer and event
handlers (a training loop in the style of Keras' fit)."""
import copy
import logging
import sys
import warnings

from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as metric_loss
from ...data import DataLoader
from ...loss import Loss as gluon_loss
from ...trainer import Trainer
from ...utils import split_and_load
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler,
                            LoggingHandler, MetricHandler, StoppingHandler, TrainBegin,
                            TrainEnd, ValidationHandler, _check_event_handlers)
from .utils import _check_handler_metric_ref, _check_metrics, _suggest_metric_for_loss

__all__ = ['Estimator']

_EVENTS = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)


class Estimator:
    """Trains `net` with `loss` on DataLoaders. Without train_metrics it tracks the loss (and
    accuracy for SoftmaxCrossEntropyLoss); validation metrics are copies named
    'validation ...'. An uninitialised net is initialised (with `initializer`) on `context`;
    without a trainer, SGD with learning rate 0.001 is used."""
    logger = None

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None,
                 trainer=None, context=None, val_net=None, val_loss=None,
                 batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self._check_loss(val_loss) if val_loss is not None else self.loss
        self.val_net = val_net if val_net is not None else self.net
        self.logger = logging.Logger(name='Estimator', level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)

    # ---- checks -------------------------------------------------------------------------------
    @staticmethod
    def _check_loss(loss):
        if not isinstance(loss, gluon_loss):
            raise ValueError('loss must be a Loss, refer to gluon.loss.Loss:{}'.format(loss))
        return loss

    @staticmethod
    def _check_context(context):
        gpus = [gpu(i) for i in range(num_gpus())]
        if not context:
            if len(gpus) > 1:
                warnings.warn('You have multiple GPUs, gpu(0) will be used by default.To utilize '
                              'all your GPUs, specify context as a list of gpus, e.g. '
                              'context=[mx.gpu(0), mx.gpu(1)] ')
            return [gpus[0]] if gpus else [cpu()]
        if isinstance(context, Context):
            context = [context]
        elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise ValueError('context must be a Context or a list of Context, for example '
                             'mx.cpu() or [mx.gpu(0), mx.gpu(1)], refer to mxnet.Context:{}'
                             .format(context))
        for ctx in context:
            assert ctx in gpus or str(ctx).startswith('cpu'), \
                '%s is not available, please make sure your context is in one of: mx.cpu(), %s' \
                % (ctx, ', '.join(str(g) for g in gpus))
        return context

    @staticmethod
    def _check_batch_processor(batch_processor):
        if batch_processor is None:
            return BatchProcessor()
        if not callable(getattr(batch_processor, 'fit_batch', None)) or \
                not callable(getattr(batch_processor, 'evaluate_batch', None)):
            raise ValueError('Customized Batch Processor must contain fit_batch() and '
                             'evaluate_batch() methods')
        return batch_processor

    def _initialize(self, initializer):
        if not self._is_initialized():
            if initializer:
                self.net.initialize(init=initializer, ctx=self.context)
            else:
                self.net.initialize(ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You don't "
                          'need to pass initializer if you already initialized your net. You can '
                          'use net.initialize(init=your_initializer, force_reinit=True)to force '
                          're-initialize.')

    def _check_trainer(self, trainer):
        if not trainer:
            warnings.warn('No trainer specified, default SGD optimizer with learning rate 0.001 '
                          'is used.')
            return Trainer(self.net.collect_params(), 'sgd', {'learning_rate': 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError('Trainer must be a Gluon Trainer instance, refer to '
                             'gluon.Trainer:{}'.format(trainer))
        return trainer

    def _is_initialized(self):
        for param in self.net.collect_params().values():
            try:
                param.list_ctx()
            except RuntimeError:
                return False
        return True

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        return (split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis),
                split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis))

    # ---- metrics ------------------------------------------------------------------------------
    def _add_default_training_metrics(self):
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            if suggested:
                self._train_metrics = [suggested]
            self._train_metrics.append(metric_loss(self.loss.name.rstrip('1234567890')))
        for metric in self._train_metrics:
            metric.name = 'training ' + metric.name

    def _add_validation_metrics(self):
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(m) for m in self._train_metrics]
        for metric in self._val_metrics:
            if 'training' in metric.name:
                metric.name = metric.name.replace('training', 'validation')
            else:
                metric.name = 'validation ' + metric.name

    @property
    def train_metrics(self):
        return self._train_metrics

    @property
    def val_metrics(self):
        return self._val_metrics

    # ---- loops --------------------------------------------------------------------------------
    def evaluate(self, val_data, batch_axis=0, event_handlers=None):
        """One pass over `val_data` updating val_metrics (through the handlers)."""
        if not isinstance(val_data, DataLoader):
            raise ValueError('Estimator only support input as Gluon DataLoader. Alternatively, '
                             'you can transform your DataIter or any NDArray into Gluon '
                             'DataLoader. Refer to gluon.data.DataLoader')
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = \
            self._categorize_handlers(handlers)
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in val_data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = self.batch_processor.evaluate_batch(self, batch, batch_axis)
            for handler in batch_end:
                handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs=None, event_handlers=None, batches=None,
            batch_axis=0):
        """Train for `epochs` epochs or `batches` batches (exactly one of them)."""
        if not isinstance(train_data, DataLoader):
            raise ValueError('Estimator only support input as Gluon DataLoader. Alternatively, '
                             'you can transform your DataIter or any NDArray into Gluon '
                             'DataLoader. Refer to gluon.data.dataloader')
        if (not epochs) == (not batches):
            raise ValueError('Fit only support exactly one type of iteration, train by number '
                             'of epochs or number of batches.Please specify one and only one '
                             'of: epochs or batches.')
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            for handler in epoch_begin:
                handler.epoch_begin(self)
            for batch in train_data:
                for handler in batch_begin:
                    handler.batch_begin(self, batch=batch)
                _, label, pred, loss = self.batch_processor.fit_batch(self, batch, batch_axis)
                stops = [handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                         for handler in batch_end]
                if any(stops):
                    break
            if any([handler.epoch_end(self) for handler in epoch_end]):
                break
        for handler in train_end:
            handler.train_end(self)

    # ---- handlers -----------------------------------------------------------------------------
    def _finish_handlers(self, handlers, added, known_metrics):
        mixing = handlers and added
        handlers.extend(added)
        if mixing:
            for handler in handlers:
                _check_handler_metric_ref(handler, set(known_metrics))
        handlers.sort(key=lambda h: getattr(h, 'priority', 0))
        return handlers

    def _prepare_default_handlers(self, val_data, event_handlers):
        handlers = _check_event_handlers(event_handlers)

        def missing(kind):
            return not any(isinstance(h, kind) for h in handlers)
        added = [StoppingHandler(self.max_epoch, self.max_batch)]
        if missing(GradientUpdateHandler):
            added.append(GradientUpdateHandler())
        if missing(MetricHandler):
            added.append(MetricHandler(metrics=self.train_metrics))
        if missing(ValidationHandler) and val_data:
            added.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if missing(LoggingHandler):
            added.append(LoggingHandler(metrics=self.train_metrics))
        return self._finish_handlers(handlers, added, self.train_metrics + self.val_metrics)

    def _prepare_default_validation_handlers(self, event_handlers):
        handlers = _check_event_handlers(event_handlers)
        added = []
        if not any(isinstance(h, MetricHandler) for h in handlers):
            added.append(MetricHandler(metrics=self.val_metrics))
        if not any(isinstance(h, LoggingHandler) for h in handlers):
            added.append(LoggingHandler(metrics=self.val_metrics))
        return self._finish_handlers(handlers, added, self.val_metrics)

    @staticmethod
    def _categorize_handlers(event_handlers):
        """Handlers per event: (train_begin, epoch_begin, batch_begin, batch_end, epoch_end,
        train_end)."""
        return tuple([h for h in event_handlers if isinstance(h, kind)] for kind in _EVENTS)
