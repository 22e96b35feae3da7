"""Optimizers and the Updater (`mx.optimizer`): MXNet 1.9.1's update rules on torch tensors.

* `update(index, weight, grad, state)` changes `weight` and the state arrays in place: the tensor
  behind each NDArray handle is mutated, never rebound, because executors and kvstores hold the
  same handles.
* Hyper-parameters, counters and multipliers carry MXNet's attribute names, so an optimizer
  pickled by one library reads back in the other (`Updater.get_states(dump_optimizer=True)`).
* The math of every built-in rule lives once in `mxtorch.ops.optimizer_rules` (pure torch
  functions over lists of tensors, shared with the `*_update` operators). A class states only
  its bookkeeping, in `_rule(indices, weights, grads, states, lrs, wds)`. The Updater hands a
  class up to `aggregate_num` same-dtype weights per call; the result equals updating the
  weights one at a time.
* Hook for a fused training step: `opt._has_rule()` says whether the optimizer has such a
  built-in rule (False for a custom Python optimizer that overrides update()). If so,
  `opt._rule_call(indices, weights, grads, states)` counts one update of each index, works out
  the per-parameter lr and wd (scheduler, multipliers) as `update` does, and runs the rule in
  place on torch tensors: `weights` and `grads` lists of tensors, `states` one entry per index
  shaped as `create_state` returns it (None, a tensor, or a tuple of tensors/None) but holding
  the tensors behind the NDArrays. Under multi_precision pass the float32 master weights (the
  first or, for SGD/NAG/LARS (`_master_last`), the last element of the state pair) with
  float32 gradients and the inner state, then copy the masters into the float16 weights.
"""
import math
import os
import warnings

import numpy as np
import torch

from ..base import MXNetError
from ..ndarray.ndarray import NDArray, from_torch, zeros
from ..ndarray import abs as NDabs  # noqa: F401  (MXNet's name for mx.nd.abs here)
from ..ops import optimizer_rules as rules
from . import serialization

__all__ = ['Optimizer', 'register', 'create', 'SGD', 'ccSGD', 'LBSGD', 'NAG', 'Signum', 'FTML',
           'LARS', 'LAMB', 'DCASGD', 'SGLD', 'Adam', 'AdaGrad', 'RMSProp', 'AdaDelta', 'Ftrl', 'Adamax',
           'Nadam', 'Test', 'Updater', 'get_updater', 'NDabs']


def _aggregation_size(default):
    """How many weights one aggregated update takes (env MXNET_OPTIMIZER_AGGREGATION_SIZE)."""
    raw = os.environ.get('MXNET_OPTIMIZER_AGGREGATION_SIZE', str(default))
    try:
        return int(raw)
    except ValueError:
        raise ValueError('MXNET_OPTIMIZER_AGGREGATION_SIZE must be an integer, got %r'
                         % raw) from None


# Aggregated updates are numerically identical to one-by-one ones; by default one call takes a
# whole model (MXNet's default, MXNET_OPTIMIZER_AGGREGATION_SIZE=4, is honoured when set).
_WHOLE_MODEL = 1 << 16


def _zeros_like(weight):
    """A state array: zeros of the weight's shape, context and dtype."""
    return zeros(weight.shape, weight.context, dtype=weight.dtype)


def _map_state(fn, state):
    """`state` (None, an NDArray or nested tuples/lists of them) with fn applied to each array."""
    if isinstance(state, NDArray):
        return fn(state)
    if isinstance(state, (tuple, list)):
        return type(state)(_map_state(fn, s) for s in state)
    return state


def _tensor_of(array):
    return array._tensor


def _tensors(arrays):
    return [a._tensor for a in arrays]


class Optimizer:
    """Base class: learning-rate and weight-decay bookkeeping, update counters, state creation,
    multi-precision and the registry behind `mx.optimizer.create`.

    A custom optimizer overrides `create_state(index, weight)` and
    `update(index, weight, grad, state)`, and registers itself with `@mx.optimizer.register`.
    """
    opt_registry = {}
    # multi-precision state layout: (fp32 master, state), or (state, fp32 master) when True
    _master_last = False

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if learning_rate is None and lr_scheduler is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None \
                and lr_scheduler.base_lr != learning_rate:
            print(UserWarning('learning rate from ``lr_scheduler`` has been overwritten by '
                              '``learning_rate`` in optimizer.'))
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult = {}
        self.wd_mult = {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError('param_idx2name should be a dict of param indexes to names, got %s'
                            % type(param_idx2name).__name__)
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.allow_np_array = False
        self.set_lr_mult({})
        self.set_wd_mult({})

    # ---- registry ------------------------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Class decorator: make `klass` creatable by its lowercased class name."""
        if not isinstance(klass, type):
            raise TypeError('register expects an optimizer class, got %r' % (klass,))
        name = klass.__name__.lower()
        old = Optimizer.opt_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn('WARNING: New optimizer %s.%s is overriding existing optimizer %s.%s'
                          % (klass.__module__, klass.__name__, old.__module__, old.__name__),
                          stacklevel=2)
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """Instantiate the optimizer registered under `name` (case-insensitive)."""
        if not isinstance(name, str):
            raise TypeError('optimizer name must be a str, got %s' % type(name).__name__)
        klass = Optimizer.opt_registry.get(name.lower())
        if klass is None:
            raise ValueError('Cannot find optimizer %s (registered: %s)'
                             % (name, ', '.join(sorted(Optimizer.opt_registry))))
        return klass(**kwargs)

    # ---- learning rate -------------------------------------------------------------------------
    @property
    def learning_rate(self):
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        if self.lr_scheduler is not None:
            raise UserWarning('LRScheduler of the optimizer has already been defined. Note that '
                              'set_learning_rate can mutate the value of the learning rate of the '
                              'optimizer only when the LRScheduler of the optimizer is undefined.')
        self.lr = lr

    def _sym_mults(self, key):
        """{argument name: float} for the arguments of `sym` carrying attribute `key`."""
        if not self.sym_info:
            return {}
        attrs, arg_names = self.sym_info
        return {name: float(attrs[name][key]) for name in arg_names
                if key in attrs.get(name, {})}

    def set_lr_mult(self, args_lr_mult):
        """lr multipliers by index or name: the symbol's `__lr_mult__` attrs, then
        `args_lr_mult`."""
        self.lr_mult = self._sym_mults('__lr_mult__')
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """wd multipliers: 0 for every named parameter not ending in `_weight` or `_gamma`, then
        the symbol's `__wd_mult__` attrs, then `args_wd_mult`."""
        self.wd_mult = {name: 0.0 for name in self.idx2name.values()
                        if not (name.endswith('_weight') or name.endswith('_gamma'))}
        self.wd_mult.update(self._sym_mults('__wd_mult__'))
        self.wd_mult.update(args_wd_mult)

    # ---- counters and per-parameter lr / wd ----------------------------------------------------
    def _set_current_context(self, device_id):
        """Switch to the update counters of device `device_id` (one counter dict per device)."""
        self._index_update_count = self._all_index_update_counts.setdefault(device_id, {})

    def _update_count(self, index):
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _scaled(self, indices, base, mults, attr):
        values = []
        for index in indices:
            if index in self.param_dict:
                values.append(base * getattr(self.param_dict[index], attr))
            elif index in mults:
                values.append(base * mults[index])
            elif index in self.idx2name:
                values.append(base * mults.get(self.idx2name[index], 1.0))
            else:
                values.append(base)
        return values

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return self._scaled(indices, lr, self.lr_mult, 'lr_mult')

    def _get_wds(self, indices):
        return self._scaled(indices, self.wd, self.wd_mult, 'wd_mult')

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    # ---- states --------------------------------------------------------------------------------
    def create_state(self, index, weight):
        """The optimizer state of one weight (None, an NDArray or a tuple of them)."""
        return None

    def _uses_master(self, weight):
        return bool(self.multi_precision) and weight.dtype == np.float16

    def create_state_multi_precision(self, index, weight):
        """Like create_state, plus an fp32 master copy for fp16 weights under multi_precision."""
        if self._uses_master(weight):
            master = weight.astype(np.float32)
            state = self.create_state(index, master)
            return (state, master) if self._master_last else (master, state)
        if weight.dtype == np.float16:
            warnings.warn('Accumulating with float16 in optimizer can lead to poor accuracy or '
                          'slow convergence. Consider using multi_precision=True option of the '
                          '%s optimizer' % type(self).__name__)
        return self.create_state(index, weight)

    # ---- updates -------------------------------------------------------------------------------
    def update(self, index, weight, grad, state):
        """Update `weight` (and `state`) in place from `grad`. Custom optimizers override this."""
        if not self._lazy_dispatch(index, weight, grad, state):
            self._step([index], [weight], [grad], [state])

    def _step(self, indices, weights, grads, states):
        """The rule over lists of NDArrays: `_rule_call` on their tensors."""
        self._rule_call(indices, _tensors(weights), _tensors(grads),
                        [_map_state(_tensor_of, s) for s in states])

    def _has_rule(self):
        """Whether this optimizer updates by a built-in rule reachable through `_rule_call`:
        False for one that overrides update() (a custom Python optimizer, LBSGD, Test)."""
        cls = type(self)
        return cls._rule is not Optimizer._rule and cls.update is Optimizer.update

    def _rule_call(self, indices, weights, grads, states):
        """Count one update of each index, work out their lrs and wds, and run the rule on
        torch tensors (see the module docstring)."""
        if type(self)._rule is Optimizer._rule:     # (a subclass's update may call super's)
            raise NotImplementedError('optimizer %s has no built-in rule: override '
                                      'update(index, weight, grad, state)' % type(self).__name__)
        self._update_count(indices)
        self._rule(indices, weights, grads, states, self._get_lrs(indices),
                   self._get_wds(indices))

    def _rule(self, indices, weights, grads, states, lrs, wds):
        """The built-in rule on tensors (optimizer_rules); the built-in classes override it."""
        raise NotImplementedError('optimizer %s defines no update rule: override '
                                  'update(index, weight, grad, state)' % type(self).__name__)

    def update_multi_precision(self, index, weight, grad, state):
        """Update one weight, or lists of same-dtype weights (all four arguments lists).

        With multi_precision, an fp16 weight is updated through its fp32 master copy, and
        then becomes the master's cast.
        """
        if isinstance(index, (list, tuple)):
            indices, weights, grads, states = list(index), list(weight), list(grad), list(state)
        else:
            indices, weights, grads, states = [index], [weight], [grad], [state]
        if not weights:
            return
        if not self._uses_master(weights[0]):
            self._apply(indices, weights, grads, states)
            return
        masters, inner = [], []
        for idx, pair in zip(indices, states):
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise ValueError('multi_precision state of parameter %r must be a pair holding '
                                 'the fp32 master weight, got %r' % (idx, pair))
            master, rest = (pair[1], pair[0]) if self._master_last else pair
            masters.append(master)
            inner.append(rest)
        self._apply(indices, masters, [g.astype(np.float32) for g in grads], inner)
        with torch.no_grad():
            for weight16, master in zip(weights, masters):
                weight16._tensor.copy_(master._tensor)

    def _lazy_rows(self, index, weight, grad):
        """Whether this rule updates lazily for a row_sparse `grad`: only the gradient's stored
        rows of the weight and of its state change (MXNet's sparse kernels). Rules that do
        override this."""
        return False

    def _apply(self, indices, weights, grads, states):
        lazy = [i for i, (idx, w, g) in enumerate(zip(indices, weights, grads))
                if g.stype == 'row_sparse' and self._lazy_rows(idx, w, g)]
        for i in lazy:
            self._apply_rows(indices[i], weights[i], grads[i], states[i])
        if lazy:
            rest = [i for i in range(len(weights)) if i not in lazy]
            indices, weights, grads, states = ([seq[i] for i in rest]
                                               for seq in (indices, weights, grads, states))
        if weights:
            self._run(indices, weights, grads, states)

    def _lazy_dispatch(self, index, weight, grad, state):
        """Run the lazy row update when it applies (see `_lazy_rows`); whether it did."""
        if grad.stype != 'row_sparse' or not self._lazy_rows(index, weight, grad):
            return False
        self._apply_rows(index, weight, grad, state)
        return True

    def _apply_rows(self, index, weight, grad, state):
        """The rule on the stored rows of a row_sparse gradient only: those rows of the weight
        and state are gathered, updated, and written back."""
        rows = grad._get_parts()[1].to(device=weight._tensor.device, dtype=torch.long)

        def gather(arr):
            return from_torch(arr._tensor[rows], arr.context)

        sub_weight, sub_state = gather(weight), _map_state(gather, state)
        # the gradient's stored rows, in the order of its indices (its dense form unbuilt)
        sub_grad = from_torch(grad._get_parts()[0].to(weight._tensor.device), grad.context)
        self._run([index], [sub_weight], [sub_grad], [sub_state])
        originals, updated = [], []
        _map_state(originals.append, state)
        _map_state(updated.append, sub_state)
        with torch.no_grad():
            for arr, sub in zip([weight] + originals, [sub_weight] + updated):
                arr._tensor[rows] = sub._tensor

    # MXNet 1.9.1's SGD, NAG, LAMB and LARS run their own rule in update_multi_precision (the
    # path of Updater and the kvstores): there, a subclass's update() override is not called
    _rule_bypasses_update = False

    def _run(self, indices, weights, grads, states):
        # a class that overrides update() gets one call per weight; built-in list rules run once
        if type(self).update is Optimizer.update or self._rule_bypasses_update:
            self._step(indices, weights, grads, states)
        else:
            for args in zip(indices, weights, grads, states):
                self.update(*args)

    # ---- shared pieces of the rules ------------------------------------------------------------
    def _clip_bound(self):
        clip = self.clip_gradient
        return float(clip) if clip and clip > 0 else None

    # ---- pickling ------------------------------------------------------------------------------
    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop('param_dict', None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.param_dict = {}


register = Optimizer.register
create = Optimizer.create_optimizer


@register
class SGD(Optimizer):
    """SGD with optional momentum (the buffer holds lr-scaled, sign-negative steps):

        m = momentum * m - lr * (clip(rescale_grad * grad) + wd * weight);  weight += m

    momentum=0 keeps no state. With lazy_update (the default) a row_sparse gradient changes only
    its stored rows of the weight and momentum; otherwise it counts as dense.
    """
    _rule_bypasses_update = True
    _master_last = True

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(_WHOLE_MODEL)

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _zeros_like(weight)

    def _lazy_rows(self, index, weight, grad):
        return self.lazy_update


    def _rule(self, indices, weights, grads, states, lrs, wds):
        rules.sgd(weights, grads, states, lrs, wds, float(self.momentum),
                  float(self.rescale_grad), self._clip_bound())


@register
class ccSGD(SGD):
    """Alias of SGD kept for old scripts."""


@register
class LBSGD(Optimizer):
    """Large-batch SGD: SGD (with momentum) on gradients accumulated over `batch_scale`
    updates, with a warm-up multiplier on the learning rate. As MXNet 1.9.1's LBSGD:

    * each update adds `grad` to a running sum per index (the very first update keeps `grad`
      itself, not a copy) and counts it, the count starting from
      begin_epoch * updates_per_epoch;
    * when that count is a multiple of `batch_scale`, SGD runs on sum / batch_scale with
      lr * mult: for warmup_strategy 'lars', mult = sqrt(|w|^2 / (|g|^2 + wd |w|^2 + 1e-18))
      clipped to [0.01, 100]; otherwise mult grows from 1 to batch_scale over
      warmup_epochs * updates_per_epoch counts ('linear', 'power2' or 'sqrt'; any other name
      keeps 1) and is batch_scale afterwards; then the sum restarts from 0 (the count goes on);
    * other updates only accumulate.
    """

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy='linear',
                 warmup_epochs=5, batch_scale=1, updates_per_epoch=32, begin_epoch=0,
                 num_epochs=60, **kwargs):
        super().__init__(multi_precision=multi_precision, **kwargs)
        self.momentum = momentum
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        momentum = None
        if self.multi_precision and weight.dtype == np.float16:
            if self.momentum != 0.0:
                momentum = zeros(weight.shape, weight.context, dtype=np.float32)
            return momentum, weight.astype(np.float32)
        if weight.dtype == np.float16 and not self.multi_precision:
            warnings.warn('Accumulating with float16 in optimizer can lead to poor accuracy or '
                          'slow convergence. Consider using multi_precision=True option of the '
                          'SGD optimizer')
        if self.momentum != 0.0:
            momentum = _zeros_like(weight)
        return momentum

    def _get_lbmult(self, nup):
        """The warm-up multiplier of the learning rate after `nup` accumulated updates."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        ramp = {'linear': nup / nwup, 'power2': (nup * nup) / (nwup * nwup),
                'sqrt': math.sqrt(float(nup) / nwup)}.get(self.warmup_strategy)
        return 1.0 if ramp is None else 1.0 + (maxmult - 1) * ramp

    def _get_lars(self, weight, g, wd):
        """The layer-wise (LARS) multiplier of the learning rate."""
        weight2, grad2 = self._l2norm(weight), self._l2norm(g)
        lars = math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18))
        return min(max(lars, 0.01), 100)

    @staticmethod
    def _l2norm(v):
        """The squared L2 norm (float32 sum)."""
        return (v * v).asnumpy().sum()

    def _reset_cum_gradient(self, index):
        self.cumgrads[index]['cum_grad'] = 0

    def _get_cum_gradient(self, index):
        return self.cumgrads.get(index, {})

    def _put_cum_gradient(self, index, cgrad):
        self.cumgrads[index] = cgrad

    def _cumulate_gradient(self, grad, index):
        cgrad = self._get_cum_gradient(index)
        if cgrad and cgrad['num_cums'] > 0:
            cgrad = {'cum_grad': cgrad['cum_grad'] + grad, 'num_cums': cgrad['num_cums'] + 1}
        else:
            cgrad = {'cum_grad': grad, 'num_cums': self.init_updates + 1}
        self._put_cum_gradient(index, cgrad)
        return cgrad

    def update(self, index, weight, grad, state):
        if not isinstance(weight, NDArray) or not isinstance(grad, NDArray):
            raise TypeError('LBSGD.update: weight and grad must be NDArrays')
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad['num_cums'] % self.batch_scale != 0:
            return
        grad = cgrad['cum_grad'] / self.batch_scale
        if self.warmup_strategy == 'lars':
            lr *= self._get_lars(weight, grad, wd)
        else:
            lr *= self._get_lbmult(cgrad['num_cums'])
        rule = (float(self.momentum), float(self.rescale_grad), self._clip_bound())
        if not isinstance(state, (list, tuple)):
            rules.sgd([weight._tensor], [grad._tensor], [_map_state(_tensor_of, state)], [lr],
                      [wd], *rule)
        else:
            momentum, master = state            # an fp16 weight through its fp32 master copy
            rules.sgd([master._tensor], [grad.astype(np.float32)._tensor],
                      [_map_state(_tensor_of, momentum)], [lr], [wd], *rule)
            with torch.no_grad():
                weight._tensor.copy_(master._tensor)
        self._reset_cum_gradient(index)


@register
class NAG(Optimizer):
    """Nesterov accelerated SGD. With G = clip(rescale_grad * grad) and m the momentum buffer:

        m = momentum * m
        weight = weight - m + (momentum + 1) * (m - lr * (G + wd * weight))
        m = m - lr * (G + wd * weight)        (weight here is the already updated one)

    momentum=0 is plain SGD.
    """
    _rule_bypasses_update = True
    _master_last = True

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.aggregate_num = _aggregation_size(4)

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _zeros_like(weight)


    def _rule(self, indices, weights, grads, states, lrs, wds):
        rules.nag(weights, grads, states, lrs, wds, float(self.momentum),
                  float(self.rescale_grad), self._clip_bound(), decay_new_weight=True)


@register
class Adam(Optimizer):
    """Adam; the bias correction is folded into the step size and epsilon is not corrected:

        G = clip(rescale_grad * grad + wd * weight)
        m = beta1 * m + (1 - beta1) * G;  v = beta2 * v + (1 - beta2) * G^2
        weight -= lr * sqrt(1 - beta2^t) / (1 - beta1^t) * m / (sqrt(v) + epsilon)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(4)

    def create_state(self, index, weight):
        return _zeros_like(weight), _zeros_like(weight)

    def _lazy_rows(self, index, weight, grad):
        return self.lazy_update


    def _rule(self, indices, weights, grads, states, lrs, wds):
        step_sizes = []
        for idx, lr in zip(indices, lrs):
            t = self._index_update_count[idx]
            step_sizes.append(lr * math.sqrt(1. - self.beta2 ** t) / (1. - self.beta1 ** t))
        rules.adam(weights, grads, [s[0] for s in states], [s[1] for s in states], step_sizes,
                   wds, self.beta1, self.beta2, self.epsilon, float(self.rescale_grad),
                   self._clip_bound())


@register
class AdaGrad(Optimizer):
    """AdaGrad, with a float32 history h whatever the weight's dtype:

        G = clip(rescale_grad * grad);  h += G^2;  weight -= lr * (G / sqrt(h + eps) + wd * weight)
    """

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return zeros(weight.shape, weight.context)

    def _lazy_rows(self, index, weight, grad):
        # MXNet's sparse AdaGrad: only the stored rows, and no weight decay
        if self._get_wd(index):
            raise MXNetError('AdaGrad: a row_sparse gradient does not support weight decay '
                             '(wd=%g for parameter %r), as in MXNet' % (self._get_wd(index), index))
        return True


    def _rule(self, indices, weights, grads, states, lrs, wds):
        rules.adagrad(weights, grads, states, lrs, wds, self.float_stable_eps,
                      float(self.rescale_grad), self._clip_bound())


@register
class RMSProp(Optimizer):
    """RMSProp (Tieleman & Hinton), or the centered variant of Graves when centered=True.

        G = clip(rescale_grad * grad + wd * weight);  n = (1 - gamma1) * G^2 + gamma1 * n
        plain:    weight -= lr * G / sqrt(n + epsilon)
        centered: g = (1 - gamma1) * G + gamma1 * g
                  delta = gamma2 * delta - lr * G / sqrt(n - g^2 + epsilon);  weight += delta
    then weight is clipped to [-clip_weights, clip_weights] when clip_weights is set. The state
    (n,) or (n, g, delta) is float32.
    """

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        count = 3 if self.centered else 1
        return tuple(zeros(weight.shape, weight.context) for _ in range(count))


    def _rule(self, indices, weights, grads, states, lrs, wds):
        clip_weights = self.clip_weights if self.clip_weights and self.clip_weights > 0 else None
        common = dict(rescale=float(self.rescale_grad), clip=self._clip_bound(),
                      clip_weights=clip_weights)
        if not self.centered:
            rules.rmsprop(weights, grads, [s[0] for s in states], lrs, wds, self.gamma1,
                          self.epsilon, **common)
        else:
            rules.rmsprop_centered(weights, grads, *([s[k] for s in states] for k in range(3)),
                                   lrs, wds, self.gamma1, self.gamma2, self.epsilon, **common)


@register
class AdaDelta(Optimizer):
    """AdaDelta (no learning rate):

        G = clip(rescale_grad * grad);  acc_g = rho * acc_g + (1 - rho) * G^2
        d = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * G
        acc_delta = rho * acc_delta + (1 - rho) * d^2;  weight -= d + wd * weight

    As in MXNet, the gradient array itself is multiplied by rescale_grad in place.
    """

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context), zeros(weight.shape, weight.context))


    def _rule(self, indices, weights, grads, states, lrs, wds):
        rules.scaled_grads_(grads, float(self.rescale_grad), None)   # in place, as MXNet
        rules.adadelta(weights, grads, [s[0] for s in states], [s[1] for s in states], wds,
                       self.rho, self.epsilon, 1.0, self._clip_bound())


@register
class Adamax(Optimizer):
    """AdaMax (Adam with the infinity norm):

        G = clip(rescale_grad * grad + wd * weight)
        m = beta1 * m + (1 - beta1) * G;  u = max(beta2 * u, |G|)
        weight -= lr / (1 - beta1^t) * m / u
    """

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return _zeros_like(weight), _zeros_like(weight)


    def _rule(self, indices, weights, grads, states, lrs, wds):
        lrs = [lr / (1. - self.beta1 ** self._index_update_count[idx])
               for idx, lr in zip(indices, lrs)]
        rules.adamax(weights, grads, [s[0] for s in states], [s[1] for s in states], lrs, wds,
                     self.beta1, self.beta2, float(self.rescale_grad), self._clip_bound())


@register
class Nadam(Optimizer):
    """Nesterov Adam. mu_t = beta1 * (1 - 0.5 * 0.96^(t * schedule_decay)); the running product
    `m_schedule` of the mu_t is one number for the whole optimizer, multiplied at every update
    of every parameter (as in MXNet).

        G = clip(rescale_grad * grad + wd * weight)
        m = beta1 * m + (1 - beta1) * G;  v = beta2 * v + (1 - beta2) * G^2
        weight -= lr * ((1 - mu_t) * G / (1 - M) + mu_{t+1} * m / (1 - M * mu_{t+1}))
                     / (sqrt(v / (1 - beta2^t)) + epsilon)        with M = m_schedule
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.

    def create_state(self, index, weight):
        return _zeros_like(weight), _zeros_like(weight)


    def _rule(self, indices, weights, grads, states, lrs, wds):
        ts, schedules = [], []
        for idx in indices:                  # one running product for all parameters
            t = self._index_update_count[idx]
            self.m_schedule = self.m_schedule * (
                self.beta1 * (1. - 0.5 * 0.96 ** (t * self.schedule_decay)))
            ts.append(t)
            schedules.append(self.m_schedule)
        rules.nadam(weights, grads, [s[0] for s in states], [s[1] for s in states], lrs, wds,
                    ts, schedules, self.beta1, self.beta2, self.epsilon, self.schedule_decay,
                    float(self.rescale_grad), self._clip_bound())


@register
class Ftrl(Optimizer):
    """FTRL-Proximal. State (z, n), float32. With G = clip(rescale_grad * grad):

        z += G - (sqrt(n + G^2) - sqrt(n)) * weight / lr;  n += G^2
        weight = (sign(z) * lamda1 - z) / ((beta + sqrt(n)) / lr + wd)  where |z| > lamda1, else 0
    """

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1 = lamda1
        self.beta = beta

    def create_state(self, index, weight):
        return (zeros(weight.shape, weight.context), zeros(weight.shape, weight.context))

    def _lazy_rows(self, index, weight, grad):
        # MXNet's sparse FTRL kernel needs a row_sparse weight; a dense one falls back to dense
        return weight.stype == 'row_sparse'


    def _rule(self, indices, weights, grads, states, lrs, wds):
        rules.ftrl(weights, grads, [s[0] for s in states], [s[1] for s in states], lrs, wds,
                   self.lamda1, self.beta, float(self.rescale_grad), self._clip_bound())


@register
class Signum(Optimizer):
    """Signum (SignSGD with momentum). With G = clip(rescale_grad * grad):

        m = momentum * m - (1 - momentum) * (wd * weight + G)
        weight = (1 - lr * wd_lh) * weight + lr * sign(m)
    momentum=0 is SignSGD: weight = (1 - lr * wd) * weight - lr * sign(G), no state.
    """

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _zeros_like(weight)


    def _rule(self, indices, weights, grads, states, lrs, wds):
        rules.signum(weights, grads, states, lrs, wds, self.momentum, self.wd_lh,
                     float(self.rescale_grad), self._clip_bound())


@register
class FTML(Optimizer):
    """Follow The Moving Leader. State (d, v, z). With G = clip(rescale_grad * grad + wd * weight):

        v = beta2 * v + (1 - beta2) * G^2
        d_t = (1 - beta1^t) / lr * (sqrt(v / (1 - beta2^t)) + epsilon)
        z = beta1 * z + (1 - beta1) * G - (d_t - beta1 * d) * weight;  d = d_t;  weight = -z / d_t
    """

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return tuple(_zeros_like(weight) for _ in range(3))


    def _rule(self, indices, weights, grads, states, lrs, wds):
        ts = [self._index_update_count[idx] for idx in indices]
        rules.ftml(weights, grads, *([s[k] for s in states] for k in range(3)), lrs, wds, ts,
                   self.beta1, self.beta2, self.epsilon, float(self.rescale_grad),
                   self._clip_bound())


@register
class LAMB(Optimizer):
    """LAMB (layer-wise adaptive moments). With G = clip(rescale_grad * grad):

        m, v as in Adam, bias corrected when bias_correction
        u = m / (sqrt(v) + epsilon) + wd * weight
        r1 = ||weight|| (clamped to [lower_bound, upper_bound] when set);  r2 = ||u||
        weight -= lr * (r1 / r2 if r1 > 0 and r2 > 0 else 1) * u
    """
    _rule_bypasses_update = True

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = max(1, min(45, _aggregation_size(45)))

    def create_state(self, index, weight):
        return _zeros_like(weight), _zeros_like(weight)


    def _rule(self, indices, weights, grads, states, lrs, wds):
        def bound(b):                # MXNet passes a bound only when it is truthy and >= 0
            return float(b) if b and b > 0 else None
        ts = [self._index_update_count[idx] for idx in indices]
        rules.lamb(weights, grads, [s[0] for s in states], [s[1] for s in states], lrs, wds, ts,
                   self.beta1, self.beta2, self.epsilon, self.bias_correction,
                   bound(self.lower_bound), bound(self.upper_bound), float(self.rescale_grad),
                   self._clip_bound())


@register
class LARS(Optimizer):
    """SGD with layer-wise adaptive rate scaling. For a weight whose name does not end in
    gamma, beta or bias, the rate becomes

        lr * eta * ||w|| / (||rescale_grad * g|| + wd * ||w|| + eps)   (when both norms are > 0)

    and the SGD momentum rule follows. With momentum_correction the momentum is scaled by
    lr / previous lr when a scheduler changes the rate. Weight decay defaults to 0 for every
    named parameter not ending in `_weight`.
    """
    _rule_bypasses_update = True
    _master_last = True

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = _aggregation_size(4)
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def set_wd_mult(self, args_wd_mult):
        self.wd_mult = {name: 0.0 for name in self.idx2name.values()
                        if not name.endswith('_weight')}
        self.wd_mult.update(self._sym_mults('__wd_mult__'))
        self.wd_mult.update(args_wd_mult)

    def _get_lrs(self, indices):
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        self.cur_lr = lr
        return self._scaled(indices, lr, self.lr_mult, 'lr_mult')

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _zeros_like(weight)

    def _scales_rate(self, index):
        name = self.idx2name.get(index, str(index))
        return not (name.endswith('gamma') or name.endswith('beta') or name.endswith('bias'))


    def _rule(self, indices, weights, grads, states, lrs, wds):
        momentum = self.momentum
        if self.momentum_correction and self.last_lr:
            momentum = momentum * self.cur_lr / self.last_lr
        rules.lars_sgd(weights, grads, states, lrs, wds,
                       [self._scales_rate(idx) for idx in indices], momentum, self.eta,
                       self.eps, float(self.rescale_grad), self._clip_bound())


@register
class SGLD(Optimizer):
    """Stochastic Gradient Langevin Dynamics: with G = clip(rescale_grad * grad),
    weight += -lr / 2 * (G + wd * weight) + N(0, sqrt(lr)) noise (torch's generator)."""


    def _rule(self, indices, weights, grads, states, lrs, wds):
        rules.sgld(weights, grads, lrs, wds, float(self.rescale_grad), self._clip_bound())


@register
class DCASGD(Optimizer):
    """Delay-compensated asynchronous SGD. State (momentum or None, previous weight):

        G = clip(rescale_grad * grad)
        delta = -lr * (G + wd * weight + lamda * G^2 * (weight - previous))
        m = momentum * m + delta (m = delta when momentum is 0);  previous = weight;  weight += m

    (MXNet 1.9.1 fails on any momentum > 0 here; mxtorch runs the rule above.)
    """

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        mom = None
        if self.momentum != 0.0:
            mom = _zeros_like(weight)
        return (mom, weight.copy())


    def _rule(self, indices, weights, grads, states, lrs, wds):
        rules.dcasgd(weights, grads, [s[0] for s in states], [s[1] for s in states], lrs, wds,
                     self.momentum, self.lamda, float(self.rescale_grad), self._clip_bound())


@register
class Test(Optimizer):
    """A trivial optimizer for tests: weight += rescale_grad * grad; the state keeps a copy of
    the weight. It does not count updates."""

    def create_state(self, index, weight):
        return zeros(weight.shape, weight.context)

    def update(self, index, weight, grad, state):
        with torch.no_grad():
            weight._tensor.add_(grad._tensor * self.rescale_grad)
            state._tensor.copy_(weight._tensor)


# ---------------------------------------------------------------------------------------------
class Updater:
    """Applies an optimizer to weights by index, keeping one state per index.

    `updater(index, grad, weight)` (grad before weight); the three may be lists. States are
    created on first use; states loaded by `set_states` move to their weight's device on first use.
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}

    def __call__(self, index, grad, weight):
        if isinstance(index, (list, tuple)):
            indices, grads, weights = list(index), list(grad), list(weight)
            if not len(indices) == len(grads) == len(weights):
                raise ValueError('index, grad and weight lists must have the same length, got '
                                 '%d, %d and %d' % (len(indices), len(grads), len(weights)))
        else:
            indices, grads, weights = [index], [grad], [weight]
        if not weights:
            return
        opt = self.optimizer
        opt._set_current_context(weights[0].context.device_id)
        indices = [i.decode('utf-8') if isinstance(i, bytes) else i for i in indices]
        for idx, w in zip(indices, weights):
            if idx not in self.states:
                self.states[idx] = opt.create_state_multi_precision(idx, w)
                self.states_synced[idx] = True
            elif not self.states_synced.get(idx, False):
                self.states[idx] = self.sync_state_context(self.states[idx], w.context)
                self.states_synced[idx] = True
        if opt.aggregate_num <= 0:
            for idx, w, g in zip(indices, weights, grads):
                opt.update_multi_precision(idx, w, g, self.states[idx])
            return
        groups = {}
        for idx, w, g in zip(indices, weights, grads):
            groups.setdefault((w._tensor.dtype, w._tensor.device), []).append((idx, w, g))
        size = opt.aggregate_num
        for members in groups.values():
            for start in range(0, len(members), size):
                chunk_idx, chunk_w, chunk_g = zip(*members[start:start + size])
                opt.update_multi_precision(list(chunk_idx), list(chunk_w), list(chunk_g),
                                           [self.states[i] for i in chunk_idx])

    def sync_state_context(self, state, context):
        """`state` (an NDArray or a tuple/list of them) on `context`."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            return type(state)(self.sync_state_context(s, context) for s in state)
        return state

    def set_states(self, states, check=None):
        """Load states pickled by `get_states` (or by MXNet); a (states, optimizer) pair also
        replaces the optimizer. Only arrays, containers and optimizer/scheduler objects load.
        `check(states, optimizer)` may reject them before anything is changed."""
        loaded = serialization.loads(states)
        opt = self.optimizer
        if isinstance(loaded, tuple) and len(loaded) == 2:
            loaded, opt = loaded
            if not isinstance(opt, Optimizer):
                raise ValueError('a (states, optimizer) pickle must hold an Optimizer second, '
                                 'got %s' % type(opt).__name__)
        if not isinstance(loaded, dict):
            raise ValueError('optimizer states must unpickle to a dict index -> state, got %s'
                             % type(loaded).__name__)
        if check is not None:
            check(loaded, opt)
        self.states, self.optimizer = loaded, opt
        self.states_synced = dict.fromkeys(self.states, False)

    def get_states(self, dump_optimizer=False):
        """The states pickled in MXNet's form; with dump_optimizer, the pair (states, optimizer)."""
        return serialization.dumps((self.states, self.optimizer) if dump_optimizer else self.states)


def get_updater(optimizer):
    """An Updater applying `optimizer`."""
    return Updater(optimizer)
