"""mx.model: checkpoint files (`prefix-symbol.json`, `prefix-%04d.params`), the kvstore and
update helpers shared by Module and FeedForward, and the deprecated FeedForward model."""
import logging
import os
import time
import warnings
from collections import namedtuple

import numpy as np

from . import io, metric, optimizer as opt
from .base import MXNetError
from .context import Context, cpu
from .initializer import Uniform
from .io import DataDesc
from .kvstore import KVStoreBase, create as _create_kv
from .ndarray import NDArray, load as _load, save as _save, zeros as _zeros
from .symbol import Symbol, load as _load_symbol

BatchEndParam = namedtuple('BatchEndParams', ['epoch', 'nbatch', 'eval_metric', 'locals'])


def params_file(prefix, epoch):
    return '%s-%04d.params' % (prefix, epoch)


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write `prefix-symbol.json` and `prefix-%04d.params` (keys arg:<name> / aux:<name>).

    Each file is replaced atomically: a crash mid-save leaves the previous file intact.
    """
    if symbol is not None:
        symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
    save_dict = {('arg:%s' % k): v.as_in_context(cpu()) for k, v in arg_params.items()}
    save_dict.update({('aux:%s' % k): v.as_in_context(cpu()) for k, v in aux_params.items()})
    param_name = params_file(prefix, epoch)
    _save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def split_params(save_dict):
    """({name: array} for `arg:` keys, {name: array} for `aux:` keys); other keys are skipped."""
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, _, name = key.partition(':')
        if kind == 'arg':
            arg_params[name] = value
        elif kind == 'aux':
            aux_params[name] = value
    return arg_params, aux_params


def load_params(prefix, epoch):
    """(arg_params, aux_params) from `prefix-%04d.params`."""
    save_dict = _load(params_file(prefix, epoch))
    if not save_dict:
        logging.warning('Params file "%s" is empty', params_file(prefix, epoch))
        return {}, {}
    if isinstance(save_dict, list):
        raise MXNetError('Params file "%s" holds a list, not named arrays'
                         % params_file(prefix, epoch))
    return split_params(save_dict)


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) saved by save_checkpoint."""
    symbol = _load_symbol('%s-symbol.json' % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


def pair_file(prefix, epoch):
    """The record that `prefix-%04d.params` and `.states` were written by one save."""
    return '%s-%04d.pair.json' % (prefix, epoch)


def _digest(path):
    import hashlib
    digest = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            digest.update(block)
    return digest.hexdigest()


def record_pair(prefix, epoch, num_update=None):
    """After a checkpoint's .params and .states are written: record their digests (and the
    optimizer's update count) in `prefix-%04d.pair.json`, written last and atomically, so a
    save interrupted between the files, or files of different saves, are told on loading."""
    import json
    from .ndarray.serialization import atomic_write
    states = '%s-%04d.states' % (prefix, epoch)
    record = {'epoch': epoch, 'num_update': num_update,
              'params': _digest(params_file(prefix, epoch)), 'states': _digest(states)}
    atomic_write(pair_file(prefix, epoch), json.dumps(record, indent=1).encode())


def check_pair(prefix, epoch):
    """MXNetError if `prefix-%04d.pair.json` exists and the .params or .states beside it are
    not the files it recorded (a checkpoint without the record, e.g. MXNet's, is accepted)."""
    import json
    path = pair_file(prefix, epoch)
    if not os.path.exists(path):
        return
    try:
        with open(path) as f:
            record = json.load(f)
        expected = {k: record[k] for k in ('params', 'states')}
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise MXNetError('%s is not a readable checkpoint record: %s' % (path, err)) from None
    files = {'params': params_file(prefix, epoch), 'states': '%s-%04d.states' % (prefix, epoch)}
    changed = [files[k] for k in ('params', 'states') if _digest(files[k]) != expected[k]]
    if changed:
        raise MXNetError('%s: %s %s not the file%s saved with the other half of checkpoint %04d '
                         '(a save was interrupted, or files of different saves were mixed); '
                         'load the parameters alone (load_optimizer_states=False) or save the '
                         'checkpoint again' % (path, ' and '.join(changed),
                                               'are' if len(changed) > 1 else 'is',
                                               's' if len(changed) > 1 else '', epoch))


# ---- kvstore and update helpers (Module and FeedForward) -----------------------------------------
_LARGE_PARAM = 16 * 1024 * 1024      # a 'local' store updates larger parameters on the devices


def _create_kvstore(kvstore, num_device, arg_params):
    """(kvstore or None, update_on_kvstore) for a kvstore given as a KVStore, a type name or None.

    A name gives no store for one device outside a distributed job; 'local' leaves the update to
    the devices when a parameter has more than 16M elements; MXNET_UPDATE_ON_KVSTORE=0 always does.
    """
    update_on_kvstore = bool(int(os.environ.get('MXNET_UPDATE_ON_KVSTORE', '1')))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and 'dist' not in kvstore:
            kv = None                  # one device and no workers: nothing to aggregate
        else:
            kv = _create_kv(kvstore)
            if kvstore == 'local' and arg_params and \
                    max(int(np.prod(a.shape)) for a in arg_params.values()) > _LARGE_PARAM:
                update_on_kvstore = False
    else:
        raise TypeError('kvstore must be KVStore, str or None')
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable('optimizer')
    return kv, update_on_kvstore


def _initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Store every parameter under its name; with update_on_kvstore also copy the stored value to
    the parameter's array on every device."""
    for name, on_devices in zip(param_names, param_arrays):
        if update_on_kvstore:
            kvstore.broadcast(name, arg_params[name], out=on_devices)
        else:
            kvstore.init(name, arg_params[name])


def _update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push each parameter's gradients (one per device) to the kvstore, which sums them and
    applies its optimizer, and pull the new weights back to every device."""
    for index, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        kvstore.pushpull(param_names[index], grads, out=weights, priority=-index)


def _update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None,
                   param_names=None, param_indices=None):
    """Update the weights on every device with `updater`; with a kvstore the devices' gradients
    are first replaced by their sum (keyed by name). Parameter i (its position, or
    param_indices[position] where modules share an optimizer) on device k has optimizer index
    i*num_device+k, and the updater is called once per device with all its parameters."""
    per_device = [([], [], []) for _ in range(num_device)]
    for position, (weights, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        index = position if param_indices is None else param_indices[position]
        if kvstore:
            kvstore.pushpull(param_names[position], grads, priority=-index)
        for k, (w, g) in enumerate(zip(weights, grads)):
            per_device[k][0].append(index * num_device + k)
            per_device[k][1].append(g)
            per_device[k][2].append(w)
    for indices, grads, weights in per_device:
        if indices:
            updater(indices, grads, weights)


def _multiple_callbacks(callbacks, *args):
    """Call a callback, each of a list of them, or nothing for None."""
    if isinstance(callbacks, (list, tuple)):
        for callback in callbacks:
            callback(*args)
    elif callbacks:
        callbacks(*args)


def _train_multi_device(symbol, ctx, arg_names, param_names, aux_names, arg_params, aux_params,
                        begin_epoch, end_epoch, epoch_size, optimizer, kvstore, update_on_kvstore,
                        train_data, eval_data=None, eval_metric=None, epoch_end_callback=None,
                        batch_end_callback=None, logger=None, work_load_list=None, monitor=None,
                        eval_end_callback=None, eval_batch_end_callback=None, sym_gen=None):
    """FeedForward's training loop over the devices of ctx; arg_params/aux_params are updated in
    place after the last epoch (and after every epoch when epoch_end_callback is given)."""
    from .executor_manager import DataParallelExecutorManager
    logger = logging if logger is None else logger
    manager = DataParallelExecutorManager(symbol=symbol, ctx=ctx, train_data=train_data,
                                          arg_names=arg_names, param_names=param_names,
                                          aux_names=aux_names, work_load_list=work_load_list,
                                          logger=logger, sym_gen=sym_gen)
    if monitor:
        manager.install_monitor(monitor)
    manager.set_params(arg_params, aux_params)
    if update_on_kvstore:
        kvstore.set_optimizer(optimizer)
    else:
        updater = opt.get_updater(optimizer)
    if kvstore:
        _initialize_kvstore(kvstore, manager.param_arrays, arg_params, manager.param_names,
                            update_on_kvstore)

    train_data.reset()
    for epoch in range(begin_epoch, end_epoch):
        tic = time.time()
        eval_metric.reset()
        nbatch = 0
        while True:                    # an epoch of epoch_size batches may span data resets
            for data_batch in train_data:
                manager.load_data_batch(data_batch)
                if monitor is not None:
                    monitor.tic()
                manager.forward(is_train=True)
                manager.backward()
                if update_on_kvstore:
                    _update_params_on_kvstore(manager.param_arrays, manager.grad_arrays,
                                              kvstore, manager.param_names)
                else:
                    _update_params(manager.param_arrays, manager.grad_arrays, updater, len(ctx),
                                   kvstore=kvstore, param_names=manager.param_names)
                if monitor is not None:
                    monitor.toc_print()
                manager.update_metric(eval_metric, data_batch.label)
                nbatch += 1
                _multiple_callbacks(batch_end_callback, BatchEndParam(
                    epoch=epoch, nbatch=nbatch, eval_metric=eval_metric, locals=locals()))
                if epoch_size is not None and nbatch >= epoch_size:
                    break
            else:
                logger.info('Epoch[%d] Resetting Data Iterator', epoch)
                train_data.reset()
            if epoch_size is None or nbatch >= epoch_size:
                break
        logger.info('Epoch[%d] Time cost=%.3f', epoch, time.time() - tic)
        if epoch_end_callback or epoch + 1 == end_epoch:
            manager.copy_to(arg_params, aux_params)
        _multiple_callbacks(epoch_end_callback, epoch, symbol, arg_params, aux_params)

        if eval_data:
            eval_metric.reset()
            eval_data.reset()
            total = 0
            for i, eval_batch in enumerate(eval_data):
                manager.load_data_batch(eval_batch)
                manager.forward(is_train=False)
                manager.update_metric(eval_metric, eval_batch.label)
                _multiple_callbacks(eval_batch_end_callback, BatchEndParam(
                    epoch=epoch, nbatch=i, eval_metric=eval_metric, locals=locals()))
                total += 1
            _multiple_callbacks(eval_end_callback, BatchEndParam(
                epoch=epoch, nbatch=total, eval_metric=eval_metric, locals=locals()))
            eval_data.reset()


# ---- FeedForward (deprecated in MXNet in favour of Module) ---------------------------------------
from .callback import LogValidationMetricsCallback  # noqa: E402  (callback imports this module)


class FeedForward:
    """MXNet's old model API: a single-output supervised network trained with fit, used with
    predict and score, saved with save and loaded with FeedForward.load.

    symbol is a Symbol or a sym_gen(bucket_key) callable; keyword arguments beyond the listed
    ones go to the optimizer (e.g. learning_rate, momentum, wd).
    """

    def __init__(self, symbol, ctx=None, num_epoch=None, epoch_size=None, optimizer='sgd',
                 initializer=Uniform(0.01), numpy_batch_size=128, arg_params=None,
                 aux_params=None, allow_extra_params=False, begin_epoch=0, **kwargs):
        warnings.warn('\033[91mmxnet.model.FeedForward has been deprecated. Please use '
                      'mxnet.mod.Module instead.\033[0m', DeprecationWarning, stacklevel=2)
        if isinstance(symbol, Symbol):
            self.symbol, self.sym_gen = symbol, None
        elif callable(symbol):
            self.symbol, self.sym_gen = None, symbol
        else:
            raise TypeError('FeedForward: symbol must be a Symbol or a sym_gen(bucket_key) '
                            'callable, got %s' % type(symbol).__name__)
        self.arg_params = arg_params
        self.aux_params = aux_params
        self.allow_extra_params = allow_extra_params
        self.argument_checked = False
        if self.sym_gen is None:
            self._check_arguments()
        if ctx is None:
            ctx = [cpu()]
        elif isinstance(ctx, Context):
            ctx = [ctx]
        self.ctx = ctx
        self.num_epoch = num_epoch
        self.epoch_size = epoch_size
        self.kwargs = kwargs.copy()
        self.optimizer = optimizer
        self.initializer = initializer
        self.numpy_batch_size = numpy_batch_size
        self._pred_exec = None
        self.begin_epoch = begin_epoch

    def _check_arguments(self):
        """Refuse duplicated argument names; with allow_extra_params drop given parameters the
        symbol does not have."""
        if self.argument_checked:
            return
        self.argument_checked = True
        from .executor_manager import _check_arguments
        _check_arguments(self.symbol)
        if self.allow_extra_params:
            if self.arg_params:
                names = set(self.symbol.list_arguments())
                self.arg_params = {k: v for k, v in self.arg_params.items() if k in names}
            if self.aux_params:
                names = set(self.symbol.list_auxiliary_states())
                self.aux_params = {k: v for k, v in self.aux_params.items() if k in names}

    @staticmethod
    def _is_data_arg(name):
        return name.endswith('data') or name.endswith('label')

    def _init_params(self, inputs, overwrite=False):
        """Fresh parameter arrays for the input shapes, holding the given values (unless
        overwrite) or the initializer's; returns (arg_names, param_names, aux_names)."""
        inputs = [x if isinstance(x, DataDesc) else DataDesc(*x) for x in inputs]
        arg_shapes, _, aux_shapes = self.symbol.infer_shape(**{d.name: d.shape for d in inputs})
        arg_types, _, aux_types = self.symbol.infer_type(**{d.name: d.dtype for d in inputs})
        arg_names = self.symbol.list_arguments()
        aux_names = self.symbol.list_auxiliary_states()
        input_names = set(d.name for d in inputs)
        param_names = [name for name in arg_names if name not in input_names]
        arg_params = {name: _zeros(shape, dtype=dtype)
                      for name, shape, dtype in zip(arg_names, arg_shapes, arg_types)
                      if name not in input_names}
        aux_params = {name: _zeros(shape, dtype=dtype)
                      for name, shape, dtype in zip(aux_names, aux_shapes, aux_types)}
        for given, fresh in ((self.arg_params, arg_params), (self.aux_params, aux_params)):
            for name, arr in fresh.items():
                if given and name in given and not overwrite:
                    arr[:] = given[name]
                else:
                    self.initializer(name, arr)
        self.arg_params, self.aux_params = arg_params, aux_params
        return arg_names, param_names, aux_names

    def __getstate__(self):
        state = self.__dict__.copy()
        state['_pred_exec'] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _init_predictor(self, input_shapes, type_dict=None):
        """Bind (or reuse) the inference executor on the first context for the input shapes."""
        shapes = {name: arr.shape for name, arr in self.arg_params.items()}
        shapes.update(dict(input_shapes))
        if self._pred_exec is not None:
            arg_shapes, _, _ = self.symbol.infer_shape(**shapes)
            if [tuple(s) for s in arg_shapes] == \
                    [tuple(a.shape) for a in self._pred_exec.arg_arrays]:
                return
        from .executor_manager import _check_arguments
        pred_exec = self.symbol.simple_bind(self.ctx[0], grad_req='null', type_dict=type_dict,
                                            **shapes)
        pred_exec.copy_params_from(self.arg_params, self.aux_params)
        _check_arguments(self.symbol)
        self._pred_exec = pred_exec

    def _init_iter(self, X, y, is_train):
        """X as a DataIter: arrays are wrapped in an NDArrayIter of numpy_batch_size (shuffled,
        rolling over the last batch, for training)."""
        if isinstance(X, (np.ndarray, NDArray)):
            if y is None:
                if is_train:
                    raise ValueError('y must be specified when X is numpy.ndarray')
                y = np.zeros(X.shape[0])
            if not isinstance(y, (np.ndarray, NDArray)):
                raise TypeError('y must be ndarray when X is numpy.ndarray')
            if X.shape[0] != y.shape[0]:
                raise ValueError('The numbers of data points and labels not equal')
            if y.ndim == 2 and y.shape[1] == 1:
                y = y.reshape((-1,)) if isinstance(y, NDArray) else y.flatten()
            if y.ndim != 1:
                raise ValueError('Label must be 1D or 2D (with 2nd dimension being 1)')
            batch_size = min(X.shape[0], self.numpy_batch_size)
            if is_train:
                return io.NDArrayIter(X, y, batch_size, shuffle=True,
                                      last_batch_handle='roll_over')
            return io.NDArrayIter(X, y, batch_size, shuffle=False)
        if not isinstance(X, io.DataIter):
            raise TypeError('X must be DataIter, NDArray or numpy.ndarray')
        return X

    def _init_eval_iter(self, eval_data):
        """eval_data as a DataIter: a DataIter, or a (data, label) pair of arrays or lists."""
        if eval_data is None:
            return None
        if isinstance(eval_data, (tuple, list)) and len(eval_data) == 2:
            data, label = eval_data
            if data is None:
                raise ValueError('Eval data is NONE')
            if label is None and isinstance(data, io.DataIter):
                return data
            data = np.array(data) if isinstance(data, list) else data
            label = np.array(label) if isinstance(label, list) else label
            return self._init_iter(data, label, is_train=True)
        if not isinstance(eval_data, io.DataIter):
            raise TypeError('Eval data must be DataIter, or NDArray/numpy.ndarray/list pair '
                            '(i.e. tuple/list of length 2)')
        return eval_data

    def _prepare_inference(self, X, reset):
        """(iterator, data arrays of the inference executor) for predict and score."""
        if self.arg_params is None:
            raise ValueError('FeedForward has no parameters yet: fit it first, or give '
                             'arg_params (or use FeedForward.load)')
        X = self._init_iter(X, None, is_train=False)
        if reset:
            X.reset()
        type_dict = {name: arr.dtype for name, arr in self.arg_params.items()}
        for desc in X.provide_data:
            type_dict[desc[0]] = desc.dtype if isinstance(desc, DataDesc) else np.float32
        self._init_predictor(X.provide_data, type_dict)
        return X, [self._pred_exec.arg_dict[desc[0]] for desc in X.provide_data]

    def predict(self, X, num_batch=None, return_data=False, reset=True):
        """The outputs (NumPy; a list for several outputs) for X, on the first context, padding
        removed; with return_data also the data and labels read."""
        X, data_arrays = self._prepare_inference(X, reset)
        outputs = [[] for _ in self._pred_exec.outputs]
        datas = [[] for _ in X.provide_data]
        labels = [[] for _ in X.provide_label or []]
        for i, batch in enumerate(X):
            for src, dst in zip(batch.data, data_arrays):
                src.copyto(dst)
            self._pred_exec.forward(is_train=False)
            real_size = X.batch_size - (batch.pad or 0)
            for store, out in zip(outputs, self._pred_exec.outputs):
                store.append(out[0:real_size].asnumpy())
            if return_data:
                for store, arr in zip(datas, batch.data):
                    store.append(arr[0:real_size].asnumpy())
                for store, arr in zip(labels, batch.label or []):
                    store.append(arr[0:real_size].asnumpy())
            if num_batch is not None and i + 1 == num_batch:
                break
        outputs = _single([np.concatenate(x) for x in outputs])
        if not return_data:
            return outputs
        return (outputs, _single([np.concatenate(x) for x in datas]),
                _single([np.concatenate(x) for x in labels]))

    def score(self, X, eval_metric='acc', num_batch=None, batch_end_callback=None, reset=True):
        """The value of eval_metric over X (labels included in X), on the first context."""
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        X, data_arrays = self._prepare_inference(X, reset)
        for i, batch in enumerate(X):
            if num_batch is not None and i == num_batch:
                break
            for src, dst in zip(batch.data, data_arrays):
                src.copyto(dst)
            self._pred_exec.forward(is_train=False)
            eval_metric.update(batch.label, self._pred_exec.outputs)
            _multiple_callbacks(batch_end_callback, BatchEndParam(
                epoch=0, nbatch=i, eval_metric=eval_metric, locals=locals()))
        return eval_metric.get()[1]

    def fit(self, X, y=None, eval_data=None, eval_metric='acc', epoch_end_callback=None,
            batch_end_callback=None, kvstore='local', logger=None, work_load_list=None,
            monitor=None, eval_end_callback=LogValidationMetricsCallback(),
            eval_batch_end_callback=None):
        """Train for epochs [begin_epoch, num_epoch) on X (a DataIter, or arrays with labels y);
        eval_data (a DataIter or a (data, label) pair) is scored after every epoch."""
        if self.num_epoch is None:
            raise TypeError('FeedForward.fit: num_epoch is None; give FeedForward(..., '
                            'num_epoch=N) the epoch to stop at')
        data = self._init_iter(X, y, is_train=True)
        eval_data = self._init_eval_iter(eval_data)
        if self.sym_gen:
            self.symbol = self.sym_gen(data.default_bucket_key)
            self._check_arguments()
        self.kwargs['sym'] = self.symbol
        self._pred_exec = None         # the parameters are about to change
        arg_names, param_names, aux_names = self._init_params(
            list(data.provide_data) + list(data.provide_label or []))
        if not isinstance(eval_metric, metric.EvalMetric):
            eval_metric = metric.create(eval_metric)
        kv, update_on_kvstore = _create_kvstore(kvstore, len(self.ctx), self.arg_params)
        n_dev = len(self.ctx)
        if update_on_kvstore:
            idx2name = dict(enumerate(param_names))
        else:
            idx2name = {i * n_dev + k: name for i, name in enumerate(param_names)
                        for k in range(n_dev)}
        self.kwargs['param_idx2name'] = idx2name
        if isinstance(self.optimizer, str):
            batch_size = data.batch_size
            if kv and 'dist' in kv.type and '_async' not in kv.type:
                batch_size *= kv.num_workers
            optimizer = opt.create(self.optimizer, rescale_grad=1.0 / batch_size, **self.kwargs)
        elif isinstance(self.optimizer, opt.Optimizer):
            optimizer = self.optimizer
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        else:
            raise TypeError('FeedForward: optimizer must be a name or an Optimizer, got %s'
                            % type(self.optimizer).__name__)
        _train_multi_device(self.symbol, self.ctx, arg_names, param_names, aux_names,
                            self.arg_params, self.aux_params, begin_epoch=self.begin_epoch,
                            end_epoch=self.num_epoch, epoch_size=self.epoch_size,
                            optimizer=optimizer, kvstore=kv, update_on_kvstore=update_on_kvstore,
                            train_data=data, eval_data=eval_data, eval_metric=eval_metric,
                            epoch_end_callback=epoch_end_callback,
                            batch_end_callback=batch_end_callback, logger=logger,
                            work_load_list=work_load_list, monitor=monitor,
                            eval_end_callback=eval_end_callback,
                            eval_batch_end_callback=eval_batch_end_callback, sym_gen=self.sym_gen)

    def save(self, prefix, epoch=None, remove_amp_cast=True):
        """save_checkpoint(prefix, epoch (default num_epoch), ...) of this model."""
        if epoch is None:
            epoch = self.num_epoch
        if epoch is None:
            raise ValueError('FeedForward.save: give the epoch (num_epoch is None)')
        save_checkpoint(prefix, epoch, self.symbol, self.arg_params, self.aux_params,
                        remove_amp_cast=remove_amp_cast)

    @staticmethod
    def load(prefix, epoch, ctx=None, **kwargs):
        """A FeedForward from a checkpoint, starting at begin_epoch=epoch; kwargs go to the
        constructor (num_epoch, optimizer, numpy_batch_size, ...)."""
        symbol, arg_params, aux_params = load_checkpoint(prefix, epoch)
        return FeedForward(symbol, ctx=ctx, arg_params=arg_params, aux_params=aux_params,
                           begin_epoch=epoch, **kwargs)

    @staticmethod
    def create(symbol, X, y=None, ctx=None, num_epoch=None, epoch_size=None, optimizer='sgd',
               initializer=Uniform(0.01), eval_data=None, eval_metric='acc',
               epoch_end_callback=None, batch_end_callback=None, kvstore='local', logger=None,
               work_load_list=None, eval_end_callback=LogValidationMetricsCallback(),
               eval_batch_end_callback=None, **kwargs):
        """A FeedForward made with the given settings and fitted on X (and y)."""
        model = FeedForward(symbol, ctx=ctx, num_epoch=num_epoch, epoch_size=epoch_size,
                            optimizer=optimizer, initializer=initializer, **kwargs)
        model.fit(X, y, eval_data=eval_data, eval_metric=eval_metric,
                  epoch_end_callback=epoch_end_callback, batch_end_callback=batch_end_callback,
                  kvstore=kvstore, logger=logger, work_load_list=work_load_list,
                  eval_end_callback=eval_end_callback,
                  eval_batch_end_callback=eval_batch_end_callback)
        return model


def _single(arrays):
    return arrays[0] if len(arrays) == 1 else arrays
