"""BatchNorm variants of mx.contrib: BatchNormWithReLU (BatchNorm then relu, one node) and
SyncBatchNorm (BatchNorm whose batch statistics span the `ndev` devices sharing `key`; on one
process and one device that is BatchNorm over the channel axis 1; its hidden `var` output is
the variance where BatchNorm's is 1/std).

Both keep BatchNorm's inputs, auxiliary states, hidden outputs and moving-average update.
BatchNormWithReLU has one more hidden output (MXNet's kernel scratch; zeros here).
"""
import torch

from .nn import _batch_norm, _batch_norm_shape, _batch_norm_type, _batch_norm_update_aux
from .params import Bool, Float, Int, Str
from .registry import OpDef, register

_COMMON = {'eps': Float(1e-3), 'momentum': Float(0.9), 'fix_gamma': Bool(True),
           'use_global_stats': Bool(False), 'output_mean_var': Bool(False)}
_INIT = {'moving_mean': '["zero", {}]', 'moving_var': '["one", {}]'}


def _with_relu(p, data, gamma, beta, moving_mean, moving_var, *, train):
    out, mean, inv_std = _batch_norm(p, data, gamma, beta, moving_mean, moving_var, train=train)
    scratch = torch.zeros((), dtype=data.dtype, device=data.device).expand(data.shape)
    return torch.relu(out), mean, inv_std, scratch


def _with_relu_shape(p, ins, outs):
    new_ins, new_outs = _batch_norm_shape(p, ins, outs[:3])
    return new_ins, list(new_outs) + [new_outs[0]]


def _with_relu_type(p, ins, outs):
    new_ins, new_outs = _batch_norm_type(p, ins, outs[:3])
    return new_ins, list(new_outs) + [new_outs[0]]


register(OpDef('_contrib_BatchNormWithReLU', _with_relu,
               params=dict(_COMMON, axis=Int(1), cudnn_off=Bool(False)),
               inputs=('data', 'gamma', 'beta'), aux=('moving_mean', 'moving_var'),
               outputs=('output', 'mean', 'var', 'workspace'),
               visible_outputs=lambda p: 3 if p.output_mean_var else 1,
               mode_dependent=True, update_aux=_batch_norm_update_aux,
               infer_shape=_with_relu_shape, infer_type=_with_relu_type, init_hints=_INIT))


class _AxisOne(dict):
    """SyncBatchNorm's params seen by BatchNorm's rules: the channel axis is 1."""
    __getattr__ = dict.__getitem__


def _on_axis_one(fn):
    def wrapped(p, *args, **kwargs):
        return fn(_AxisOne(p, axis=1), *args, **kwargs)
    return wrapped


def _sync_batch_norm(p, data, gamma, beta, moving_mean, moving_var, *, train):
    """BatchNorm; its hidden `var` output is the (biased) variance, not 1/std."""
    out, mean, inv_std = _batch_norm(_AxisOne(p, axis=1), data, gamma, beta, moving_mean,
                                     moving_var, train=train)
    if train and not p.use_global_stats:
        return out, mean, inv_std.pow(-2) - p.eps
    return out, mean, moving_var


def _sync_update_aux(p, aux, outputs):
    if not p.use_global_stats:
        for state, batch in zip(aux, outputs[1:3]):
            state.lerp_(batch.detach().to(state.dtype), 1 - p.momentum)


register(OpDef('_contrib_SyncBatchNorm', _sync_batch_norm,
               params=dict(_COMMON, ndev=Int(1), key=Str()),
               inputs=('data', 'gamma', 'beta'), aux=('moving_mean', 'moving_var'),
               outputs=('output', 'mean', 'var'),
               visible_outputs=lambda p: 3 if p.output_mean_var else 1,
               mode_dependent=True, update_aux=_sync_update_aux,
               infer_shape=_on_axis_one(_batch_norm_shape),
               infer_type=_on_axis_one(_batch_norm_type), init_hints=_INIT))
