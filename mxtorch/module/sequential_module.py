"""SequentialModule: modules chained so that each one's outputs are the next one's data."""
import copy
import logging

from ..initializer import Uniform
from .base_module import BaseModule


class SequentialModule(BaseModule):
    """A chain of modules. forward feeds module i's outputs to module i+1 as data; backward
    feeds module i+1's input gradients to module i as output gradients.

    Meta options given to add():
      take_labels: the module receives the batch's labels (and updates the metric);
      auto_wiring: the previous outputs are renamed to this module's data_names.
    """
    META_TAKE_LABELS = 'take_labels'
    META_AUTO_WIRING = 'auto_wiring'
    _META_KEYS = (META_TAKE_LABELS, META_AUTO_WIRING)

    def __init__(self, logger=logging):
        super().__init__(logger=logger)
        self._modules = []
        self._metas = []
        self._label_shapes = None

    def add(self, module, **kwargs):
        """Append a module (with meta options, see the class doc); returns self for chaining.
        The chain has to be bound and initialised again afterwards."""
        for key in kwargs:
            assert key in self._META_KEYS, \
                'Unknown meta "%s", a typo? (known: %s)' % (key, ', '.join(self._META_KEYS))
        self._modules.append(module)
        self._metas.append(kwargs)
        self.binded = False
        self.params_initialized = False
        self.optimizer_initialized = False
        return self

    def _takes_labels(self, i):
        return bool(self._metas[i].get(self.META_TAKE_LABELS, False))

    # ---- properties ----------------------------------------------------------------------------
    @property
    def data_names(self):
        return self._modules[0].data_names if self._modules else []

    @property
    def output_names(self):
        return self._modules[-1].output_names if self._modules else []

    @property
    def data_shapes(self):
        self._require(params=False, what='data_shapes')
        return self._modules[0].data_shapes

    @property
    def label_shapes(self):
        """The label shapes given to bind, or None when no module takes labels."""
        self._require(params=False, what='label_shapes')
        return self._label_shapes

    @property
    def output_shapes(self):
        self._require(params=False, what='output_shapes')
        return self._modules[-1].output_shapes

    # ---- binding and parameters -----------------------------------------------------------------
    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Bind every module: module i+1's data shapes are module i's output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return
        if inputs_need_grad:
            assert for_training, 'inputs_need_grad needs for_training=True'
        assert shared_module is None, 'shared_module is not supported by SequentialModule'
        assert self._modules, 'Attempting to bind an empty SequentialModule'
        shapes = data_shapes
        any_labels = False
        for i, module in enumerate(self._modules):
            my_labels = label_shapes if self._takes_labels(i) else None
            any_labels = any_labels or self._takes_labels(i)
            if self._metas[i].get(self.META_AUTO_WIRING, False):
                names = module.data_names
                assert len(names) == len(shapes), \
                    ('auto_wiring: module %d takes %d inputs (%s) but receives %d (%s)'
                     % (i, len(names), names, len(shapes), [s[0] for s in shapes]))
                shapes = [(name, desc[1]) for name, desc in zip(names, shapes)]
            module.bind(data_shapes=shapes, label_shapes=my_labels, for_training=for_training,
                        inputs_need_grad=bool(inputs_need_grad or (for_training and i > 0)),
                        force_rebind=force_rebind, shared_module=None, grad_req=grad_req)
            shapes = module.output_shapes
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._label_shapes = label_shapes if any_labels else None
        self.binded = True

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Initialise every module with the same arguments; parameter names must be unique
        across the chain."""
        if self.params_initialized and not force_init:
            return
        assert self.binded, 'call bind before initializing the parameters'
        for module in self._modules:
            module.init_params(initializer=initializer, arg_params=arg_params,
                               aux_params=aux_params, allow_missing=allow_missing,
                               force_init=force_init, allow_extra=allow_extra)
        owners = ({}, {})
        for i, module in enumerate(self._modules):
            for known, params in zip(owners, module.get_params()):
                for name in params:
                    assert name not in known, \
                        ('Duplicated parameter names: name "%s" in layer %d (%s) is already '
                         'used in layer %d (%s).' % (name, i, type(module).__name__, known[name],
                                                     type(self._modules[known[name]]).__name__))
                    known[name] = i
        self.params_initialized = True

    def get_params(self):
        """(arg_params, aux_params): the modules' parameters merged into two dicts."""
        self._require(what='get_params')
        arg_params, aux_params = {}, {}
        for module in self._modules:
            arg, aux = module.get_params()
            arg_params.update(arg)
            aux_params.update(aux)
        return arg_params, aux_params

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Install the optimizer in every module."""
        self._require(what='init_optimizer')
        if self.optimizer_initialized and not force_init:
            self.logger.warning('optimizer already initialized, ignoring.')
            return
        for module in self._modules:
            module.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                                  optimizer_params=optimizer_params, force_init=force_init)
        self.optimizer_initialized = True

    # ---- computation --------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Run the modules in order, each on the previous one's outputs."""
        self._require(what='forward')
        data_batch = copy.copy(data_batch)
        for i, module in enumerate(self._modules):
            module.forward(data_batch, is_train=is_train)
            if i + 1 == len(self._modules):
                break
            data_batch.data = module.get_outputs()
            if self._metas[i + 1].get(self.META_AUTO_WIRING, False):
                names = self._modules[i + 1].data_names
            else:
                names = [name for name, _ in module.output_shapes]
            assert len(names) == len(data_batch.data), \
                ('module %d produced %d outputs for %d names (%s)'
                 % (i, len(data_batch.data), len(names), names))
            data_batch.provide_data = [(name, out.shape)
                                       for name, out in zip(names, data_batch.data)]

    def backward(self, out_grads=None):
        """Run the modules' backward from last to first, passing input gradients down."""
        self._require(what='backward')
        for i in reversed(range(len(self._modules))):
            self._modules[i].backward(out_grads=out_grads)
            if i > 0:
                out_grads = self._modules[i].get_input_grads()

    def update(self):
        self._require(optimizer=True, what='update')
        for module in self._modules:
            module.update()

    def get_outputs(self, merge_multi_context=True):
        """The last module's outputs."""
        self._require(what='get_outputs')
        return self._modules[-1].get_outputs(merge_multi_context=merge_multi_context)

    def get_input_grads(self, merge_multi_context=True):
        """The first module's input gradients (bind with inputs_need_grad=True)."""
        self._require(what='get_input_grads')
        assert self.inputs_need_grad, 'bind with inputs_need_grad=True to get input gradients'
        return self._modules[0].get_input_grads(merge_multi_context=merge_multi_context)

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update the metric from every module added with take_labels=True."""
        self._require(what='update_metric')
        for i, module in enumerate(self._modules):
            if self._takes_labels(i):
                module.update_metric(eval_metric, labels, pre_sliced)

    def install_monitor(self, mon):
        self._require(params=False, what='install_monitor')
        for module in self._modules:
            module.install_monitor(mon)
