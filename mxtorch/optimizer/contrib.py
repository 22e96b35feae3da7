"""mx.optimizer.contrib: GroupAdaGrad."""
from ..ndarray.ndarray import zeros
from ..ops import optimizer_rules as rules
from .optimizer import Optimizer, register

__all__ = ['GroupAdaGrad']


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one learning rate per row of a 2-D weight. With G = clip(rescale_grad * g):

        history += mean(G^2, axis=1, keepdims=True);  weight -= lr * G / sqrt(history + eps)

    The history has shape (rows, 1). A row_sparse gradient updates only its stored rows.
    Weight decay is not supported.
    """

    def __init__(self, eps=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        if len(weight.shape) != 2:
            raise AssertionError('GroupAdaGrad needs 2-D weights, got shape %s'
                                 % (weight.shape,))
        return zeros((weight.shape[0], 1), weight.context, stype=weight.stype)

    def _lazy_rows(self, index, weight, grad):
        return True

    def _rule(self, indices, weights, grads, states, lrs, wds):
        if any(wds):
            raise AssertionError('Weight decay is not supported for GroupAdaGrad')
        clip = self.clip_gradient
        rules.group_adagrad(weights, grads, states, lrs, self.float_stable_eps,
                            float(self.rescale_grad),
                            float(clip) if clip is not None and clip >= 0 else None)
