"""Quantized layers (`_contrib_quantized_*`), the int8 operators of graphs that
mx.contrib.quantization writes: each takes int8/uint8 data with its float range (min, max:
shape (1,) float32 inputs) and gives (output, min_output, max_output).

* conv, fully_connected, elemwise_mul: exact int32 accumulation (done in float64, exact far
  beyond int8 products' sums), the output range being the range of one int32 step times
  2^31 - 1, one step being the product of the inputs' steps (r/127 for int8, r/255 for uint8,
  r = max(|min|, |max|)). The bias (int8 over its own range) is rescaled to the output's step.
* act (relu), flatten, pooling, embedding: on the int values; the range passes through.
* concat, elemwise_add, batch_norm: over one output range; inputs are rescaled to it, as the
  CPU wheel's MKL-DNN kernels do (127.5 / 255.5 steps, see quantization.py).
* rnn: the float LSTM of quantize_asym's uint8 data, dequantized.
Layer parameters are the float operator's (Convolution, FullyConnected, Pooling, ...), checked
by the same schema and shape rules.

Where MXNet 1.9.1's CPU wheel computes otherwise (tests/test_quantization_ops.py):
* its quantized_conv (unfused, uint8 data only) adds the int8 bias unscaled and reports the
  int32 range of int8 data; here the bias is rescaled as in fully_connected and the range is
  uint8 data's. (The wheel runs quantized convolutions fused, as _sg_mkldnn_conv.)
* its quantized_act of uint8 data is typed int8 (the bytes reinterpreted); here it stays uint8.
* its quantized_batch_norm scales by gamma whatever fix_gamma says; so does this one.
"""
import torch

from ..base import np_dtype
from .params import Bool, Int
from .quantization import (INT32_RANGE, MKLDNN_STEPS, STEPS, calibrated, real_range, saturate,
                           steps_per_unit, _CALIB, _f32)
from .registry import OpDef, get_op, register
from .shapes import merge, require

F32, I32 = np_dtype('float32'), np_dtype('int32')
_QTYPES = (np_dtype('int8'), np_dtype('uint8'))


def step(dtype, lo, hi):
    """The float value of one int8 / uint8 step of data over [lo, hi]: r / 127 or r / 255."""
    return real_range(lo, hi) / STEPS[dtype]


def int32_range(per_step):
    """(min, max) outputs of int32 values whose step is `per_step`."""
    top = per_step * INT32_RANGE
    return -top, top


def check_quantized(op, name, dtype):
    require(dtype is None or dtype in _QTYPES, '%s: %s must be int8 or uint8, got %s', op, name,
            dtype)


def _pairs(names):
    out = []
    for n in names:
        out += ['min_' + n, 'max_' + n]
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# conv and fully connected: int32 out
# ---------------------------------------------------------------------------------------------
def _float_args(float_op, p):
    """The float operator's array inputs (data, weight[, bias])."""
    return float_op.arg_names(p)


def _bias_steps(bias, data_dtype, ranges):
    """int8 bias in int32 steps of the output: bias * b_r/127 over one data step (r_d/127.5,
    r_d/255.5 for uint8: the MKL-DNN kernel's) times one weight step (r_w/127), truncated."""
    d_real, w_real, b_real = (real_range(ranges[i], ranges[i + 1]) for i in (0, 2, 4))
    rescale = steps_per_unit(MKLDNN_STEPS[data_dtype], d_real) * \
        steps_per_unit(STEPS[torch.int8], w_real) * (b_real / STEPS[torch.int8])
    return torch.trunc(bias.float() * rescale).double()


def _bias_shape(float_name, p, acc):
    shape = [1] * acc.dim()
    channel_last = float_name == 'FullyConnected' or (p.layout or '').endswith('C')
    shape[-1 if channel_last else 1] = -1
    return shape


def _int32_layer(name, float_name, doc):
    float_op = get_op(float_name)

    def forward(p, *inputs):
        names = _float_args(float_op, p)
        k = len(names)
        values, ranges = inputs[:k], inputs[k:]
        data, weight = values[0], values[1]
        per_step = step(data.dtype, ranges[0], ranges[1]) * step(weight.dtype, ranges[2],
                                                                 ranges[3])
        acc = float_op.forward(p, data.double(), weight.double())
        acc = acc if not isinstance(acc, tuple) else acc[0]
        if k == 3:
            acc = acc + _bias_steps(values[2], data.dtype, ranges).reshape(
                _bias_shape(float_name, p, acc))
        lo, hi = int32_range(per_step)
        return acc.clamp(-INT32_RANGE, INT32_RANGE).to(torch.int32), lo, hi

    def inputs(p):
        names = _float_args(float_op, p)
        return tuple(names) + _pairs(names)

    def infer_shape(p, ins, outs):
        k = len(_float_args(float_op, p))
        new, out = float_op.infer_shape(p, list(ins[:k]), outs[:1])
        return list(new) + [merge(s, (1,)) for s in ins[k:]], [out[0], (1,), (1,)]

    def infer_type(p, ins, outs):
        k = len(_float_args(float_op, p))
        check_quantized(name, 'data', ins[0])
        new = [ins[0] or np_dtype('int8')] + [np_dtype('int8')] * (k - 1) + [F32] * (2 * k)
        return new, [I32, F32, F32]

    forward.__doc__ = doc
    return forward, dict(params=dict(float_op.params), inputs=inputs, infer_shape=infer_shape,
                         infer_type=infer_type, outputs=('output', 'min_output', 'max_output'),
                         differentiable=False)


def _register_int32_layer(name, float_name, doc):
    forward, kwargs = _int32_layer(name, float_name, doc)
    register(OpDef(name, forward, **kwargs))


_register_int32_layer('_contrib_quantized_conv', 'Convolution',
                      'int8 / uint8 data convolved with int8 weights into int32.')
_register_int32_layer('_contrib_quantized_fully_connected', 'FullyConnected',
                      'int8 / uint8 data times int8 weights into int32.')


# ---------------------------------------------------------------------------------------------
# act, flatten, pooling, embedding: on the int values, the range passing through
# ---------------------------------------------------------------------------------------------
def _passthrough_type(op):
    def infer_type(p, ins, outs):
        check_quantized(op, 'data', ins[0])
        return [ins[0], F32, F32], [ins[0], F32, F32]
    return infer_type


def _passthrough_shape(float_name):
    float_op = get_op(float_name)

    def infer_shape(p, ins, outs):
        new, out = float_op.infer_shape(p, [ins[0]], [outs[0]] * float_op.num_outputs(p))
        return [new[0], merge(ins[1], (1,)), merge(ins[2], (1,))], [out[0], (1,), (1,)]
    return infer_shape


def _register_passthrough(name, float_name, values, params=None):
    """An op on the int values (values(p, data) -> same-dtype tensor) keeping the range."""
    def forward(p, data, lo, hi):
        check_quantized(name, 'data', np_dtype(str(data.dtype).split('.')[-1]))
        return values(p, data), lo.reshape(1).float(), hi.reshape(1).float()
    forward.__doc__ = values.__doc__
    float_params = dict(get_op(float_name).params)
    register(OpDef(name, forward, params=params if params is not None else float_params,
                   inputs=('data', 'min_data', 'max_data'),
                   outputs=('output', 'min_output', 'max_output'), differentiable=False,
                   infer_shape=_passthrough_shape(float_name),
                   infer_type=_passthrough_type(name)))


def _relu(p, data):
    """relu of the int values (the only act_type MXNet quantizes)."""
    require(p.act_type == 'relu', '_contrib_quantized_act: act_type=%s is not supported, only '
            'relu', p.act_type)
    return torch.clamp(data, min=0)


def _flatten(p, data):
    """(N, d1, d2, ...) -> (N, d1*d2*...)."""
    return data.reshape(data.shape[0], -1)


def _pool(p, data):
    """Pooling of the int values; avg rounds half to even."""
    out = get_op('Pooling').forward(p, data.float())
    out = out[0] if isinstance(out, tuple) else out
    return saturate(out, data.dtype)


_register_passthrough('_contrib_quantized_act', 'Activation', _relu)
_register_passthrough('_contrib_quantized_flatten', 'Flatten', _flatten)
_register_passthrough('_contrib_quantized_pooling', 'Pooling', _pool)


def _embedding(p, data, weight, lo, hi):
    """Rows of the int8 weight; the weight's range passes through."""
    out = get_op('Embedding').forward(type(p)(p, sparse_grad=False), data, weight.float())
    return out.to(weight.dtype), lo.reshape(1).float(), hi.reshape(1).float()


def _embedding_shape(p, ins, outs):
    new, out = get_op('Embedding').infer_shape(p, list(ins[:2]), outs[:1])
    return list(new) + [merge(s, (1,)) for s in ins[2:]], [out[0], (1,), (1,)]


def _embedding_type(p, ins, outs):
    check_quantized('_contrib_quantized_embedding', 'weight', ins[1])
    weight = ins[1] or np_dtype('int8')
    return [ins[0] or F32, weight, F32, F32], [weight, F32, F32]


register(OpDef('_contrib_quantized_embedding', _embedding,
               params=dict(get_op('Embedding').params),
               inputs=('data', 'weight', 'min_weight', 'max_weight'),
               outputs=('output', 'min_output', 'max_output'), differentiable=False,
               infer_shape=_embedding_shape, infer_type=_embedding_type))


# ---------------------------------------------------------------------------------------------
# concat, elemwise_add, elemwise_mul, batch_norm: over one output range
# ---------------------------------------------------------------------------------------------
def _value(q, lo, hi):
    """float value of int8 / uint8 steps over [lo, hi] (MKL-DNN's 127.5 / 255.5 steps)."""
    return q.float() / steps_per_unit(MKLDNN_STEPS[q.dtype], real_range(lo, hi))


def _concat(p, *inputs):
    """Inputs over the widest range (min of mins, max of maxs): int8 if any input is, else
    uint8; an input over another range is rescaled to it."""
    n = p.num_args
    data, ranges = inputs[:n], inputs[n:]
    los = torch.cat([r.reshape(1).float() for r in ranges[0::2]])
    his = torch.cat([r.reshape(1).float() for r in ranges[1::2]])
    lo, hi = los.min().reshape(1), his.max().reshape(1)
    dtype = torch.int8 if any(d.dtype == torch.int8 for d in data) else torch.uint8
    real = real_range(lo, hi)
    parts = []
    for d, dlo, dhi in zip(data, ranges[0::2], ranges[1::2]):
        if d.dtype == dtype and torch.equal(real_range(dlo, dhi), real):
            parts.append(d)
        else:
            parts.append(saturate(_value(d, dlo, dhi) * steps_per_unit(MKLDNN_STEPS[dtype],
                                                                       real), dtype))
    return torch.cat(parts, dim=p.dim), lo, hi


def _concat_inputs(p):
    names = tuple('arg%d' % i for i in range(p.num_args))
    ranges = []
    for n in names:
        ranges += [n + '_min', n + '_max']
    return names + tuple(ranges)


def _concat_shape(p, ins, outs):
    n = p.num_args
    concat = get_op('Concat')
    new, out = concat.infer_shape(p, list(ins[:n]), outs[:1])
    return list(new) + [merge(s, (1,)) for s in ins[n:]], [out[0], (1,), (1,)]


def _concat_type(p, ins, outs):
    n = p.num_args
    for i, t in enumerate(ins[:n]):
        check_quantized('_contrib_quantized_concat', 'arg%d' % i, t)
    known = [t for t in ins[:n] if t is not None]
    out = None
    if len(known) == n:
        out = np_dtype('int8') if np_dtype('int8') in known else np_dtype('uint8')
    return list(ins[:n]) + [F32] * (2 * n), [out, F32, F32]


register(OpDef('_contrib_quantized_concat', _concat,
               params={'num_args': Int(lower=1, count=True), 'dim': Int(1)},
               inputs=_concat_inputs, outputs=('output', 'min_output', 'max_output'),
               differentiable=False, infer_shape=_concat_shape, infer_type=_concat_type))

_BINARY = ('lhs', 'rhs', 'lhs_min', 'lhs_max', 'rhs_min', 'rhs_max')


def _binary_shape(p, ins, outs):
    shape = merge(merge(ins[0], ins[1]), outs[0])
    return [shape, shape] + [merge(s, (1,)) for s in ins[2:]], [shape, (1,), (1,)]


def _binary_type(op, out):
    def infer_type(p, ins, outs):
        check_quantized(op, 'lhs', ins[0])
        check_quantized(op, 'rhs', ins[1])
        return list(ins[:2]) + [F32] * 4, [out(p, ins, outs), F32, F32]
    return infer_type


def _elemwise_add(p, lhs, rhs, lhs_min, lhs_max, rhs_min, rhs_max):
    """lhs + rhs over the calibrated range (uint8 where both inputs are, else int8), else as
    int32 over the sum of the two ranges; in float32, as the wheel's MKL-DNN sum."""
    dtype = torch.uint8 if lhs.dtype == rhs.dtype == torch.uint8 else torch.int8
    if calibrated(p):
        lo, hi = _f32(p.min_calib_range), _f32(p.max_calib_range)
        out_steps = steps_per_unit(MKLDNN_STEPS[dtype], real_range(lo, hi))
        values = _value(lhs, lhs_min, lhs_max) + _value(rhs, rhs_min, rhs_max)
        return saturate(values * out_steps, dtype), lo.to(lhs.device), hi.to(lhs.device)
    l_real, r_real = real_range(lhs_min, lhs_max), real_range(rhs_min, rhs_max)
    real = l_real + r_real
    out_steps = steps_per_unit(INT32_RANGE, real)
    values = lhs.float() * (l_real / MKLDNN_STEPS[lhs.dtype] * out_steps) + \
        rhs.float() * (r_real / MKLDNN_STEPS[rhs.dtype] * out_steps)
    q = torch.round(values.double()).clamp(-INT32_RANGE, INT32_RANGE)
    return q.to(torch.int32), -real, real.clone()


def _add_type(p, ins, outs):
    if not calibrated(p):
        return I32
    return np_dtype('uint8') if ins[0] == ins[1] == np_dtype('uint8') else np_dtype('int8')


register(OpDef('_contrib_quantized_elemwise_add', _elemwise_add, params=dict(_CALIB),
               inputs=_BINARY, outputs=('output', 'min_output', 'max_output'),
               differentiable=False, infer_shape=_binary_shape,
               infer_type=_binary_type('_contrib_quantized_elemwise_add', _add_type)))


def _elemwise_mul(p, lhs, rhs, lhs_min, lhs_max, rhs_min, rhs_max):
    """The int32 product, its step the product of the inputs' steps; in float32
    (enable_float_output) or over the calibrated range (int8) where asked."""
    per_step = step(lhs.dtype, lhs_min, lhs_max) * step(rhs.dtype, rhs_min, rhs_max)
    prod = lhs.double() * rhs.double()
    if p.enable_float_output:
        lo, hi = int32_range(per_step)
        return (prod * per_step.double()).float(), lo, hi
    if calibrated(p):
        lo, hi = torch.tensor([p.min_calib_range]), torch.tensor([p.max_calib_range])
        real = real_range(lo, hi)
        q = saturate(prod * (per_step * STEPS[torch.int8] / real).double(), torch.int8)
        return q, -real, real.clone()
    lo, hi = int32_range(per_step)
    return prod.to(torch.int32), lo, hi


def _mul_type(p, ins, outs):
    if p.enable_float_output:
        return F32
    return np_dtype('int8') if calibrated(p) else I32


register(OpDef('_contrib_quantized_elemwise_mul', _elemwise_mul,
               params=dict(_CALIB, enable_float_output=Bool(False)),
               inputs=_BINARY, outputs=('output', 'min_output', 'max_output'),
               differentiable=False, infer_shape=_binary_shape,
               infer_type=_binary_type('_contrib_quantized_elemwise_mul', _mul_type)))


def _batch_norm(p, data, gamma, beta, moving_mean, moving_var, lo, hi):
    """Inference batch norm (moving statistics) of int8/uint8 data, as int8 over the
    calibrated output range."""
    require(calibrated(p), '_contrib_quantized_batch_norm: min_calib_range and '
            'max_calib_range are required')
    x = _value(data, lo, hi)
    # the wheel's kernel scales by gamma whatever fix_gamma says
    out = get_op('BatchNorm').forward(type(p)(p, fix_gamma=False), x, gamma.float(),
                                      beta.float(), moving_mean.float(), moving_var.float(),
                                      train=False)[0]
    real = real_range(torch.tensor([p.min_calib_range]), torch.tensor([p.max_calib_range]))
    q = saturate(out * steps_per_unit(MKLDNN_STEPS[torch.int8], real), torch.int8)
    return q, -real, real.clone()


def _bn_shape(p, ins, outs):
    bn = get_op('BatchNorm')
    new, out = bn.infer_shape(p, list(ins[:5]), [outs[0], None, None])
    return list(new) + [merge(s, (1,)) for s in ins[5:]], [out[0], (1,), (1,)]


def _bn_type(p, ins, outs):
    check_quantized('_contrib_quantized_batch_norm', 'data', ins[0])
    return [ins[0]] + [F32] * 6, [np_dtype('int8'), F32, F32]


_QUANTIZED_BN = OpDef('_contrib_quantized_batch_norm', _batch_norm,
                      params=dict(get_op('BatchNorm').params, **_CALIB),
                      inputs=('data', 'gamma', 'beta', 'moving_mean', 'moving_var', 'min_data',
                              'max_data'),
                      outputs=('output', 'min_output', 'max_output'), differentiable=False,
                      infer_shape=_bn_shape, infer_type=_bn_type)
# MXNet's input order, with the moving statistics aux states of the graph (as MXNet)
_QUANTIZED_BN.mutated_args = ('moving_mean', 'moving_var')
register(_QUANTIZED_BN)


# ---------------------------------------------------------------------------------------------
# rnn: uint8 data from quantize_asym, float parameters and states, float outputs
# ---------------------------------------------------------------------------------------------
def _rnn(p, data, parameters, state, state_cell, scale, shift):
    """The LSTM of the data x = (q - shift) / scale (quantize_asym's uint8), in float32 (the
    wheel's MKL-DNN kernel also quantizes the weights; this computes with the float ones)."""
    require(p.mode == 'lstm', '_contrib_quantized_rnn: mode=%s is not supported, only lstm',
            p.mode)
    x = (data.float() - shift.float().reshape(1)) / scale.float().reshape(1)
    return get_op('RNN').forward(p, x, parameters.float(), state.float(), state_cell.float(),
                                 train=False)


def _rnn_outputs(p):
    # MXNet's name of the last cell state output is spelled so
    return ('output', 'state_output', 'statecell_ouput') if p.state_outputs else ('output',)


def _rnn_shape(p, ins, outs):
    rnn = get_op('RNN')
    new, out = rnn.infer_shape(p, list(ins[:4]), list(outs))
    return list(new) + [merge(s, (1,)) for s in ins[4:]], list(out)


def _rnn_type(p, ins, outs):
    check_quantized('_contrib_quantized_rnn', 'data', ins[0])
    return [ins[0] or np_dtype('uint8')] + [F32] * 5, [F32] * len(outs)


register(OpDef('_contrib_quantized_rnn', _rnn, params=dict(get_op('RNN').params),
               inputs=('data', 'parameters', 'state', 'state_cell', 'min_data', 'max_data'),
               outputs=_rnn_outputs, differentiable=False, infer_shape=_rnn_shape,
               infer_type=_rnn_type))


# ---------------------------------------------------------------------------------------------
# what the quantization pass (mx.contrib.quantization) makes of float operators
# ---------------------------------------------------------------------------------------------
QUANTIZE, REQUANTIZE, DEQUANTIZE = '_contrib_quantize_v2', '_contrib_requantize', \
    '_contrib_dequantize'

# float op -> (quantized op, inputs to quantize (None: every argument), its int32 output is
# requantized, quantized always (else only where int8 flows through it: 'maybe'), it takes its
# calibrated output range itself)
_FORMS = {
    'Convolution': ('_contrib_quantized_conv', None, True, True, False),
    'FullyConnected': ('_contrib_quantized_fully_connected', None, True, True, False),
    'Embedding': ('_contrib_quantized_embedding', (1,), False, False, False),
    'Pooling': ('_contrib_quantized_pooling', (0,), False, False, False),
    'Activation': ('_contrib_quantized_act', (0,), False, False, False),
    'Flatten': ('_contrib_quantized_flatten', (0,), False, False, False),
    'Concat': ('_contrib_quantized_concat', None, False, False, False),
    'elemwise_add': ('_contrib_quantized_elemwise_add', (0, 1), True, False, False),
    'elemwise_mul': ('_contrib_quantized_elemwise_mul', (0, 1), True, False, False),
    'BatchNorm': ('_contrib_quantized_batch_norm', (0,), False, False, True),
}
# operators whose outputs MXNet names (the others' outputs go by index in names the
# quantization pass makes, e.g. `tanh0_0_quantize` but `relu0_output_quantize`)
_NAMED_OUTPUTS = frozenset([
    'Activation', 'BatchNorm', 'BilinearSampler', 'Concat', 'Convolution', 'Correlation',
    'Crop', 'Deconvolution', 'Dropout', 'FullyConnected', 'GridGenerator',
    'IdentityAttachKLSparseReg', 'InstanceNorm', 'L2Normalization', 'LRN', 'LayerNorm',
    'LeakyReLU', 'LinearRegressionOutput', 'LogisticRegressionOutput', 'MAERegressionOutput',
    'MakeLoss', 'Pad', 'Pooling', 'RNN', 'ROIPooling', 'SVMOutput', 'SequenceLast',
    'SequenceMask', 'SequenceReverse', 'SliceChannel', 'SoftmaxActivation', 'SoftmaxOutput',
    'SpatialTransformer', 'SwapAxis', 'UpSampling', 'elemwise_add', 'log_softmax', 'softmax',
])


def quantized_form(op, p):
    """(quantized OpDef, indices of the inputs to quantize, requantize?, always?, calibrated
    output?) of a float operator with params p, or None where MXNet's pass leaves it float."""
    form = _FORMS.get(op.name)
    if form is None:
        return None
    if op.name == 'Activation' and p.act_type != 'relu':
        return None
    if op.name == 'Pooling' and (p.pool_type not in ('max', 'avg') or len(p.kernel) not in (0, 2)):
        return None
    return (get_op(form[0]),) + form[1:]


def output_tag(op, p, index):
    """How MXNet's pass names output `index` of a node in the names of nodes it adds after it:
    by the output's name for operators that name their outputs (MXNet's legacy layers and a
    few others), by its index for the others."""
    if op.name in _NAMED_OUTPUTS:
        return op.output_names(p)[index]
    return str(index)
