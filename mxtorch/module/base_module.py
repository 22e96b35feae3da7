"""BaseModule: the high-level API (fit, score, predict, iter_predict) written once, over the
intermediate API every module implements (bind, init_params, init_optimizer, forward, backward,
update, get_outputs, update_metric)."""
import logging
import time
import warnings

import numpy as np

from .. import metric
from ..callback import loggable
from ..base import MXNetError
from ..initializer import Uniform
from ..io import DataBatch, DataDesc, DataIter
from ..model import BatchEndParam, split_params
from ..ndarray import NDArray, array as nd_array, concatenate, load as nd_load, save as nd_save


class ModuleStateError(MXNetError, AssertionError):
    """A module call made out of order (before bind, init_params or init_optimizer, or one the
    binding does not allow).  MXNet asserts these, so it is an AssertionError too."""


def as_list(obj):
    """A list of obj (callbacks and metrics may be given alone or as a list)."""
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def check_input_names(symbol, names, typename, throw):
    """Check that data/label/state names are arguments of the symbol."""
    args = symbol.list_arguments()
    for name in names:
        if name in args:
            continue
        candidates = [a for a in args if not a.endswith(('_weight', '_bias', '_gamma', '_beta'))]
        msg = ('\033[91mYou created Module with Module(..., %s_names=%s) but input with name '
               "'%s' is not found in symbol.list_arguments(). Did you mean one of:\n\t%s\033[0m"
               % (typename, str(names), name, '\n\t'.join(candidates)))
        if throw:
            raise ValueError(msg)
        warnings.warn(msg)


def parse_data_desc(data_names, label_names, data_shapes, label_shapes):
    """DataDescs from (name, shape) tuples or DataDescs, checked against the module's names."""
    data_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in data_shapes]
    if sorted(d.name for d in data_shapes) != sorted(data_names):
        raise ValueError("Data provided by data_shapes don't match names specified by data_names "
                         "(%s vs. %s)" % ([d.name for d in data_shapes], list(data_names)))
    if label_shapes is not None:
        label_shapes = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in label_shapes]
        if sorted(d.name for d in label_shapes) != sorted(label_names):
            warnings.warn("Label provided by label_shapes don't match names specified by "
                          "label_names (%s vs. %s)" % ([d.name for d in label_shapes],
                                                      list(label_names)))
    elif label_names:
        warnings.warn('label_shapes is None while the module has labels %s: labels will not be '
                      'loaded' % list(label_names))
    return data_shapes, label_shapes


class BaseModule:
    """The base class of modules: state flags and the high-level training/inference loops."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # ---- preconditions ---------------------------------------------------------------------------
    def _require(self, binded=True, params=True, optimizer=False, what=''):
        if binded and not self.binded:
            raise ModuleStateError('%s: call bind() first' % what)
        if params and not self.params_initialized:
            raise ModuleStateError('%s: call init_params() (or set_params) first' % what)
        if optimizer and not self.optimizer_initialized:
            raise ModuleStateError('%s: call init_optimizer() first' % what)

    # ---- high-level API ----------------------------------------------------------------------------
    def forward_backward(self, data_batch):
        """forward(is_train=True) then backward()."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run the model on eval_data and return the metric's (name, value) pairs."""
        self._require(what='score')
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            if isinstance(eval_batch, list):
                self.update_metric(eval_metric, [b.label for b in eval_batch], pre_sliced=True)
            else:
                self.update_metric(eval_metric, eval_batch.label)
            for callback in as_list(batch_end_callback):
                callback(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                       locals=locals()))
            actual_num_batch += 1
        for callback in as_list(score_end_callback):
            callback(BatchEndParam(epoch=epoch, nbatch=actual_num_batch, eval_metric=eval_metric,
                                   locals=locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield (outputs without padding, batch index, batch) for each batch of eval_data."""
        self._require(what='iter_predict')
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """Outputs for all of eval_data (padding removed), merged across batches by default."""
        self._require(what='predict')
        if isinstance(eval_data, (NDArray, np.ndarray)):
            if isinstance(eval_data, np.ndarray):
                eval_data = nd_array(eval_data)
            self.forward(DataBatch([eval_data]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError('eval_data must be of type NDArray or DataIter')
        if reset:
            eval_data.reset()
        output_list = []
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            output_list.append([out[0:out.shape[0] - pad].copy() for out in self.get_outputs()])
        if not output_list:
            return output_list
        if not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        for out in output_list:
            assert len(out) == num_outputs, ('Cannot merge batches, as num of outputs is not the '
                                             'same in mini-batches. Maybe bucketing is used?')
        merged = [concatenate([out[i] for out in output_list]) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def fit(self, train_data, eval_data=None, eval_metric='acc', epoch_end_callback=None,
            batch_end_callback=None, kvstore='local', optimizer='sgd',
            optimizer_params=(('learning_rate', 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train on train_data for epochs [begin_epoch, num_epoch), logging MXNet's lines."""
        if num_epoch is None:
            raise ModuleStateError('fit: please specify number of epochs (num_epoch=None)')
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)

        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            self._begin_epoch(epoch, train_data)
            eval_metric.reset()
            nbatch = 0
            data_iter = iter(train_data)
            end_of_batch = False
            next_data_batch = next(data_iter)
            eval_name_vals = []
            while not end_of_batch:
                data_batch = next_data_batch
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                if isinstance(data_batch, list):
                    self.update_metric(eval_metric, [b.label for b in data_batch],
                                       pre_sliced=True)
                else:
                    self.update_metric(eval_metric, data_batch.label)
                try:
                    next_data_batch = next(data_iter)
                    self.prepare(next_data_batch, sparse_row_id_fn=sparse_row_id_fn)
                except StopIteration:
                    end_of_batch = True
                if monitor is not None:
                    monitor.toc_print()
                if end_of_batch:
                    eval_name_vals = eval_metric.get_global_name_value()
                for callback in as_list(batch_end_callback):
                    callback(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=eval_metric,
                                           locals=locals()))
                nbatch += 1
            for name, value in eval_name_vals:
                self.logger.info('Epoch[%d] Train-%s=%f', epoch, name, loggable(value))
            self.logger.info('Epoch[%d] Time cost=%.3f', epoch, time.time() - tic)

            arg_params, aux_params = self.get_params()
            self.set_params(arg_params, aux_params)
            for callback in as_list(epoch_end_callback):
                callback(epoch, self.symbol, arg_params, aux_params)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, value in res:
                    self.logger.info('Epoch[%d] Validation-%s=%f', epoch, name, loggable(value))
            train_data.reset()

    def _begin_epoch(self, epoch, train_data):
        """fit's hook at the start of each epoch (before its first batch); nothing here."""

    # ---- parameters ----------------------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init,
                         allow_extra=allow_extra)

    def save_params(self, fname):
        """Save parameters as an MXNet .params file (keys arg:<name>, aux:<name>)."""
        arg_params, aux_params = self.get_params()
        save_dict = {('arg:%s' % k): v.as_in_context(_cpu()) for k, v in arg_params.items()}
        save_dict.update({('aux:%s' % k): v.as_in_context(_cpu()) for k, v in aux_params.items()})
        nd_save(fname, save_dict)

    def load_params(self, fname):
        """Load parameters from an MXNet .params file."""
        save_dict = nd_load(fname)
        if isinstance(save_dict, list) or any(
                k.partition(':')[0] not in ('arg', 'aux') for k in save_dict):
            raise ValueError('Invalid param file ' + fname)
        arg_params, aux_params = split_params(save_dict)
        self.set_params(arg_params, aux_params)

    def get_states(self, merge_multi_context=True):
        assert not merge_multi_context
        return []

    def set_states(self, states=None, value=None):
        assert not states and not value

    def install_monitor(self, mon):
        raise NotImplementedError()

    # ---- the intermediate API every concrete module implements ---------------------------------
    def _abstract(self, what):
        raise NotImplementedError('%s.%s: a subclass of BaseModule must implement it'
                                  % (type(self).__name__, what))

    def get_params(self):
        """(arg_params, aux_params): the parameters as CPU NDArrays."""
        self._abstract('get_params')

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialize the parameters (from the dicts given, else with the initializer)."""
        self._abstract('init_params')

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Allocate the computation for the given input shapes."""
        self._abstract('bind')

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install an optimizer (and the kvstore that aggregates gradients)."""
        self._abstract('init_optimizer')

    def forward(self, data_batch, is_train=None):
        """Compute the outputs for a batch."""
        self._abstract('forward')

    def backward(self, out_grads=None):
        """Compute the gradients from the last forward."""
        self._abstract('backward')

    def update(self):
        """Apply the optimizer to the gradients of the last backward."""
        self._abstract('update')

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward."""
        self._abstract('get_outputs')

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the inputs (bound with inputs_need_grad=True)."""
        self._abstract('get_input_grads')

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Feed the last outputs and the labels to an EvalMetric."""
        self._abstract('update_metric')

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepare for a batch; only meaningful for row-sparse parameters on a kvstore."""
        if sparse_row_id_fn is not None:
            warnings.warn('sparse_row_id_fn is not invoked for %s: mxtorch parameters are dense'
                          % type(self).__name__)

    # ---- properties every module defines ---------------------------------------------------------------
    @property
    def symbol(self):
        return self._symbol

    @property
    def data_names(self):
        raise NotImplementedError()

    @property
    def output_names(self):
        raise NotImplementedError()

    @property
    def data_shapes(self):
        raise NotImplementedError()

    @property
    def label_shapes(self):
        raise NotImplementedError()

    @property
    def output_shapes(self):
        raise NotImplementedError()


def _cpu():
    from ..context import cpu
    return cpu()
