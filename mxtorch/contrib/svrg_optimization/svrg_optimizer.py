"""The optimizers behind SVRGModule.

_SVRGOptimizer routes each parameter either to the user's optimizer or, for the keys that
accumulate full-data gradients (names containing "full"), to _AssignmentOptimizer, which
stores the pushed value as it is. Both are registered, so a KVStore can hold them.
"""
from ... import optimizer as opt

# the constructor arguments of the base Optimizer: these configure the wrapper itself, while
# every argument is passed on to the optimizer it wraps
_BASE_ARGS = ('rescale_grad', 'param_idx2name', 'wd', 'clip_gradient', 'learning_rate',
              'lr_scheduler', 'sym', 'begin_num_update', 'multi_precision', 'param_dict')


@opt.register
class _AssignmentOptimizer(opt.Optimizer):
    """Sets the weight to the gradient: a KVStore key updated by it holds the (summed) value
    last pushed. For SVRGModule's full-gradient keys only."""

    def update(self, index, weight, grad, state):
        weight[:] = grad


@opt.register
class _SVRGOptimizer(opt.Optimizer):
    """Wraps `default_optimizer` (a name or an Optimizer) for the model's parameters and an
    _AssignmentOptimizer (`aux_opt`) for the parameters whose name contains "full". For
    SVRGModule only.
    """

    def __init__(self, default_optimizer, **kwargs):
        super().__init__(**self._check_params(**kwargs))
        if isinstance(default_optimizer, str):
            self.default_opt = opt.create(default_optimizer, **kwargs)
        else:
            self.default_opt = default_optimizer
        self.aux_opt = opt.create(_AssignmentOptimizer.__name__)

    @staticmethod
    def _check_params(**kwargs):
        """The arguments among kwargs that the base Optimizer takes."""
        return {k: v for k, v in kwargs.items() if k in _BASE_ARGS}

    def _check_index(self, index):
        """The parameter name of `index`: an index of idx2name, or already a name in it."""
        if index in self.idx2name.values():
            return index
        if index not in self.idx2name:
            raise KeyError('_SVRGOptimizer: parameter index %r is not in param_idx2name %s'
                           % (index, self.idx2name))
        return self.idx2name[index]

    def _target(self, index):
        return self.aux_opt if 'full' in self._check_index(index) else self.default_opt

    def create_state(self, index, weight):
        return self._target(index).create_state(index, weight)

    def update(self, index, weight, grad, state):
        self._target(index).update(index, weight, grad, state)
