"""SVRGModule: a Module trained with SVRG (see the package's docstring)."""
import logging

from ... import ndarray as nd
from ...context import cpu
from ...model import _create_kvstore
from ...module import Module
from ...optimizer import create as create_optimizer
from .svrg_optimizer import _SVRGOptimizer


class SVRGModule(Module):
    """A Module whose updates use SVRG gradients; otherwise as Module.

    `update_freq` (a positive int): the full-data gradient is recomputed, at the current
    weights, every update_freq epochs of `fit` (or by calling update_full_grads). A second,
    auxiliary Module (`_mod_aux`) holds the snapshot weights and computes their gradients on
    each batch.
    """

    def __init__(self, symbol, data_names=('data',), label_names=('softmax_label',),
                 logger=logging, context=cpu(), work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None, update_freq=None):
        super().__init__(symbol, data_names=data_names, label_names=label_names, logger=logger,
                         context=context, work_load_list=work_load_list,
                         fixed_param_names=fixed_param_names, state_names=state_names,
                         group2ctxs=group2ctxs, compression_params=compression_params)
        if not isinstance(update_freq, int) or isinstance(update_freq, bool):
            raise TypeError('update_freq in SVRGModule must be an integer to represent the '
                            'frequency for calculating full gradients, got %r' % (update_freq,))
        if update_freq <= 0:
            raise ValueError('update_freq in SVRGModule must be a positive integer to represent '
                             'the frequency for calculating full gradients, got %d' % update_freq)
        self.update_freq = update_freq
        self._mod_aux = Module(symbol, data_names, label_names, logger, context, work_load_list,
                               fixed_param_names, state_names, group2ctxs, compression_params)
        self._param_dict = None      # per device: parameter name -> mean full-data gradient
        self._ctx_len = len(self._context)

    # ---- binding: both modules -------------------------------------------------------------------
    def _reset_bind(self):
        super()._reset_bind()
        self._mod_aux._reset_bind()

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        super().bind(data_shapes, label_shapes, for_training, inputs_need_grad, force_rebind,
                     shared_module, grad_req)
        if for_training:
            self._mod_aux.bind(data_shapes, label_shapes, for_training, inputs_need_grad,
                               force_rebind, shared_module, grad_req)

    def reshape(self, data_shapes, label_shapes=None):
        super().reshape(data_shapes, label_shapes=label_shapes)
        self._mod_aux.reshape(data_shapes, label_shapes=label_shapes)

    def prepare(self, data_batch, sparse_row_id_fn=None):
        super().prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)
        self._mod_aux.prepare(data_batch, sparse_row_id_fn=sparse_row_id_fn)

    # ---- optimizer -------------------------------------------------------------------------------
    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install an _SVRGOptimizer wrapping `optimizer`. With a KVStore, a key
        '<param>_full' per parameter accumulates the full-data gradients."""
        arg_params = self.get_params()[0]
        self._param_dict = [{name: nd.zeros(value.shape, ctx=ctx)
                             for name, value in arg_params.items()} for ctx in self._context]
        wrapper = self._create_optimizer(_SVRGOptimizer.__name__, default_opt=optimizer,
                                         kvstore=kvstore, optimizer_params=optimizer_params)
        super().init_optimizer(kvstore=kvstore, optimizer=wrapper,
                               optimizer_params=optimizer_params, force_init=force_init)
        if self._kvstore:
            group = self._exec_group
            for idx, (name, on_devices) in enumerate(zip(group.param_names, group.param_arrays)):
                self._kvstore.init(name + '_full', nd.zeros(self._arg_params[name].shape))
                if self._update_on_kvstore:
                    self._kvstore.pull(name + '_full', on_devices, priority=-idx)

    def _create_optimizer(self, optimizer, default_opt, kvstore, optimizer_params):
        """The `optimizer` (_SVRGOptimizer's name) wrapping default_opt, with the parameter
        indices Module would use plus one index per '<param>_full' key."""
        batch_size = self._exec_group.batch_size
        kv, update_on_kvstore = _create_kvstore(kvstore, self._ctx_len, self._arg_params)
        if kv and 'dist' in kv.type and '_sync' in kv.type:
            batch_size *= kv.num_workers
        names = self._exec_group.param_names
        if update_on_kvstore:
            idx2name = dict(enumerate(names))
        else:
            idx2name = {i * self._ctx_len + k: n for i, n in enumerate(names)
                        for k in range(self._ctx_len)}
        for name in self._param_dict[0]:
            idx2name[max(idx2name, default=-1) + 1] = name + '_full'
        params = dict(optimizer_params)
        params.setdefault('rescale_grad', 1.0 / batch_size)
        params['default_optimizer'] = default_opt
        params['param_idx2name'] = idx2name
        return create_optimizer(optimizer, **params)

    # ---- computation -----------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Forward both modules; the auxiliary one (snapshot weights) only when training
        (is_train None means the module's for_training, as for Module)."""
        super().forward(data_batch, is_train)
        self._aux_forwarded = self.for_training if is_train is None else bool(is_train)
        if self._aux_forwarded:
            self._mod_aux.forward(data_batch, is_train=True)

    def backward(self, out_grads=None):
        super().backward(out_grads)
        if self._mod_aux.binded and getattr(self, '_aux_forwarded', False):
            self._mod_aux.backward(out_grads)

    def update(self):
        """Turn this batch's gradients into SVRG gradients, then update as Module does."""
        self._update_svrg_gradients()
        super().update()

    def update_full_grads(self, train_data):
        """Snapshot the current weights into the auxiliary module and average their gradients
        over all of train_data (padding excluded); with a KVStore, also across devices and
        workers."""
        names = self._exec_group.param_names
        arg_params, aux_params = self.get_params()
        self._mod_aux.set_params(arg_params=arg_params, aux_params=aux_params)
        train_data.reset()
        nbatch, padding = 0, 0
        for batch in train_data:
            self._mod_aux.forward(batch, is_train=True)
            self._mod_aux.backward()
            nbatch += 1
            for dev in range(self._ctx_len):
                for index, name in enumerate(names):
                    grad = self._mod_aux._exec_group.grad_arrays[index][dev]
                    self._param_dict[dev][name] = self._param_dict[dev][name] + grad
            padding = batch.pad
        batches = nbatch - padding / train_data.batch_size
        for name in names:
            per_device = []
            for dev in range(self._ctx_len):
                self._param_dict[dev][name] /= batches
                per_device.append(self._param_dict[dev][name])
            if self._kvstore:
                self._accumulate_kvstore(name, per_device)

    def _accumulate_kvstore(self, key, value):
        """Sum the per-device full gradients `value` of parameter `key` in the KVStore (over
        workers too), pull the sum back into `value` and share it out to the devices."""
        self._kvstore.push(key + '_full', value)
        self._kvstore._barrier()
        self._kvstore.pull(key + '_full', value)
        self._allocate_gradients(key, value)

    def _allocate_gradients(self, key, value):
        """Each device's full gradient of `key`: the summed value over the number of devices."""
        for dev in range(self._ctx_len):
            self._param_dict[dev][key] = value[dev] / self._ctx_len

    def _svrg_grads_update_rule(self, g_curr_batch_curr_weight, g_curr_batch_special_weight,
                                g_special_weight_all_batch):
        """g - g_snapshot + full_g_snapshot, in place into g (arrays, or lists of arrays)."""
        triples = [(g_curr_batch_curr_weight, g_curr_batch_special_weight,
                    g_special_weight_all_batch)]
        if isinstance(g_curr_batch_curr_weight, (list, tuple)):
            triples = zip(*triples[0])
        for grad, snapshot, full in triples:
            grad -= snapshot
            grad += full
        return g_curr_batch_curr_weight

    def _update_svrg_gradients(self):
        names = self._exec_group.param_names
        for dev in range(self._ctx_len):
            for index, name in enumerate(names):
                grad = self._exec_group.grad_arrays[index][dev]
                if grad is None:
                    continue
                snapshot = self._mod_aux._exec_group.grad_arrays[index][dev]
                self._svrg_grads_update_rule(grad, snapshot, self._param_dict[dev][name])

    # ---- training --------------------------------------------------------------------------------
    def _begin_epoch(self, epoch, train_data):
        """fit's hook: recompute the full-data gradients every update_freq epochs."""
        if epoch % self.update_freq == 0:
            self.update_full_grads(train_data)
        train_data.reset()
