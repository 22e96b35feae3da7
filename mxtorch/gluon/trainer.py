"""mx.gluon.Trainer: applies an mx.optimizer to Parameters, aggregating gradients over their
contexts through an mx.kvstore (none for one device, as MXNet)."""
from .. import optimizer as opt
from .. import autograd, kvstore as kvs
from ..kvstore import KVStore
from ..kvstore.base import KVStoreBase
from ..model import _create_kvstore
from ..train_step import UpdatePlan
from .parameter import Parameter, ParameterDict



def _values(param):
    """A Parameter's value on every context, whatever its storage type (data() refuses
    row_sparse Parameters)."""
    return param._check_and_get(param._data, list)

class Trainer:
    """Trainer(params, optimizer, optimizer_params, kvstore='device', compression_params=None,
    update_on_kvstore=None). A dict of Parameters is taken in sorted name order: parameter i
    is optimizer index i."""

    def __init__(self, params, optimizer, optimizer_params=None, kvstore='device',
                 compression_params=None, update_on_kvstore=None):
        if isinstance(params, (dict, ParameterDict)):
            params = [params[key] for key in sorted(list(params.keys()))]
        if not isinstance(params, (list, tuple)):
            raise ValueError('First argument must be a list or dict of Parameters, got %s.'
                             % type(params))
        self._params = []
        self._param2idx = {}
        self._contains_sparse_weight = False
        self._contains_sparse_grad = False
        for i, param in enumerate(params):
            if not isinstance(param, Parameter):
                raise ValueError('First argument must be a list or dict of Parameters, got '
                                 'list of %s.' % type(param))
            if param.name in self._param2idx:
                raise ValueError('Parameter %s is duplicated in the list of Parameters.'
                                 % param.name)
            self._param2idx[param.name] = i
            self._params.append(param)
            param._set_trainer(self)
            self._contains_sparse_weight |= param._stype != 'default'
            self._contains_sparse_grad |= param._grad_stype != 'default'
        self._compression_params = compression_params
        self._contexts = self._check_contexts()
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._kvstore_params = {'kvstore': kvstore, 'update_on_kvstore': update_on_kvstore}
        self._kv_initialized = False
        self._kvstore = None
        self._update_on_kvstore = None
        self._distributed = None
        self._params_to_init = []
        self._reset_kvstore()

    def _check_contexts(self):
        contexts = None
        for param in self._params:
            ctx = param.list_ctx()
            assert contexts is None or contexts == ctx, \
                'All Parameters must be initialized on the same set of contexts, but ' \
                'Parameter %s is initialized on %s while previous Parameters are initialized ' \
                'on %s.' % (param.name, str(ctx), str(contexts))
            contexts = ctx
        return contexts

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = {i: param for i, param in enumerate(self._params)}
        if isinstance(optimizer, opt.Optimizer):
            assert not optimizer_params, \
                'optimizer_params must be None if optimizer is an instance of Optimizer ' \
                'instead of str'
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]
        self._update_plans = {}         # device -> train_step.UpdatePlan of its last update

    def _reset_kvstore(self):
        if self._kvstore and 'dist' in self._kvstore.type:
            raise RuntimeError('Cannot reset distributed KVStore.')
        self._kv_initialized = False
        self._kvstore = None
        self._distributed = None
        self._update_on_kvstore = None
        self._params_to_init = list(self._params)

    def _init_kvstore(self):
        config = self._kvstore_params
        if self._contains_sparse_weight:
            # sparse weights live (whole) in the kvstore, which updates them: rows are pulled
            # before forward, gradients pushed after backward
            kvstore = config['kvstore']
            if isinstance(kvstore, str):
                kvstore = kvs.create(kvstore)
            elif not isinstance(kvstore, KVStoreBase):
                raise TypeError("Cannot create '%s' KVStore with row_sparse parameters. The "
                                'type must be KVStore or str.' % kvstore)
            assert kvstore.is_capable(KVStoreBase.OPTIMIZER), \
                'KVStore with sparse weight requires optimizer support. However, type(kv) ' \
                'does not support optimizer. Please consider other kvstore backends ' \
                '(e.g. dist_device) instead.'
            update_on_kvstore = True
            self._distributed = 'dist' in kvstore.type
            if config['update_on_kvstore'] is False:
                raise ValueError('Cannot set update_on_kvstore=False when sparse weights are '
                                 'present.')
        elif self._contains_sparse_grad:
            # dense weights, sparse gradients: one process aggregates the gradients and
            # updates locally; several update on the kvstore
            arg_arrays = {p.name: p.data(self._contexts[0]) for p in self._params}
            kvstore, _ = _create_kvstore(config['kvstore'], len(self._contexts), arg_arrays)
            self._distributed = 'dist' in kvstore.type if kvstore else False
            update_on_kvstore = self._distributed
            if config['update_on_kvstore'] is not None:
                if config['update_on_kvstore'] is False and self._distributed:
                    raise ValueError('Cannot set update_on_kvstore=False on dist kvstore when '
                                     'sparse gradients are present.')
                update_on_kvstore = config['update_on_kvstore']
            if kvstore is not None and not isinstance(kvstore, KVStore):
                raise ValueError('Cannot use {} for multi-device training with sparse '
                                 'gradients'.format(type(kvstore)))
        else:
            arg_arrays = {p.name: p.data(self._contexts[0]) for p in self._params}
            kvstore, update_on_kvstore = _create_kvstore(config['kvstore'],
                                                         len(self._contexts), arg_arrays)
            self._distributed = 'dist' in kvstore.type if kvstore else False
            if self._distributed and 'async' in kvstore.type:
                update_on_kvstore = True
                if config['update_on_kvstore'] is False:
                    raise ValueError('Please set update_on_kvstore=True when training in '
                                     'async mode.')
            if config['update_on_kvstore'] is not None:
                update_on_kvstore = config['update_on_kvstore']
            if kvstore and update_on_kvstore and not kvstore.is_capable('optimizer'):
                if config['update_on_kvstore']:
                    raise ValueError('Please set update_on_kvstore=False when training with %s'
                                     % type(kvstore))
                update_on_kvstore = False
        if kvstore:
            if self._compression_params:
                kvstore.set_gradient_compression(self._compression_params)
            if update_on_kvstore:
                kvstore.set_optimizer(self._optimizer)
            self._kvstore = kvstore
            self._update_on_kvstore = update_on_kvstore
        else:
            self._kvstore = None
            self._update_on_kvstore = None
        self._kv_initialized = True

    def _init_params(self):
        """Put the Parameters initialised since the last call into the kvstore."""
        assert self._kv_initialized, 'Cannot initialize parameters in KVStore when KVStore ' \
                                     'is not initialized.'
        waiting = []
        if self._kvstore:
            for param in self._params_to_init:
                if param._deferred_init:
                    waiting.append(param)
                    continue
                arrays = _values(param)
                idx = self._param2idx[param.name]
                if param._stype != 'default':
                    self._kvstore.init(idx, arrays[0])
                else:
                    # the copies take the first one's value; the first is not written again
                    # when there are others, as it may already be in a recorded graph (a
                    # deferred Parameter set up during a forward pass)
                    self._kvstore.broadcast(idx, arrays[0], arrays[1:] or arrays)
        self._params_to_init = waiting

    @property
    def learning_rate(self):
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning('Optimizer has to be defined before its learning rate can be '
                              'accessed.')
        return self._optimizer.learning_rate

    @property
    def optimizer(self):
        if isinstance(self._optimizer, opt.Optimizer):
            return self._optimizer
        raise UserWarning('Optimizer has not been initialized yet')

    def set_learning_rate(self, lr):
        if not isinstance(self._optimizer, opt.Optimizer):
            raise UserWarning('Optimizer has to be defined before its learning rate is '
                              'mutated.')
        self._optimizer.set_learning_rate(lr)

    def _row_sparse_pull(self, parameter, out, row_id, full_idx=False):
        """Pull the rows `row_id` of `parameter` from the kvstore into `out` (every row, by a
        plain pull, with full_idx)."""
        with autograd._RecordingStateScope(False, None):    # kvstore traffic is not recorded
            self._prepare()
            idx = self._param2idx[parameter.name]
            if full_idx and 'dist' not in self._kvstore.type:
                assert row_id.size == out.shape[0]
                self._kvstore.pull(idx, out=out, priority=-idx, ignore_sparse=False)
            else:
                self._kvstore.row_sparse_pull(idx, out=out, row_ids=row_id, priority=-idx)

    def _check_and_rescale_grad(self, scale):
        if self._update_on_kvstore and self._distributed and self._kv_initialized:
            if self._optimizer.rescale_grad != scale:
                raise UserWarning('Possible change in the `batch_size` from previous `step` '
                                  'detected. Optimizer gradient normalizing factor will not '
                                  'change w.r.t new batch_size when update_on_kvstore=True and '
                                  'when distributed kvstore is used.')
        self._optimizer.rescale_grad = scale

    def _prepare(self):
        if not self._kv_initialized:
            self._init_kvstore()
        if self._params_to_init:
            self._init_params()

    def step(self, batch_size, ignore_stale_grad=False):
        """One update: gradients are rescaled by 1/batch_size, aggregated over the contexts,
        and the optimizer applied. Call after backward, outside autograd.record()."""
        rescale_grad = self._scale / batch_size
        self._check_and_rescale_grad(rescale_grad)
        self._prepare()
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sum the gradients over the contexts (for update() afterwards)."""
        self._prepare()
        assert not (self._kvstore and self._update_on_kvstore), \
            'allreduce_grads() when parameters are updated on kvstore is not supported. Try ' \
            'setting `update_on_kvstore` to False when creating trainer.'
        self._allreduce_grads()

    def _allreduce_grads(self):
        if not self._kvstore:
            return
        for i, param in enumerate(self._params):
            if param.grad_req == 'null':
                continue
            grads = param.list_grad()
            if grads[0].stype != 'default':
                # sparse gradients: push, then pull the dense weight (updated on the kvstore)
                # or the summed gradient; a sparse weight is pulled by rows before forward
                self._kvstore.push(i, grads, priority=-i)
                if param._stype == 'default':
                    pull_into = param.list_data() if self._update_on_kvstore else grads
                    self._kvstore.pull(i, pull_into, priority=-i,
                                       ignore_sparse=self._distributed)
            elif self._update_on_kvstore:
                self._kvstore.pushpull(i, grads, out=_values(param), priority=-i)
            else:
                self._kvstore.pushpull(i, grads, priority=-i)

    def update(self, batch_size, ignore_stale_grad=False):
        """Apply the optimizer (after allreduce_grads)."""
        self._prepare()
        assert not (self._kvstore and self._update_on_kvstore), \
            'update() when parameters are updated on kvstore is not supported. Try setting ' \
            '`update_on_kvstore` to False when creating trainer.'
        self._check_and_rescale_grad(self._scale / batch_size)
        self._update(ignore_stale_grad)

    def _update(self, ignore_stale_grad=False):
        if not ignore_stale_grad and self._repeat_update():
            return
        updates = [[] for _ in self._updaters]
        for i, param in enumerate(self._params):
            if param.grad_req == 'null':
                continue
            if not ignore_stale_grad:
                for data in _values(param):
                    if not getattr(data, '_fresh_grad', False):
                        raise UserWarning(
                            'Gradient of Parameter `%s` on context %s has not been updated by '
                            'backward since last `step`. This could mean a bug in your model '
                            'that made it only use a subset of the Parameters (Blocks) for '
                            'this iteration. If you are intentionally only using a subset, '
                            'call step with ignore_stale_grad=True to suppress this warning '
                            'and skip updating of Parameters with stale gradient'
                            % (param.name, str(data.context)))
            if self._kvstore and self._update_on_kvstore:
                continue
            for upd, arr, grad in zip(updates, _values(param), param.list_grad()):
                if not ignore_stale_grad or getattr(arr, '_fresh_grad', False):
                    upd.append((i, grad, arr))
                    arr._fresh_grad = False
        if self._kvstore and self._update_on_kvstore:
            for param in self._params:
                for arr in _values(param):
                    arr._fresh_grad = False
            return
        repeat = []                      # (updater, plan, key): each device's planned update
        for k, (updater, upd) in enumerate(zip(self._updaters, updates)):
            if upd:
                idx, grads, weights = zip(*upd)
                key = (idx, tuple(map(id, weights)), tuple(map(id, grads)))
                plan = self._update_plans.get(k)
                if plan is not None and plan.planned and plan.holds(updater, key):
                    plan()                       # the same parameters as last time: planned
                    repeat.append((updater, plan, key))
                    continue
                repeat = None
                updater(list(idx), list(grads), list(weights))
                self._update_plans[k] = UpdatePlan.make(
                    updater, [[w] for w in weights], [[g] for g in grads], list(idx), 1, key)
        if repeat and not ignore_stale_grad:
            self._repeat = _RepeatUpdate(self._params, repeat)

    def _repeat_update(self):
        """The last step's planned update again, when it may be: the same Parameters with the
        same value and gradient arrays, every gradient fresh, no kvstore update, the same
        updaters, optimizer and states. False (nothing done) otherwise: _update's general path
        then decides, warns or raises."""
        repeat = getattr(self, '_repeat', None)
        if repeat is None or (self._kvstore and self._update_on_kvstore) or \
                not repeat.valid():
            return False
        for arr in repeat.arrays:
            arr._fresh = False
        for _, plan, _ in repeat.plans:
            plan()
        return True

    def save_states(self, fname):
        """Write the optimizer states (and the optimizer) to `fname`."""
        assert self._optimizer is not None
        self._prepare()
        if self._update_on_kvstore:
            assert not self._params_to_init, 'Cannot save trainer states when some ' \
                                             'parameters are not yet initialized in kvstore.'
            self._kvstore.save_optimizer_states(fname, dump_optimizer=True)
        else:
            with open(fname, 'wb') as fout:
                fout.write(self._updaters[0].get_states(dump_optimizer=True))

    def load_states(self, fname):
        """Read optimizer states (and the optimizer) written by save_states."""
        self._prepare()
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
            self._optimizer = self._kvstore._updater.optimizer
        else:
            with open(fname, 'rb') as f:
                states = f.read()
            for updater in self._updaters:
                updater.set_states(states)
                updater.optimizer = self._updaters[0].optimizer
            self._optimizer = self._updaters[0].optimizer
        self._optimizer.param_dict = {i: param for i, param in enumerate(self._params)}


class _RepeatUpdate:
    """What a Trainer's planned update reads (Trainer._repeat_update): each Parameter with
    the value and gradient lists it had, the value arrays whose gradients must be fresh, and
    each device's (updater, UpdatePlan, key)."""
    __slots__ = ('params', 'arrays', 'plans')

    def __init__(self, params, plans):
        self.params = [(p, p._data, p._grad) for p in params]
        self.arrays = [a for p in params if p.grad_req != 'null' for a in p._data]
        self.plans = plans

    def valid(self):
        for param, data, grad in self.params:
            if param._data is not data or param._grad is not grad:
                return False
        for arr in self.arrays:
            if not getattr(arr, '_fresh', False):
                return False
        for updater, plan, key in self.plans:
            if not plan.holds(updater, key):
                return False
        return True
