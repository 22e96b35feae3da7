"""Optimizer update operators on row_sparse gradients, as MXNet 1.9.1's sparse kernels.

With a row_sparse gradient, sgd_update / sgd_mom_update / adam_update (lazy_update=True),
ftrl_update (row_sparse weight), `_sparse_adagrad_update` and `_contrib_group_adagrad_update`
(these two refuse a dense gradient) change only the rows the gradient stores, in the weight
and in the states: those rows are gathered, the operator's dense rule runs on them, and they
are written back. Otherwise the dense rule runs on the dense forms (a standard update). A
row_sparse weight must store every row (MXNet's requirement).
"""
import torch

from ..base import MXNetError
from . import optimizer_rules as rules
from .optimizer_ops import _bound, _common, _single
from .params import Float
from .registry import get_op

D, R = 'default', 'row_sparse'

# operator -> (display name, whether a dense weight is updated lazily, whether lazy_update
# decides it)
_LAZY = {
    'sgd_update': ('SGDUpdate', True, True),
    'sgd_mom_update': ('SGDMomUpdate', True, True),
    'adam_update': ('AdamUpdate', True, True),
    'ftrl_update': ('FtrlUpdate', False, False),
    '_sparse_adagrad_update': ('AdagradUpdate', True, False),
    '_contrib_group_adagrad_update': ('GroupAdagradUpdate', True, False),
}
# operators with no dense kernel (MXNet 1.9.1 refuses a dense gradient)
_SPARSE_ONLY = ('_sparse_adagrad_update', '_contrib_group_adagrad_update')


def _check_full_rows(title, arr):
    if arr.stype == R and arr._get_parts()[1].shape[0] != arr.shape[0]:
        raise MXNetError('%s for RowSparse weights is only implemented for RowSparse weights '
                         'with all rows containing non-zeros. Expects weights.data.shape[0] '
                         '(%d) == weights.shape[0] (%d).'
                         % (title, arr._get_parts()[1].shape[0], arr.shape[0]))


def _storage(name):
    title, dense_lazy, by_param = _LAZY[name]

    def rule(p, st):
        weight, grad = st[0], st[1]
        if grad != R or (by_param and not p.lazy_update) or (weight == D and not dense_lazy):
            if name in _SPARSE_ONLY:
                raise MXNetError('Operator not implemented: operator = %s (row_sparse grad '
                                 'needed)' % name)
            return None
        if any(s != weight for s in st[2:]):
            raise MXNetError('Operator not implemented: operator = %s (states must have the '
                             "weight's storage type)" % name)
        return [weight]
    return rule


def _lazy_kernel(name):
    title = _LAZY[name][0]
    rule = _storage(name)

    def kernel(op, p, inputs, out_stypes):
        weight, grad, states = inputs[0], inputs[1], inputs[2:]
        if rule(p, [x.stype for x in inputs]) is None:       # a standard (dense) update
            return None
        for arr in [weight] + list(states):
            _check_full_rows(title, arr)
        from ..ndarray.sparse import _new
        data, rows = grad._get_parts()
        w = weight._tensor.detach()
        rows_d = rows.to(w.device).long()
        sub_states = [s._tensor.detach()[rows_d].clone() for s in states]
        new_rows = op.forward(p, w[rows_d], data.to(w.device, w.dtype), *sub_states)
        with torch.no_grad():
            for s, sub in zip(states, sub_states):
                s._tensor[rows_d] = sub
            new = w.clone()
            new[rows_d] = new_rows.to(new.dtype)
        if weight.stype == R:
            return [_new(R, weight.shape, weight.context,
                         parts=(new, torch.arange(weight.shape[0], device=new.device)))]
        from ..ndarray.ndarray import _wrap
        return [_wrap(new, weight.context)]
    return kernel


def _adagrad(p, weight, grad, history):
    """history += clip(rescale_grad * grad)^2; w -= lr * g / sqrt(history + epsilon)."""
    if p.wd != 0:
        raise MXNetError('_sparse_adagrad_update: non-zero wd (%g) is not supported' % p.wd)
    new = weight.clone()
    rules.adagrad([new], [grad], [history], [p.lr], [0.0], p.epsilon, p.rescale_grad,
                  _bound(p.clip_gradient))
    return new


_single('_sparse_adagrad_update', _adagrad, ('weight', 'grad'), ('history',),
        params=dict(_common(), epsilon=Float(1e-7)))

for _name in _LAZY:
    _op = get_op(_name)
    _op.infer_storage = _storage(_name)
    _op.sparse_forward = _lazy_kernel(_name)
