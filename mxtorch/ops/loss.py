"""Loss outputs and gradient controls whose gradients are MXNet's own, not autograd's.

Each loss operator is a plain forward plus its declared `loss_gradient`: SoftmaxOutput and the
regression outputs give their own (normalised) gradient, MakeLoss a constant one, and all of
them ignore head gradients. BlockGrad stops the gradient.
"""
import torch

from ..base import MXNetError
from .params import Bool, Enum, Float, Int, Params
from .indexing import _fit_index, _pick
from .nn import _check_axis
from .reduce import reduce_axes
from .registry import OpDef, register
from .shapes import first, merge, prod, same_shape
from .softmax_ce_fusion import fuse_softmax_cross_entropy


# ---------------------------------------------------------------------------------------------
# SoftmaxOutput
# ---------------------------------------------------------------------------------------------
def _softmax_layout(p, data):
    """Probabilities for SoftmaxOutput's three layouts."""
    if p.multi_output:
        return torch.softmax(data, dim=1)
    if p.preserve_shape or data.dim() == 2:
        return torch.softmax(data, dim=-1)
    return torch.softmax(data.reshape(data.shape[0], -1), dim=1).reshape(data.shape)


_CLASS_INDICES = {}
_ONE_PASS_FROM = 1 << 16     # elements of prob where scatter_add beats a one-hot mask


def _class_indices(k, device):
    """arange(k), cached: comparing labels with it gives the one-hot mask."""
    key = (k, device)
    row = _CLASS_INDICES.get(key)
    if row is None:
        row = torch.arange(k, device=device)
        if type(row) is torch.Tensor:       # (not a tracer's fake tensor: it must not outlive
            _CLASS_INDICES[key] = row       # the trace)
    return row


def _softmax_output_grad(p, prob, label):
    """MXNet's SoftmaxOutput gradient w.r.t. data (before any head gradient)."""
    if label.shape == prob.shape:                       # label is a distribution
        return (prob - label) * p.grad_scale
    n = prob.shape[0]
    if prob.dim() == 2 and label.numel() == n and not (p.multi_output or p.use_ignore or
                                                       p.smooth_alpha or
                                                       p.normalization == 'valid'):
        # the common case: prob with 1 taken off at each row's label (a label outside [0, k)
        # takes nothing off, as in MXNet, whose kernel never matches it)
        k = prob.shape[1]
        idx = label.reshape(n, 1).long()
        if prob.numel() < _ONE_PASS_FROM:                # fewest kernels
            grad = prob.sub((_class_indices(k, prob.device) == idx).to(prob.dtype))
        else:                                            # one pass over prob
            minus_one = ((idx >= 0) & (idx < k)).to(prob.dtype).neg_()
            grad = prob.scatter_add(1, idx.clamp(0, k - 1), minus_one)
        scale = p.grad_scale / n if p.normalization == 'batch' else p.grad_scale
        return grad.mul_(scale) if scale != 1.0 else grad
    if p.multi_output:                                  # classes on axis 1, positions after it
        probs = prob.reshape(n, prob.shape[1], -1)
        lab = label.reshape(n, 1, -1)
    elif p.preserve_shape:                              # classes on the last axis
        probs = prob.reshape(-1, prob.shape[-1], 1)
        lab = label.reshape(-1, 1, 1)
    else:                                               # one class axis over the flattened rest
        probs = prob.reshape(n, -1, 1)
        lab = label.reshape(-1)[:n].reshape(n, 1, 1)    # MXNet reads the first n labels
    k, spatial = probs.shape[1], probs.shape[2]
    onehot = (_class_indices(k, prob.device).reshape(1, k, 1) == lab.long()).to(prob.dtype)
    if p.smooth_alpha > 0:                               # target 1-a on the label, a/(k-1) off it
        off = p.smooth_alpha / (k - 1)
        grad = probs - off - onehot * (1.0 - p.smooth_alpha - off)
    else:
        grad = probs - onehot
    if p.use_ignore or p.normalization == 'valid':
        kept = lab != p.ignore_label
        if p.use_ignore:
            grad = grad * kept
    if p.normalization == 'valid':
        scale = p.grad_scale / max(1, int(kept.sum()))
    elif p.normalization == 'batch':
        scale = p.grad_scale / (spatial * n if p.multi_output else label.numel())
    else:
        scale = p.grad_scale / spatial if p.multi_output else p.grad_scale
    if scale != 1.0:
        grad = grad * scale
    return grad.reshape(prob.shape)


def _softmax_output(p, data, label):
    """Softmax probabilities; backward gives (p - onehot(label)) scaled, ignoring head grads
    (unless out_grad, which multiplies by them)."""
    return _softmax_layout(p, data)


def _softmax_output_gradient(p, inputs, prob):
    return _softmax_output_grad(p, prob, inputs[1])


def _softmax_output_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    label = ins[1]
    if data is not None:
        if p.multi_output:
            want = (data[0],) + tuple(data[2:])
            if label is None or (tuple(label) != tuple(data) and prod(label) != prod(want)):
                label = merge(label, want)
        elif p.preserve_shape or len(data) > 1:
            if label is None or tuple(label) != tuple(data):
                label = merge(label, tuple(data[:-1]))
    return [data, label], [data]


def _label_type(p, ins, outs):
    dt = first(ins[0], outs[0])
    return [dt, first(ins[1], dt)], [dt]


register(OpDef('SoftmaxOutput', _softmax_output,
               params={'grad_scale': Float(1.0), 'ignore_label': Float(-1.0),
                       'multi_output': Bool(False), 'use_ignore': Bool(False),
                       'preserve_shape': Bool(False),
                       'normalization': Enum(('batch', 'null', 'valid'), 'null'),
                       'out_grad': Bool(False), 'smooth_alpha': Float(0.0)},
               inputs=('data', 'label'), loss_gradient=_softmax_output_gradient,
               head_grad=lambda p: 'required' if p.out_grad else 'ignored',
               infer_shape=_softmax_output_shape, infer_type=_label_type,
               aliases=('Softmax',)))


# ---------------------------------------------------------------------------------------------
# Regression outputs
# ---------------------------------------------------------------------------------------------
def _regression(kind):
    def forward(p, data, label):
        return torch.sigmoid(data) if kind == 'logistic' else data.clone()
    forward.__name__ = kind + '_regression_output'
    forward.__doc__ = ('%s regression output: the forward is %s; backward gives '
                       'grad_scale / num_output * (out - label)%s, ignoring head gradients.'
                       % (kind.capitalize(), 'sigmoid' if kind == 'logistic' else 'identity',
                          ' with sign' if kind == 'mae' else ''))
    return forward


def _regression_gradient(kind):
    def gradient(p, inputs, out):
        label = inputs[1]
        num_output = label.numel() // label.shape[0] if label.dim() else 1
        diff = out - label.reshape(out.shape).to(out.dtype)
        if kind == 'mae':
            diff = torch.where(diff > 0, 1.0, -1.0).to(out.dtype)
        return diff * (p.grad_scale / num_output)
    return gradient


def _regression_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    label = ins[1]
    if data is not None and label is None:
        label = (data[0],) if len(data) == 2 and data[1] == 1 else data
    return [data, label], [data]


for _name, _kind in (('LinearRegressionOutput', 'linear'), ('LogisticRegressionOutput', 'logistic'),
                     ('MAERegressionOutput', 'mae')):
    register(OpDef(_name, _regression(_kind), params={'grad_scale': Float(1.0)},
                   inputs=('data', 'label'), head_grad='ignored',
                   loss_gradient=_regression_gradient(_kind),
                   infer_shape=_regression_shape, infer_type=_label_type))


# ---------------------------------------------------------------------------------------------
# MakeLoss, make_loss, BlockGrad
# ---------------------------------------------------------------------------------------------
def _identity(p, data):
    """Identity (the output of a loss whose gradient is declared separately)."""
    return data.clone()


def _make_loss_gradient(p, inputs, out):
    """grad_scale everywhere, normalised by the batch (all dims but the last) or by the
    number of elements above valid_thresh."""
    data = inputs[0]
    if p.normalization == 'batch':
        scale = p.grad_scale / max(1, data.numel() // data.shape[-1])
    elif p.normalization == 'valid':
        scale = p.grad_scale / max(1, int((data > p.valid_thresh).sum()))
    else:
        scale = p.grad_scale
    return torch.full_like(data, scale)


def _ones_gradient(p, inputs, out):
    return torch.ones_like(inputs[0])


register(OpDef('MakeLoss', _identity,
               params={'grad_scale': Float(1.0), 'valid_thresh': Float(0.0),
                       'normalization': Enum(('batch', 'null', 'valid'), 'null')},
               head_grad='ignored', loss_gradient=_make_loss_gradient, infer_shape=same_shape))
register(OpDef('make_loss', _identity, outputs=('loss',), head_grad='ignored',
               loss_gradient=_ones_gradient, infer_shape=same_shape))


def _block_grad(p, data):
    """Identity whose gradient is zero."""
    return data.detach()


register(OpDef('BlockGrad', _block_grad, head_grad='zero', infer_shape=same_shape,
               aliases=('stop_gradient',)))


# ---------------------------------------------------------------------------------------------
# CTCLoss
# ---------------------------------------------------------------------------------------------
def _ctc_inputs(p):
    names = ['data', 'label']
    if p.use_data_lengths:
        names.append('data_lengths')
    if p.use_label_lengths:
        names.append('label_lengths')
    return tuple(names)


def _ctc_loss(p, data, label, *lengths):
    """Connectionist temporal classification loss per sequence: data (T, N, C) unnormalised
    scores (softmax over C inside), label (N, L). blank_label='first': channel 0 is the blank,
    labels are 1..C-1 and 0 pads a label row; 'last': channel C-1 is the blank, labels are
    0..C-2 and -1 pads. Without label_lengths a row ends at its first padding value. The
    gradient w.r.t. data is autograd's (softmax minus the CTC posteriors, times the head)."""
    T, N, C = data.shape
    lengths = list(lengths)
    data_lengths = lengths.pop(0) if p.use_data_lengths else None
    label_lengths = lengths.pop(0) if p.use_label_lengths else None
    if label.dim() != 2 or label.shape[0] != N:
        raise MXNetError('CTCLoss: label must have shape (batch_size=%d, max_label_length), '
                         'got %s' % (N, tuple(label.shape)))
    blank = 0 if p.blank_label == 'first' else C - 1
    pad = 0 if p.blank_label == 'first' else -1
    labels = label.long()
    L = labels.shape[1]
    if label_lengths is not None:
        target_lengths = label_lengths.long().reshape(N)
    else:
        is_pad = labels == pad
        first_pad = torch.where(is_pad, torch.arange(L, device=labels.device), L)
        target_lengths = first_pad.min(dim=1).values if L else torch.zeros(N, dtype=torch.long)
    input_lengths = (data_lengths.long().reshape(N) if data_lengths is not None
                     else torch.full((N,), T, dtype=torch.long, device=data.device))
    valid = torch.arange(L, device=labels.device) < target_lengths.unsqueeze(1)
    # a label equal to the blank is accepted, as MXNet does (only indices torch cannot read
    # are refused)
    if bool(((labels < 0) | (labels >= C))[valid].any()):
        raise MXNetError('CTCLoss: label values must be in [%d, %d] (blank_label=%s), got %s'
                         % (1 if blank == 0 else 0, C - 1 if blank == 0 else C - 2,
                            p.blank_label, label.tolist()))
    targets = torch.where(valid, labels, (blank + 1) % C)
    compute = data if data.dtype in (torch.float32, torch.float64) else data.float()
    if data_lengths is not None:
        # frames past a sequence's end are never read: NaN there is harmless, gradient 0
        inside = torch.arange(T, device=data.device).unsqueeze(1) < input_lengths
        zero = torch.zeros((), dtype=compute.dtype, device=data.device)
        compute = torch.where(inside.unsqueeze(2), compute, zero)
    loss = torch.nn.functional.ctc_loss(
        torch.log_softmax(compute, dim=2), targets, input_lengths, target_lengths, blank=blank,
        reduction='none', zero_infinity=False)
    return loss.to(data.dtype)


def _ctc_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    n = data[1]
    ins = list(ins)
    if len(ins) > 2:
        for k in range(2, len(ins)):
            ins[k] = merge(ins[k], (n,))
    return ins, [merge(outs[0], (n,))]


register(OpDef('CTCLoss', _ctc_loss,
               params={'use_data_lengths': Bool(False), 'use_label_lengths': Bool(False),
                       'blank_label': Enum(('first', 'last'), 'first')},
               inputs=_ctc_inputs, outputs=('output0',), infer_shape=_ctc_shape,
               infer_type=lambda p, ins, outs: (
                   [ins[0]] + [first(t, ins[0]) for t in ins[1:]], [ins[0]]),
               aliases=('_contrib_CTCLoss', '_contrib_ctc_loss', 'ctc_loss')))


# ---------------------------------------------------------------------------------------------
# _softmax_cross_entropy_per_sample: Gluon's SoftmaxCrossEntropyLoss (sparse labels) in one call
# ---------------------------------------------------------------------------------------------
def _softmax_ce_per_sample(p, data, label):
    """-log_softmax(data)[label] along `axis` (labels truncated to integers and clipped to the
    classes, as pick), averaged over every axis but `batch_axis`: the same values and gradients
    as log_softmax, pick(keepdims=True), negative and mean(exclude=True) one after the other,
    with one call (a 2-d batch of class scores takes torch's cross_entropy: log_softmax and
    nll_loss)."""
    _check_axis('log_softmax', p.axis, data.dim())
    axis = p.axis % data.dim()
    if data.dim() == 2 and axis == 1 and p.batch_axis in (0, -2) and \
            label.numel() == data.shape[0] and data.is_floating_point():
        index = _fit_index(label.reshape(-1), data.shape[1], 'clip')
        return torch.nn.functional.cross_entropy(data, index, reduction='none')
    logp = torch.log_softmax(data, dim=p.axis)
    picked = -_pick(_PICK_PARAMS[axis], logp, label)
    axes = reduce_axes('mean', (p.batch_axis,), picked.dim(), exclude=True)
    out = torch.mean(picked, axes) if axes else picked.clone()
    return out.reshape(tuple(n for d, n in enumerate(picked.shape) if d not in axes) or (1,))


_PICK_PARAMS = {a: Params(axis=a, keepdims=True, mode='clip') for a in range(32)}

register(OpDef('_softmax_cross_entropy_per_sample', _softmax_ce_per_sample,
               params={'axis': Int(-1), 'batch_axis': Int(0)}, inputs=('data', 'label'))
         ).bind_rewrite = fuse_softmax_cross_entropy
