"""What graph rewrites need to know about the layers of nn.py (FullyConnected, Activation,
BatchNorm): see the rule attributes of registry.OpDef."""
import torch

from .registry import get_op


def _activation_act(p):
    """Activation(act_type='relu') is a ReLU (a fused convolution's post-operation)."""
    return ('relu', []) if p.act_type == 'relu' else None


def _batch_norm_affine(p):
    """At inference BatchNorm over axis 1 of x + bias is x * scale + shift per channel, with
    scale = gamma / sqrt(moving_var + eps) (gamma = 1 under fix_gamma) and
    shift = beta + (bias - moving_mean) * scale; None where it normalises another axis or
    shows its statistics."""
    if p.axis != 1 or p.output_mean_var:
        return None

    def affine(bias, gamma, beta, moving_mean, moving_var):
        scale = torch.rsqrt(moving_var + p.eps)
        if not p.fix_gamma:
            scale = scale * gamma
        return scale, beta + ((bias if bias is not None else 0) - moving_mean) * scale
    return affine


get_op('FullyConnected').fresh_output = True
get_op('Activation').pointwise_act = _activation_act
get_op('BatchNorm').fresh_output = True
get_op('BatchNorm').inference_affine = _batch_norm_affine
