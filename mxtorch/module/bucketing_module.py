"""BucketingModule: one Module per bucket key (e.g. sequence length), all sharing parameters,
gradients, the optimizer and one pool of data and output memory with the default bucket."""
import logging
import warnings

from ..base import MXNetError
from ..context import cpu
from ..initializer import InitDesc, Uniform
from ..model import load_params
from ..name import NameManager
from ..ndarray import array as nd_array, load as nd_load, save as nd_save
from ..symbol import load as load_symbol
from .base_module import BaseModule, check_input_names
from .executor_group import _average_into
from .module import Module


class BucketingModule(BaseModule):
    """Modules for several bucket keys of `sym_gen(key) -> (symbol, data_names, label_names)`.

    Bind the default bucket first (it should be the largest: other buckets carve their data and
    output arrays from its memory). A parameter that only some buckets use is initialised with
    the initializer of init_params when its bucket first appears.
    """

    def __init__(self, sym_gen, default_bucket_key=None, logger=logging, context=cpu(),
                 work_load_list=None, fixed_param_names=None, state_names=None,
                 group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        assert default_bucket_key is not None, 'default_bucket_key is required'
        self._default_bucket_key = default_bucket_key
        self._sym_gen = sym_gen
        symbol, data_names, label_names = self._call_sym_gen(default_bucket_key)
        self._fixed_param_names = list(fixed_param_names or [])
        self._state_names = list(state_names or [])
        check_input_names(symbol, list(data_names or []), 'data', True)
        check_input_names(symbol, list(label_names or []), 'label', False)
        check_input_names(symbol, self._state_names, 'state', True)
        check_input_names(symbol, self._fixed_param_names, 'fixed_param', True)
        self._module_args = dict(logger=logger, context=context, work_load_list=work_load_list,
                                 fixed_param_names=self._fixed_param_names,
                                 state_names=self._state_names, group2ctxs=group2ctxs,
                                 compression_params=compression_params)
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None
        self._params_dirty = False
        self._monitor = None
        self._grad_req = None
        self._initializer = None
        self._loaded_params = None        # (arg, aux) from load/load_dict, set at bind
        self._pending = ({}, {})          # values for parameters of buckets not bound yet

    def _call_sym_gen(self, key):
        with NameManager():            # fresh names per bucket, so parameter names agree
            return self._sym_gen(key)

    def _new_module(self, key):
        symbol, data_names, label_names = self._call_sym_gen(key)
        return Module(symbol, data_names, label_names, **self._module_args)

    def _reset_bind(self):
        self.binded = False
        self._pending = ({}, {})
        self._buckets = {}
        self._curr_module = None
        self._curr_bucket_key = None

    # ---- properties -------------------------------------------------------------------------------
    @property
    def default_bucket_key(self):
        return self._default_bucket_key

    @property
    def data_names(self):
        if self.binded:
            return self._curr_module.data_names
        return self._call_sym_gen(self._default_bucket_key)[1]

    @property
    def output_names(self):
        if self.binded:
            return self._curr_module.output_names
        return self._call_sym_gen(self._default_bucket_key)[0].list_outputs()

    @property
    def data_shapes(self):
        self._require(params=False, what='data_shapes')
        return self._curr_module.data_shapes

    @property
    def label_shapes(self):
        self._require(params=False, what='label_shapes')
        return self._curr_module.label_shapes

    @property
    def output_shapes(self):
        self._require(params=False, what='output_shapes')
        return self._curr_module.output_shapes

    @property
    def symbol(self):
        self._require(params=False, what='symbol')
        return self._curr_module.symbol

    # ---- parameters --------------------------------------------------------------------------------
    # All buckets share one pair of parameter dicts and (through shared executors) one array per
    # parameter, so the current bucket's Module reads and writes nearly everything. The rest --
    # parameters that only other buckets use -- are synced here; values given for parameters of
    # buckets not bound yet wait in self._pending until their bucket appears.
    def _bucket_only_names(self, module):
        """(arg, aux) names of `module`'s executors that the current bucket does not have."""
        curr = self._curr_module._exec_group
        group = module._exec_group
        return ([n for n in group.param_names if n not in curr.param_names],
                [n for n in group.aux_names if n not in curr.aux_names])

    def _sync_other_buckets(self, arg_params, aux_params):
        """Read bucket-only parameters from their executors into the shared dicts."""
        done = set()
        for module in self._buckets.values():
            if module is self._curr_module:
                continue
            group = module._exec_group
            args, auxs = self._bucket_only_names(module)
            for names, all_names, blocks, target in (
                    (args, group.param_names, group.param_arrays, arg_params),
                    (auxs, group.aux_names, group.aux_arrays, aux_params)):
                for name, block in zip(all_names, blocks):
                    if name in names and name not in done:
                        _average_into(block, target[name])
                        done.add(name)

    def _push_to_other_buckets(self, arg_params, aux_params):
        """Copy the given values of bucket-only parameters into those buckets' executors."""
        for module in self._buckets.values():
            if module is self._curr_module:
                continue
            args, auxs = self._bucket_only_names(module)
            args = {n: arg_params[n] for n in args if arg_params and n in arg_params}
            auxs = {n: aux_params[n] for n in auxs if aux_params and n in aux_params}
            if args or auxs:
                module._exec_group.set_params(args, auxs, allow_extra=True)

    def _keep_unbound(self, arg_params, aux_params, allow_extra, caller):
        """Remember values of parameters no bound bucket has (for buckets bound later). Without
        allow_extra such a name is an error (as Module.set_params(allow_missing=True) has it;
        init_params ignores names it does not use, so it passes allow_extra=True)."""
        bound_args, bound_auxs = set(), set()
        for module in self._buckets.values():
            bound_args.update(module._exec_group.param_names)
            bound_auxs.update(module._exec_group.aux_names)
        for given, bound, pending, kind in ((arg_params, bound_args, self._pending[0], 'arg'),
                                            (aux_params, bound_auxs, self._pending[1], 'aux')):
            unknown = sorted(set(given or {}) - bound)
            if unknown and not allow_extra:
                raise MXNetError('%s: %s_params has %s, which no bound bucket (keys %s) uses; '
                                 'pass allow_extra=True to keep such values for buckets bound '
                                 'later' % (caller, kind, unknown, sorted(self._buckets)))
            pending.update((name, given[name]) for name in unknown)

    def get_params(self):
        """(arg_params, aux_params) of every bucket bound so far, plus values given for
        buckets not bound yet."""
        self._require(what='get_params')
        self._curr_module._params_dirty = self._params_dirty
        arg_params, aux_params = self._curr_module.get_params()
        self._sync_other_buckets(arg_params, aux_params)
        self._params_dirty = False
        if self._pending[0] or self._pending[1]:          # copies: the shared dicts stay as
            arg_params = dict(self._pending[0], **arg_params)          # the buckets have them
            aux_params = dict(self._pending[1], **aux_params)
        return arg_params, aux_params

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
        self._require(params=False, what='set_params')
        self._keep_unbound(arg_params, aux_params, allow_extra, 'set_params')
        curr = self._curr_module._exec_group
        self._curr_module.set_params(
            {n: v for n, v in (arg_params or {}).items() if n in curr.param_names},
            {n: v for n, v in (aux_params or {}).items() if n in curr.aux_names},
            allow_missing=True, force_init=force_init, allow_extra=False)
        self._push_to_other_buckets(arg_params, aux_params)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        assert self.binded, 'call bind before initializing the parameters'
        self._keep_unbound(arg_params, aux_params, True, 'init_params')
        # the shared dicts hold the parameters of every bound bucket: the current Module
        # initialises them all and loads its own executors; the other buckets' own parameters
        # are pushed to their executors here
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=True)
        self._push_to_other_buckets(self._curr_module._arg_params,
                                    self._curr_module._aux_params)
        self._initializer = initializer
        self._params_dirty = False
        self.params_initialized = True

    def get_states(self, merge_multi_context=True):
        self._require(what='get_states')
        return self._curr_module.get_states(merge_multi_context=merge_multi_context)

    def set_states(self, states=None, value=None):
        self._require(what='set_states')
        self._curr_module.set_states(states, value)

    # ---- binding and buckets -------------------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Bind the default bucket (the other buckets bind on first use)."""
        if self._loaded_params is not None:
            params, self._loaded_params = self._loaded_params, None
        else:
            params = self.get_params() if self.params_initialized else None
        if force_rebind:
            self._reset_bind()
        if self.binded:
            self.logger.warning('Already bound, ignoring bind()')
            return
        assert shared_module is None, 'shared_module for BucketingModule is not supported'
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._grad_req = grad_req
        module = self._new_module(self._default_bucket_key)
        module.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                    force_rebind=False, shared_module=None, grad_req=grad_req)
        self._curr_module = module
        self._curr_bucket_key = self._default_bucket_key
        self._buckets[self._default_bucket_key] = module
        self.binded = True
        if params is not None:
            self.set_params(*params, allow_extra=True)     # those of other buckets wait

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make `bucket_key` current, binding its module (sharing the default's) on first use."""
        self._require(params=False, what='switch_bucket')
        if bucket_key is None:
            raise MXNetError('BucketingModule: bucket_key must be a bucket key (e.g. a sequence '
                             'length), given None; batches need their bucket_key set, as '
                             'mx.rnn.BucketSentenceIter does')
        if bucket_key not in self._buckets:
            if data_shapes is None:
                raise MXNetError('BucketingModule: bucket %r is not bound yet, so its '
                                 'data_shapes (the batch\'s provide_data) are needed, given '
                                 'None' % (bucket_key,))
            default = self._buckets[self._default_bucket_key]
            module = self._new_module(bucket_key)
            known = set(default._arg_params or {}) | set(default._aux_params or {})
            # bind without taking the optimizer, so that parameters new in this bucket have
            # their values before borrow_optimizer hands them to the kvstore
            has_optimizer = default.optimizer_initialized
            default.optimizer_initialized = False
            try:
                module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                            self._curr_module.inputs_need_grad, force_rebind=False,
                            shared_module=default, grad_req=self._grad_req)
            finally:
                default.optimizer_initialized = has_optimizer
            self._init_new_params(module, known, bucket_key)
            if has_optimizer:
                module.borrow_optimizer(default)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def _init_new_params(self, module, known, bucket_key):
        """Set parameters that appear in this bucket only (MXNet left them unset): to values
        given earlier by set_params/init_params/load when there are some, else with the
        initializer of init_params."""
        new = [n for n in list(module._arg_params) + list(module._aux_params) if n not in known]
        if not new or not self.params_initialized:
            return
        initializer = self._initializer or Uniform(0.01)
        attrs = module.symbol.attr_dict()
        for name in new:
            table, pending = ((module._arg_params, self._pending[0])
                              if name in module._arg_params
                              else (module._aux_params, self._pending[1]))
            if name in pending:
                given = pending.pop(name)
                if tuple(given.shape) != tuple(table[name].shape):
                    raise MXNetError('BucketingModule: the value given for %r has shape %s, '
                                     'bucket %r expects %s' % (name, tuple(given.shape),
                                                              bucket_key,
                                                              tuple(table[name].shape)))
                given.copyto(table[name])
            else:
                initializer(InitDesc(name, attrs.get(name)), table[name])
        module._exec_group.set_params({n: module._arg_params[n] for n in new
                                       if n in module._arg_params},
                                      {n: module._aux_params[n] for n in new
                                       if n in module._aux_params})

    def prepare(self, data_batch, sparse_row_id_fn=None):
        self._require(params=False, what='prepare')
        original = self._curr_bucket_key
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self.switch_bucket(original, None, None)

    # ---- optimizer ------------------------------------------------------------------------------
    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        self._require(what='init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring.')
            return
        self._curr_module.init_optimizer(kvstore, optimizer, optimizer_params,
                                         force_init=force_init)
        for module in self._buckets.values():
            if module is not self._curr_module:
                module.borrow_optimizer(self._curr_module)
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        self._curr_module.save_optimizer_states(fname)

    def load_optimizer_states(self, fname):
        self._curr_module.load_optimizer_states(fname)

    # ---- computation -----------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Forward a batch in the module of its `bucket_key`."""
        self._require(what='forward')
        self.switch_bucket(data_batch.bucket_key, data_batch.provide_data,
                           data_batch.provide_label)
        self._curr_module.forward(data_batch, is_train=is_train)

    def backward(self, out_grads=None):
        self._require(what='backward')
        self._curr_module.backward(out_grads=out_grads)

    def update(self):
        self._require(optimizer=True, what='update')
        self._params_dirty = True
        self._curr_module.update()

    def get_outputs(self, merge_multi_context=True):
        self._require(what='get_outputs')
        return self._curr_module.get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        self._require(what='get_input_grads')
        return self._curr_module.get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        self._require(what='update_metric')
        self._curr_module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._require(params=False, what='install_monitor')
        self._monitor = mon
        for module in self._buckets.values():
            module.install_monitor(mon)

    # ---- checkpoints -----------------------------------------------------------------------------
    def save_checkpoint(self, prefix, epoch, remove_amp_cast=False):
        """Parameters to prefix-%04d.params, one prefix-<key>-symbol.json per bucket, the bucket
        keys to prefix.buckets."""
        assert self._buckets, 'Empty BucketingModule cannot be saved'
        for key, module in self._buckets.items():
            module.symbol.save('%s-%s-symbol.json' % (prefix, key),
                               remove_amp_cast=remove_amp_cast)
        param_name = '%s-%04d.params' % (prefix, epoch)
        self.save_params(param_name)
        logging.info('Saved checkpoint to "%s"', param_name)
        nd_save('%s.buckets' % prefix, nd_array(list(self._buckets), dtype='int32'))

    @staticmethod
    def load(prefix, epoch, sym_gen=None, default_bucket_key=None, **kwargs):
        """A BucketingModule from save_checkpoint's files (sym_gen may be None: the saved
        symbols are used)."""
        assert default_bucket_key is not None, 'default_bucket_key is required'
        keys = [int(k) for k in nd_load('%s.buckets' % prefix)[0].asnumpy()]
        sym_dict = {k: load_symbol('%s-%s-symbol.json' % (prefix, k)) for k in keys}
        arg_params, aux_params = load_params(prefix, epoch)
        return BucketingModule.load_dict(sym_dict, sym_gen, default_bucket_key, arg_params,
                                         aux_params, **kwargs)

    @staticmethod
    def load_dict(sym_dict=None, sym_gen=None, default_bucket_key=None, arg_params=None,
                  aux_params=None, **kwargs):
        """A BucketingModule from {bucket key: symbol} and parameters."""
        assert sym_dict is not None or sym_gen is not None, 'give sym_dict or sym_gen'
        data_names = kwargs.pop('data_names', ('data',))
        label_names = kwargs.pop('label_names', ('softmax_label',))

        def from_dict(key):
            if sym_gen is not None and (sym_dict is None or key not in sym_dict):
                return sym_gen(key)
            return sym_dict[key], data_names, label_names
        mod = BucketingModule(from_dict, default_bucket_key, **kwargs)
        mod._loaded_params = (arg_params or {}, aux_params or {})
        mod.params_initialized = True
        return mod
