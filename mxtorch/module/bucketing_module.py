"""BucketingModule: one Module per bucket key (e.g. sequence length), all sharing parameters,
gradients, the optimizer and one pool of data and output memory with the default bucket."""
import logging
import warnings

from ..context import cpu
from ..initializer import InitDesc, Uniform
from ..model import load_params
from ..name import NameManager
from ..ndarray import array as nd_array, load as nd_load, save as nd_save
from ..symbol import load as load_symbol
from .base_module import BaseModule, check_input_names
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

    def _call_sym_gen(self, key):
        with NameManager():            # fresh names per bucket, so parameter names agree
            return self._sym_gen(key)

    def _new_module(self, key):
        symbol, data_names, label_names = self._call_sym_gen(key)
        return Module(symbol, data_names, label_names, **self._module_args)

    def _reset_bind(self):
        self.binded = False
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
    def get_params(self):
        self._require(what='get_params')
        self._curr_module._params_dirty = self._params_dirty
        params = self._curr_module.get_params()
        self._params_dirty = False
        return params

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
        self._curr_module.set_params(arg_params, aux_params, allow_missing=True,
                                     force_init=force_init, allow_extra=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        if self.params_initialized and not force_init:
            return
        assert self.binded, 'call bind before initializing the parameters'
        self._curr_module.init_params(initializer=initializer, arg_params=arg_params,
                                      aux_params=aux_params, allow_missing=allow_missing,
                                      force_init=force_init, allow_extra=allow_extra)
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
            self.set_params(*params)

    def switch_bucket(self, bucket_key, data_shapes, label_shapes=None):
        """Make `bucket_key` current, binding its module (sharing the default's) on first use."""
        self._require(params=False, what='switch_bucket')
        if bucket_key not in self._buckets:
            default = self._buckets[self._default_bucket_key]
            module = self._new_module(bucket_key)
            known = set(default._arg_params or {}) | set(default._aux_params or {})
            module.bind(data_shapes, label_shapes, self._curr_module.for_training,
                        self._curr_module.inputs_need_grad, force_rebind=False,
                        shared_module=default, grad_req=self._grad_req)
            self._init_new_params(module, known)
            if self._monitor is not None:
                module.install_monitor(self._monitor)
            self._buckets[bucket_key] = module
        self._curr_module = self._buckets[bucket_key]
        self._curr_bucket_key = bucket_key

    def _init_new_params(self, module, known):
        """Initialise parameters that appear in this bucket only (MXNet left them unset)."""
        new = [n for n in list(module._arg_params) + list(module._aux_params) if n not in known]
        if not new or not self.params_initialized:
            return
        initializer = self._initializer or Uniform(0.01)
        attrs = module.symbol.attr_dict()
        for name in new:
            table = module._arg_params if name in module._arg_params else module._aux_params
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
