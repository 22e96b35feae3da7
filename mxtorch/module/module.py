"""Module: a Symbol bound for training or inference on one or more contexts."""
import logging
import threading
import warnings

import numpy as np

from .. import optimizer as opt
from .._safety import reading
from ..base import MXNetError
from ..context import Context, cpu
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..kvstore import worker_rank
from ..model import _create_kvstore, _initialize_kvstore, _update_params, load_checkpoint
from ..model import check_pair, record_pair
from ..ndarray import NDArray, arange, array as nd_array, zeros
from ..ndarray.serialization import atomic_write
from ..optimizer.serialization import check_states
from .base_module import BaseModule, ModuleStateError, check_input_names, parse_data_desc
from .executor_group import DataParallelExecutorGroup
from ..train_step import UpdatePlan

class Module(BaseModule):
    """A module wrapping one Symbol; see the MXNet Module API."""

    def __init__(self, symbol, data_names=('data',), label_names=('softmax_label',),
                 logger=logging, context=cpu(), work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        # forward (loading the batch, reshaping), backward and update run one at a time; each
        # thread reads the outputs of its own forward (see Executor)
        self._lock = threading.RLock()
        self._context = [context] if isinstance(context, Context) else list(context)
        self._work_load_list = work_load_list or [1] * len(self._context)
        if len(self._work_load_list) != len(self._context):
            raise MXNetError('Module: work_load_list must have one entry per context: expected '
                             '%d entries, given %r' % (len(self._context), self._work_load_list))
        self._group2ctxs = group2ctxs
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        check_input_names(symbol, self._data_names, 'data', True)
        check_input_names(symbol, self._label_names, 'label', False)
        check_input_names(symbol, self._state_names, 'state', True)
        check_input_names(symbol, self._fixed_param_names, 'fixed_param', True)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._arg_params = None
        self._aux_params = None
        self._params_dirty = False
        self._compression_params = compression_params
        self._optimizer = None
        self._kvstore = None
        self._update_on_kvstore = None
        self._updater = None
        self._update_plan = None              # train_step.UpdatePlan, made after a first update
        self._preload_opt_states = None
        self._param_index = {}            # parameter name -> optimizer index (shared by buckets)
        self._grad_req = None
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    # ---- checkpoints -----------------------------------------------------------------------------
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module from a checkpoint; params are set when it is bound, optimizer states (if
        asked for) when init_optimizer runs."""
        sym, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=sym, **kwargs)
        mod._arg_params = args
        mod._aux_params = auxs
        mod.params_initialized = True
        if load_optimizer_states:
            check_pair(prefix, epoch)          # .params and .states of one save
            mod._preload_opt_states = '%s-%04d.states' % (prefix, epoch)
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False, remove_amp_cast=True):
        """Write prefix-symbol.json, prefix-%04d.params and optionally prefix-%04d.states
        (in a distributed job only rank 0 writes)."""
        if worker_rank() != 0:
            return
        self._symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
        param_name = '%s-%04d.params' % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        if save_optimizer_states:
            state_name = '%s-%04d.states' % (prefix, epoch)
            self.save_optimizer_states(state_name)
            logging.info('Saved optimizer state to "%s"', state_name)
            record_pair(prefix, epoch, getattr(self._optimizer, 'num_update', None))

    # ---- properties ------------------------------------------------------------------------------
    @property
    def data_names(self):
        return self._data_names

    @property
    def label_names(self):
        return self._label_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        self._require(params=False, what='data_shapes')
        return self._data_shapes

    @property
    def label_shapes(self):
        self._require(params=False, what='label_shapes')
        return self._label_shapes

    @property
    def output_shapes(self):
        self._require(params=False, what='output_shapes')
        return self._exec_group.get_output_shapes()

    # ---- parameters ------------------------------------------------------------------------------
    def get_params(self):
        """(arg_params, aux_params) on CPU, synced from the devices when they changed."""
        self._require(what='get_params')
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialise every parameter from the given dicts or with the initializer."""
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. '
                          'init_params call ignored.', stacklevel=2)
            return
        if not self.binded:
            raise ModuleStateError('init_params: call bind() before initializing the parameters')
        attrs = self._symbol.attr_dict()
        # every check and every initializer runs on staged copies before a parameter changes,
        # so a failed call leaves the module as it was
        staged = []
        for own, given, kind in ((self._arg_params, arg_params, 'arg_params'),
                                 (self._aux_params, aux_params, 'aux_params')):
            for name, arr in sorted(own.items()):
                if given is not None and name in given:
                    value = given[name]
                    if value is arr:
                        continue
                    if isinstance(value, np.ndarray):
                        value = nd_array(value, dtype=arr.dtype)
                    elif not isinstance(value, NDArray):
                        raise MXNetError('init_params: %s[%r] must be an NDArray, given %s'
                                         % (kind, name, type(value).__name__))
                    if tuple(value.shape) != tuple(arr.shape):
                        raise MXNetError('init_params: %s[%r] has shape %s, expected %s'
                                         % (kind, name, tuple(value.shape), tuple(arr.shape)))
                    staged.append((arr, value))
                    continue
                if given is not None and not allow_missing:
                    raise MXNetError('%s is not presented (init_params: %s lacks it; pass '
                                     'allow_missing=True to initialize it instead)'
                                     % (name, kind))
                if initializer is None:
                    if given is None:
                        raise MXNetError('init_params: %s is None and no initializer was '
                                         'given for %r' % (kind, name))
                    continue
                value = arr.copy()
                initializer(InitDesc(name, attrs.get(name, None)), value)
                staged.append((arr, value))
        for arr, value in staged:
            value.copyto(arr)
        self.params_initialized = True
        self._params_dirty = False
        self._exec_group.set_params(self._arg_params, self._aux_params, allow_extra=allow_extra)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init,
                             allow_extra=allow_extra)
            return
        if self.params_initialized and not force_init:
            warnings.warn('Parameters already initialized and force_init=False. '
                          'set_params call ignored.', stacklevel=2)
            return
        self._exec_group.set_params(arg_params, aux_params, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def _sync_params_from_devices(self):
        self._exec_group.get_params(self._arg_params, self._aux_params)
        if self._kvstore and self._update_on_kvstore:
            # the devices hold only the rows last pulled: row_sparse values come from the store
            for name, value in sorted(self._arg_params.items()):
                if value.stype == 'row_sparse':
                    self._kvstore.row_sparse_pull(name, value,
                                                  row_ids=arange(value.shape[0], dtype='int64'))
        self._params_dirty = False

    # ---- binding ---------------------------------------------------------------------------------
    def _reset_bind(self):
        self.binded = False
        self._exec_group = None
        self._data_shapes = None
        self._label_shapes = None

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Create the executors for the given input shapes."""
        if force_rebind:
            if self.binded and self._params_dirty:      # keep what training did on the devices
                self._sync_params_from_devices()
            self._reset_bind()
        if self.binded:
            self.logger.warning('Already bound, ignoring bind()')
            return
        # everything is checked and built before the module changes: a failed bind leaves it
        # unbound as it was
        if not for_training and inputs_need_grad:
            raise ModuleStateError('bind: inputs_need_grad=True needs for_training=True')
        data_shapes, label_shapes = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        shared_group = None
        if shared_module is not None:
            if not (isinstance(shared_module, Module) and shared_module.binded and
                    shared_module.params_initialized):
                raise ModuleStateError('bind: shared_module must be a bound Module with '
                                       'initialized parameters, given %r' % (shared_module,))
            shared_group = shared_module._exec_group
            if len(shared_group.execs) < len(self._context):
                raise MXNetError('bind: shared_module runs on %d contexts, this module on %d'
                                 % (len(shared_group.execs), len(self._context)))
        group = DataParallelExecutorGroup(
            self._symbol, self._context, self._work_load_list, data_shapes,
            label_shapes, self._param_names, for_training, inputs_need_grad, shared_group,
            logger=self.logger, fixed_param_names=self._fixed_param_names, grad_req=grad_req,
            group2ctxs=self._group2ctxs, state_names=self._state_names)
        if shared_module is None and self.params_initialized:
            group.set_params(self._arg_params, self._aux_params)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        self._data_shapes, self._label_shapes = data_shapes, label_shapes
        self._exec_group = group
        self._total_exec_bytes = self._exec_group._total_exec_bytes
        if shared_module is not None:
            self.params_initialized = True
            self._arg_params = shared_module._arg_params
            self._aux_params = shared_module._aux_params
            self._adopt_new_params()
        elif not self.params_initialized:      # (else: loaded by Module.load or kept on rebind)
            assert self._arg_params is None and self._aux_params is None
            self._arg_params = {name: zeros(block[0].shape, dtype=block[0].dtype,
                                            stype=block[0].stype)    # (row_sparse weights)
                                for name, block in zip(self._param_names,
                                                       self._exec_group.param_arrays)}
            self._aux_params = {name: zeros(block[0].shape, dtype=block[0].dtype)
                                for name, block in zip(self._aux_names,
                                                       self._exec_group.aux_arrays)}
        if shared_module is not None and shared_module.optimizer_initialized:
            self.borrow_optimizer(shared_module)
        self.binded = True

    def _adopt_new_params(self):
        """Parameters this module has and the shared one lacks join the shared dicts, with the
        values this module's executors start with (zeros until initialised)."""
        for name, block in zip(self._param_names, self._exec_group.param_arrays):
            if name not in self._arg_params:
                self._arg_params[name] = block[0].copy()
        for name, block in zip(self._aux_names, self._exec_group.aux_arrays):
            if name not in self._aux_params:
                self._aux_params[name] = block[0].copy()

    def reshape(self, data_shapes, label_shapes=None):
        """Reshape the executors for new input shapes (parameters stay shared)."""
        self._require(params=False, what='reshape')
        data_shapes, label_shapes = parse_data_desc(
            self._data_names, self._label_names, data_shapes, label_shapes)
        self._exec_group.reshape(data_shapes, label_shapes)
        self._data_shapes, self._label_shapes = data_shapes, label_shapes

    # ---- optimizer -------------------------------------------------------------------------------
    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install the optimizer (and the kvstore that aggregates gradients across devices)."""
        self._require(what='init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring...')
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kv, update_on_kvstore = _create_kvstore(kvstore, len(self._context), self._arg_params)
        batch_size = self._exec_group.batch_size
        if kv is not None and 'dist' in kv.type and '_sync' in kv.type:
            batch_size *= kv.num_workers
        rescale_grad = 1.0 / batch_size
        n_dev = len(self._context)
        names = self._exec_group.param_names
        self._param_index = {name: i for i, name in enumerate(names)}
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * n_dev + k: n for i, n in enumerate(names) for k in range(n_dev)}
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault('rescale_grad', rescale_grad)
            optimizer = opt.create(optimizer, sym=self.symbol, param_idx2name=idx2name, **params)
        else:
            assert isinstance(optimizer, opt.Optimizer), 'optimizer must be str or Optimizer'
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn('Optimizer created manually outside Module but rescale_grad is not '
                              'normalized to 1.0/batch_size/num_workers (%s vs. %s). Is this '
                              'intended?' % (optimizer.rescale_grad, rescale_grad), stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        self._optimizer = optimizer
        self._kvstore = kv
        self._update_on_kvstore = update_on_kvstore
        self._updater = None
        if kv is not None:
            if self._compression_params:
                kv.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kv.set_optimizer(self._optimizer)
            _initialize_kvstore(kv, self._exec_group.param_arrays, self._arg_params, names,
                                update_on_kvstore)
        if not update_on_kvstore:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    def borrow_optimizer(self, shared_module):
        """Use the optimizer, kvstore and updater of another (initialised) module."""
        if not shared_module.optimizer_initialized:
            raise ModuleStateError('borrow_optimizer: the shared module has no optimizer; call '
                                   'its init_optimizer() first')
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self._param_index = shared_module._param_index
        self._register_new_params()
        self.optimizer_initialized = True

    def _register_new_params(self):
        """Give parameters the lending module lacks their own optimizer index (and kvstore key),
        with the lr/wd multipliers a string optimizer would have given them."""
        n_dev = len(self._context)
        attrs = self._symbol.attr_dict()
        for name in self._exec_group.param_names:
            if name in self._param_index:
                continue
            i = self._param_index[name] = len(self._param_index)
            indices = [i] if self._update_on_kvstore else [i * n_dev + k for k in range(n_dev)]
            self._optimizer.idx2name.update(dict.fromkeys(indices, name))
            if not name.endswith(('_weight', '_gamma')):
                self._optimizer.wd_mult.setdefault(name, 0.0)
            for key, table in (('__lr_mult__', self._optimizer.lr_mult),
                               ('__wd_mult__', self._optimizer.wd_mult)):
                if key in attrs.get(name, {}):
                    table[name] = float(attrs[name][key])
            if self._kvstore is not None:
                self._kvstore.init(name, self._arg_params[name])

    def save_optimizer_states(self, fname):
        self._require(optimizer=True, what='save_optimizer_states')
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            atomic_write(fname, self._updater.get_states())

    def load_optimizer_states(self, fname):
        """Load the states of `fname`, checked first against the bound parameters (count,
        shapes, dtypes): a file that does not fit changes nothing and raises MXNetError."""
        self._require(optimizer=True, what='load_optimizer_states')
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            return
        with open(fname, 'rb') as f:
            data = f.read()
        group, num_device = self._exec_group, len(self._context)
        weights = {}                     # by optimizer index, and by name (a kvstore's keys)
        for name, arrays in zip(group.param_names, group.param_arrays):
            weights[name] = arrays[0]
            for k, weight in enumerate(arrays):
                weights[self._param_index[name] * num_device + k] = weight
        known = set(range(len(self._param_index) * num_device)) | set(self._param_index)

        def check(states, optimizer):
            check_states(states, optimizer, weights, known)
        with reading(fname, 'optimizer states file'):
            self._updater.set_states(data, check=check)

    # ---- computation -----------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Forward a batch; a batch of another shape reshapes the executors on the fly."""
        with self._lock:
            self._forward(data_batch, is_train)

    def _forward(self, data_batch, is_train):
        self._require(what='forward')
        current = tuple(d.shape for d in self._data_shapes)
        if isinstance(data_batch, list):
            new = tuple(d.shape for d in data_batch[0].data)
        else:
            new = tuple(d.shape for d in data_batch.data)
        if current != new:
            provided = getattr(data_batch, 'provide_data', None)
            new_data = provided or [DataDesc(d.name, s, d.dtype, d.layout)
                                    for d, s in zip(self._data_shapes, new)]
            provided_label = getattr(data_batch, 'provide_label', None)
            if provided_label:
                new_label = provided_label
            elif getattr(data_batch, 'label', None) and self._label_shapes:
                new_label = [DataDesc(d.name, l.shape, d.dtype, d.layout)
                             for d, l in zip(self._label_shapes, data_batch.label)]
            else:
                new_label = None
            self.reshape(new_data, new_label)
        self._exec_group.forward(data_batch, is_train)

    def backward(self, out_grads=None):
        self._require(what='backward')
        with self._lock:
            self._exec_group.backward(out_grads=out_grads)

    def update(self):
        """Apply the optimizer to every parameter that has a gradient."""
        with self._lock:
            self._update()

    def _update(self):
        self._require(optimizer=True, what='update')
        self._params_dirty = True
        group = self._exec_group
        if self._update_on_kvstore:
            # one call for all parameters: a distributed store sends them in one message
            live = [(name, grads, weights) for name, weights, grads in
                    zip(group.param_names, group.param_arrays, group.grad_arrays)
                    if grads[0] is not None]
            if live:
                names, grads, weights = (list(column) for column in zip(*live))
                self._kvstore.pushpull(names, grads, out=weights)
            return
        if self._kvstore is None:       # nothing to aggregate: the planned update, once made
            plan = self._update_plan
            if plan is not None and plan.holds(self._updater, id(group.param_arrays)):
                if plan.planned:
                    plan()
                    return
            else:                       # the Updater runs this time (creating missing states)
                self._update_plan = UpdatePlan.make(
                    self._updater, group.param_arrays, group.grad_arrays,
                    [self._param_index[n] for n in group.param_names], len(self._context),
                    id(group.param_arrays))
        _update_params(group.param_arrays, group.grad_arrays, self._updater, len(self._context),
                       kvstore=self._kvstore, param_names=group.param_names,
                       param_indices=[self._param_index[n] for n in group.param_names])

    def get_outputs(self, merge_multi_context=True):
        self._require(what='get_outputs')
        return self._exec_group.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._require(what='get_input_grads')
        if not self.inputs_need_grad:
            raise ModuleStateError('get_input_grads: bind with inputs_need_grad=True to get '
                                   'input gradients')
        return self._exec_group.get_input_grads(merge_multi_context=merge_multi_context)

    def get_states(self, merge_multi_context=True):
        self._require(what='get_states')
        return self._exec_group.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._require(what='set_states')
        self._exec_group.set_states(states, value)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._require(params=False, what='update_metric')
        self._exec_group.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._require(params=False, what='install_monitor')
        self._exec_group.install_monitor(mon)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Before a batch: with parameters updated in the kvstore, pull into the devices the
        rows of each row_sparse parameter that sparse_row_id_fn(data_batch) names
        ({parameter name: row ids}), as MXNet does."""
        self._require(params=False, what='prepare')
        if sparse_row_id_fn is None:
            return
        if not self._kvstore or not self._update_on_kvstore:
            warnings.warn(UserWarning('Parameters are not updated in the KVStore. No need to '
                                      'call sparse_row_id_fn.'))
            return
        row_ids = sparse_row_id_fn(data_batch)
        assert isinstance(row_ids, dict), 'Expected dict output from sparse_row_id_fn'
        group = self._exec_group
        for name, rows in row_ids.items():
            index = group.param_names.index(name)
            arrays = group.param_arrays[index]
            if arrays[0].stype != 'row_sparse':
                warnings.warn(UserWarning("%s.stype is not 'row_sparse'. No need to perform "
                                          'row_sparse_pull.' % name))
            else:
                self._kvstore.row_sparse_pull(name, arrays, row_ids=rows, priority=-index)
