"""ONNX graph -> (Symbol, arg_params, aux_params).

Each ONNX node becomes the mxtorch operator computing the same thing (the table `_OPS` at the
end, one small function per ONNX operator); an ONNX operator without one is an MXNetError naming
it. Values are Symbols, constants (numpy arrays: initializers, Constant nodes and what folds from
them) or shape vectors (what `Shape` of a tensor becomes: per dimension an int, or
('dim', tensor name, axis) for a dimension only known at run time), so the shape arithmetic
torch.onnx writes for a dynamic batch (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) becomes
one Reshape with MXNet's special values (0: keep that dimension).
"""
import re

import numpy as np

from ...base import MXNetError
from ... import symbol as S


class _Dims(list):
    """A shape vector: ints and ('dim', tensor name, axis) entries."""


def _name(onnx_name, taken):
    base = re.sub(r'[^0-9A-Za-z_]', '_', onnx_name).strip('_') or 'node'
    base = re.sub(r'_output(_0)?$', '', base) or base
    name, n = base, 1
    while name in taken:
        name, n = '%s%d' % (base, n), n + 1
    taken.add(name)
    return name


class Importer:
    def __init__(self, model):
        import onnx
        from onnx import numpy_helper
        self.onnx = onnx
        self.opset = max([o.version for o in model.opset_import if o.domain in ('', 'ai.onnx')]
                         or [1])
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:          # noqa: BLE001 (ranks are then looked for elsewhere)
            pass
        self.graph = model.graph
        self.values = {i.name: numpy_helper.to_array(i) for i in self.graph.initializer}
        self.origin = {i.name: i.name for i in self.graph.initializer}   # constant -> its name
        self.info = {}                                  # tensor name -> [int or None]
        self.symbolic = {}                              # tensor name -> [dim_param or None]
        for v in list(self.graph.input) + list(self.graph.value_info) + list(self.graph.output):
            dims = v.type.tensor_type.shape.dim
            self.info[v.name] = [d.dim_value if d.HasField('dim_value') else None for d in dims]
            self.symbolic[v.name] = [d.dim_param or None for d in dims]
        self.arg_params, self.aux_params = {}, {}
        self.taken = set()

    # ---- values ------------------------------------------------------------------------------
    def symbol(self, name, aux=False):
        """The ONNX value `name` as a Symbol (a constant becomes a parameter variable)."""
        value = self.values[name]
        if isinstance(value, S.Symbol):
            return value
        if isinstance(value, _Dims):
            raise MXNetError('ONNX import: the shape vector %r is used as a tensor' % name)
        origin = self.origin.get(name)
        var_name = origin if origin and origin not in self.taken else _name(name, self.taken)
        self.taken.add(var_name)
        from ... import ndarray as nd
        (self.aux_params if aux else self.arg_params)[var_name] = nd.array(
            value, dtype=value.dtype if value.dtype != np.float64 else np.float32)
        sym = S.var(var_name, shape=value.shape)
        self.values[name] = sym
        return sym

    def const(self, name, what):
        value = self.values.get(name)
        if not isinstance(value, np.ndarray):
            raise MXNetError('ONNX import: %s must be a constant (an initializer or Constant '
                             'node), %r is computed' % (what, name))
        return value

    def shape(self, name):
        value = self.values.get(name)
        if isinstance(value, np.ndarray):
            return list(value.shape)
        if name in self.info:
            return self.info[name]
        raise MXNetError('ONNX import: the shape of %r is unknown (run onnx shape inference on '
                         'the model first)' % name)

    # ---- the graph -----------------------------------------------------------------------------
    def run(self):
        for inp in self.graph.input:
            if inp.name not in self.values:
                sym = S.var(inp.name)
                self.taken.add(inp.name)
                self.values[inp.name] = sym
        for node in self.graph.node:
            handler = _OPS.get(node.op_type) if node.domain in ('', 'ai.onnx') else None
            if handler is None:
                raise MXNetError('ONNX import: operator %s%s (node %r) has no mxtorch '
                                 'equivalent' % (node.domain + '.' if node.domain else '',
                                                 node.op_type, node.name or node.output[0]))
            attrs = {a.name: self.onnx.helper.get_attribute_value(a) for a in node.attribute}
            attrs = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
            inputs = list(node.input)
            while inputs and inputs[-1] == '':
                inputs.pop()
            if len([o for o in node.output if o]) > 1 and node.op_type != 'Dropout':
                raise MXNetError('ONNX import: %s %r with %d outputs is not supported'
                                 % (node.op_type, node.name, len(node.output)))
            value = handler(self, inputs, attrs, _name(node.output[0], self.taken))
            self.values[node.output[0]] = value
            if isinstance(value, np.ndarray) and inputs and inputs[0] in self.origin and \
                    getattr(self.values.get(inputs[0]), 'size', -1) == value.size:
                self.origin[node.output[0]] = self.origin[inputs[0]]   # a reshaped parameter
        heads = [self.symbol(o.name) for o in self.graph.output]
        sym = heads[0] if len(heads) == 1 else S.Group(heads)
        return sym, self.arg_params, self.aux_params


# ---- helpers for the table -------------------------------------------------------------------------
def _ints(values):
    return tuple(int(v) for v in values)


def _symmetric_pads(attrs, what):
    if attrs.get('auto_pad', 'NOTSET') not in ('NOTSET', 'VALID'):
        raise MXNetError('ONNX import: %s auto_pad=%s is not supported; export with explicit '
                         'pads' % (what, attrs['auto_pad']))
    pads = list(attrs.get('pads', []))
    half = len(pads) // 2
    if pads[:half] != pads[half:]:
        raise MXNetError('ONNX import: %s with asymmetric pads %s is not supported'
                         % (what, pads))
    return _ints(pads[:half])


def _binary(sym_fn, np_fn, scalar_fn):
    def handler(imp, inputs, attrs, name):
        a, b = (imp.values[i] for i in inputs)
        if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
            return np_fn(a, b).astype(np.result_type(a, b))
        for x, y, flip in ((a, b, False), (b, a, True)):
            if isinstance(y, np.ndarray) and y.size == 1 and isinstance(x, S.Symbol):
                return scalar_fn(x, float(y.reshape(())), flip)
        return sym_fn(imp.symbol(inputs[0]), imp.symbol(inputs[1]), name=name)
    return handler


def _unary(make):
    return lambda imp, inputs, attrs, name: make(imp.symbol(inputs[0]), attrs, name)


# ---- operators -------------------------------------------------------------------------------------
def _constant(imp, inputs, attrs, name):
    from onnx import numpy_helper
    if 'value' in attrs:
        return numpy_helper.to_array(attrs['value'])
    for key in ('value_float', 'value_int'):
        if key in attrs:
            return np.asarray(attrs[key], dtype=np.float32 if key == 'value_float' else np.int64)
    for key in ('value_floats', 'value_ints'):
        if key in attrs:
            return np.asarray(attrs[key], dtype=np.float32 if key == 'value_floats' else np.int64)
    raise MXNetError('ONNX import: Constant %r has no supported value attribute' % name)


def _shape(imp, inputs, attrs, name):
    dims = imp.shape(inputs[0])
    value = imp.values[inputs[0]]
    if isinstance(value, np.ndarray):
        return np.asarray(value.shape, dtype=np.int64)
    start, end = attrs.get('start', 0), attrs.get('end', len(dims))
    return _Dims([d if d is not None else ('dim', inputs[0], k)
                  for k, d in enumerate(dims)][start:end])


def _gather(imp, inputs, attrs, name):
    data, idx = (imp.values[i] for i in inputs)
    if isinstance(data, _Dims) and isinstance(idx, np.ndarray):   # a scalar: kept a 1-vector
        return _Dims(data[int(i)] for i in idx.reshape(-1))
    if isinstance(data, np.ndarray) and isinstance(idx, np.ndarray):
        return np.take(data, idx, axis=attrs.get('axis', 0))
    if isinstance(idx, np.ndarray) and idx.ndim == 1 and attrs.get('axis', 0) == 0 \
            and isinstance(data, S.Symbol):
        return S.take(data, imp.symbol(inputs[1]), axis=0, name=name)
    raise MXNetError('ONNX import: Gather %r on a computed index is not supported' % name)


def _unsqueeze(imp, inputs, attrs, name):
    value = imp.values[inputs[0]]
    axes = attrs['axes'] if 'axes' in attrs else list(imp.const(inputs[1], 'Unsqueeze axes'))
    if isinstance(value, _Dims):                 # a Gather'd scalar dimension -> 1-vector
        return value
    if isinstance(value, np.ndarray):
        for a in sorted(int(a) for a in axes):
            value = np.expand_dims(value, a)
        return value
    out = imp.symbol(inputs[0])
    for a in sorted(int(a) for a in axes):
        out = S.expand_dims(out, axis=a)
    return out


def _squeeze(imp, inputs, attrs, name):
    value = imp.values[inputs[0]]
    axes = attrs.get('axes') or (list(imp.const(inputs[1], 'Squeeze axes'))
                                 if len(inputs) > 1 else None)
    if isinstance(value, np.ndarray):
        return np.squeeze(value, axis=tuple(int(a) for a in axes) if axes else None)
    return S.squeeze(imp.symbol(inputs[0]), axis=_ints(axes) if axes else None, name=name)


def _concat(imp, inputs, attrs, name):
    values = [imp.values[i] for i in inputs]
    if any(isinstance(v, _Dims) for v in values):
        out = _Dims()
        for v in values:
            out.extend(v if isinstance(v, _Dims) else [int(x) for x in v.reshape(-1)])
        return out
    if all(isinstance(v, np.ndarray) for v in values):
        return np.concatenate(values, axis=attrs['axis'])
    return S.Concat(*[imp.symbol(i) for i in inputs], dim=attrs['axis'], name=name)


def _slice(imp, inputs, attrs, name):
    value = imp.values[inputs[0]]
    starts, ends = (imp.const(inputs[k], 'Slice bounds') for k in (1, 2))
    axes = imp.const(inputs[3], 'Slice axes') if len(inputs) > 3 else range(len(starts))
    steps = imp.const(inputs[4], 'Slice steps') if len(inputs) > 4 else [1] * len(starts)
    if isinstance(value, (_Dims, np.ndarray)):
        index = [slice(None)] * (1 if isinstance(value, _Dims) else value.ndim)
        for s, e, a, st in zip(starts, ends, axes, steps):
            index[int(a)] = slice(int(s), int(min(e, 2 ** 62)), int(st))
        return _Dims(value[index[0]]) if isinstance(value, _Dims) else value[tuple(index)]
    out = imp.symbol(inputs[0])
    for s, e, a, st in zip(starts, ends, axes, steps):
        e = None if e >= 2 ** 31 else int(e)
        out = S.slice_axis(out, axis=int(a), begin=int(s), end=e) if st == 1 else \
            S.slice(out, begin=(None,) * int(a) + (int(s),), end=(None,) * int(a) + (e,),
                    step=(None,) * int(a) + (int(st),))
    return out


def _reshape(imp, inputs, attrs, name):
    value, target = imp.values[inputs[0]], imp.values[inputs[1]]
    if isinstance(value, np.ndarray) and isinstance(target, np.ndarray):
        return value.reshape([d if d != 0 else value.shape[i] for i, d in enumerate(target)])
    own = imp.symbolic.get(inputs[0], [])
    shape, unresolved = [], []
    for axis, d in enumerate(target if isinstance(target, _Dims) else list(target)):
        if isinstance(d, tuple):           # a run-time dimension: the same of the input, or -1
            param = (imp.symbolic.get(d[1]) or [None] * (d[2] + 1))[d[2]]
            same = (d[1], d[2]) == (inputs[0], axis) or \
                (param is not None and axis < len(own) and own[axis] == param)
            if not same:
                unresolved.append((axis, d))
            d = 0 if same else -1
        shape.append(int(d))
    if unresolved and (len(unresolved) > 1 or shape.count(-1) > 1):
        raise MXNetError('ONNX import: Reshape %r takes run-time dimensions %s of other '
                         'tensors, which mxtorch\'s Reshape cannot express'
                         % (name, ['%s[%d]' % (t, a) for _, (_, t, a) in unresolved]))
    if attrs.get('allowzero', 0) and 0 in shape:
        raise MXNetError('ONNX import: Reshape %r with allowzero=1 is not supported' % name)
    return S.Reshape(imp.symbol(inputs[0]), shape=tuple(shape), name=name)


def _conv(imp, inputs, attrs, name):
    weight = imp.shape(inputs[1])
    kernel = _ints(attrs.get('kernel_shape', weight[2:]))
    return S.Convolution(imp.symbol(inputs[0]), imp.symbol(inputs[1]),
                         *([imp.symbol(inputs[2])] if len(inputs) > 2 else []),
                         kernel=kernel, stride=_ints(attrs.get('strides', (1,) * len(kernel))),
                         dilate=_ints(attrs.get('dilations', (1,) * len(kernel))),
                         pad=_symmetric_pads(attrs, 'Conv') or (0,) * len(kernel),
                         num_filter=int(weight[0]), num_group=int(attrs.get('group', 1)),
                         no_bias=len(inputs) < 3, name=name)


def _pool(pool_type):
    def handler(imp, inputs, attrs, name):
        kernel = _ints(attrs['kernel_shape'])
        if any(d != 1 for d in attrs.get('dilations', [])):
            raise MXNetError('ONNX import: dilated %s pooling is not supported' % pool_type)
        extra = {'count_include_pad': bool(attrs.get('count_include_pad', 0))} \
            if pool_type == 'avg' else {}
        return S.Pooling(imp.symbol(inputs[0]), kernel=kernel, pool_type=pool_type,
                         stride=_ints(attrs.get('strides', (1,) * len(kernel))),
                         pad=_symmetric_pads(attrs, 'Pooling') or (0,) * len(kernel),
                         pooling_convention='full' if attrs.get('ceil_mode') else 'valid',
                         name=name, **extra)
    return handler


def _global_pool(pool_type):
    return _unary(lambda x, a, name: S.Pooling(x, kernel=(1, 1), global_pool=True,
                                               pool_type=pool_type, name=name))


def _gemm(imp, inputs, attrs, name):
    alpha, beta = attrs.get('alpha', 1.0), attrs.get('beta', 1.0)
    b = imp.values[inputs[1]]
    if isinstance(b, np.ndarray) and not attrs.get('transA', 0) and alpha == 1.0:
        weight = b if attrs.get('transB', 0) else np.ascontiguousarray(b.T)
        imp.values[inputs[1]] = weight
        c = imp.values.get(inputs[2]) if len(inputs) > 2 else None
        bias_ok = isinstance(c, np.ndarray) and c.shape == (weight.shape[0],) and beta == 1.0
        out = S.FullyConnected(imp.symbol(inputs[0]), imp.symbol(inputs[1]),
                               *([imp.symbol(inputs[2])] if bias_ok else []),
                               num_hidden=int(weight.shape[0]), no_bias=not bias_ok, name=name)
        if len(inputs) > 2 and not bias_ok:
            out = S.broadcast_add(out, imp.symbol(inputs[2]) * beta)
        return out
    out = S.dot(imp.symbol(inputs[0]), imp.symbol(inputs[1]),
                transpose_a=bool(attrs.get('transA', 0)),
                transpose_b=bool(attrs.get('transB', 0))) * alpha
    if len(inputs) > 2:
        out = S.broadcast_add(out, imp.symbol(inputs[2]) * beta, name=name)
    return out


def _matmul(imp, inputs, attrs, name):
    b = imp.values[inputs[1]]
    if isinstance(b, np.ndarray) and b.ndim == 2:
        imp.values[inputs[1]] = np.ascontiguousarray(b.T)
        return S.FullyConnected(imp.symbol(inputs[0]), imp.symbol(inputs[1]), no_bias=True,
                                num_hidden=int(b.shape[1]), flatten=False, name=name)
    ranks = [len(imp.shape(i)) for i in inputs[:2]]
    if ranks == [2, 2]:
        return S.dot(imp.symbol(inputs[0]), imp.symbol(inputs[1]), name=name)
    if ranks[0] == ranks[1] == 3:
        return S.batch_dot(imp.symbol(inputs[0]), imp.symbol(inputs[1]), name=name)
    raise MXNetError('ONNX import: MatMul %r of ranks %s is not supported' % (name, ranks))


def _batchnorm(imp, inputs, attrs, name):
    x, gamma, beta = (imp.symbol(i) for i in inputs[:3])
    mean, var = (imp.symbol(i, aux=True) for i in inputs[3:5])
    return S.BatchNorm(x, gamma, beta, mean, var, eps=attrs.get('epsilon', 1e-5),
                       momentum=attrs.get('momentum', 0.9), fix_gamma=False, name=name)


def _softmax(log):
    def handler(imp, inputs, attrs, name):
        rank = len(imp.shape(inputs[0]))
        axis = attrs.get('axis', -1 if imp.opset >= 13 else 1)
        if imp.opset < 13 and axis % rank != rank - 1:
            raise MXNetError('ONNX import: Softmax %r (opset %d) flattens from axis %d, which '
                             'is not supported' % (name, imp.opset, axis))
        fn = S.log_softmax if log else S.softmax
        return fn(imp.symbol(inputs[0]), axis=int(axis), name=name)
    return handler


def _flatten(imp, inputs, attrs, name):
    axis = attrs.get('axis', 1)
    if axis != 1:
        return S.Reshape(imp.symbol(inputs[0]), shape=(0,) * axis + (-1,), name=name) \
            if axis > 1 else S.Reshape(imp.symbol(inputs[0]), shape=(1, -1), name=name)
    return S.Flatten(imp.symbol(inputs[0]), name=name)


def _reduce(mx_fn):
    def handler(imp, inputs, attrs, name):
        axes = attrs.get('axes')
        if axes is None and len(inputs) > 1:
            axes = list(imp.const(inputs[1], 'reduction axes'))
        kwargs = {'axis': _ints(axes)} if axes else {}
        return mx_fn(imp.symbol(inputs[0]), keepdims=bool(attrs.get('keepdims', 1)),
                     name=name, **kwargs)
    return handler


def _clip(imp, inputs, attrs, name):
    lo = attrs.get('min', float(imp.const(inputs[1], 'Clip min')) if len(inputs) > 1 else None)
    hi = attrs.get('max', float(imp.const(inputs[2], 'Clip max')) if len(inputs) > 2 else None)
    lo = -3.4e38 if lo is None else lo
    hi = 3.4e38 if hi is None else hi
    return S.clip(imp.symbol(inputs[0]), a_min=lo, a_max=hi, name=name)


def _pad(imp, inputs, attrs, name):
    pads = list(attrs['pads']) if 'pads' in attrs else list(imp.const(inputs[1], 'Pad pads'))
    value = attrs.get('value', float(imp.const(inputs[2], 'Pad value'))
                      if len(inputs) > 2 else 0.0)
    half = len(pads) // 2
    width = tuple(int(v) for pair in zip(pads[:half], pads[half:]) for v in pair)
    mode = {'constant': 'constant', 'edge': 'edge', 'reflect': 'reflect'}[attrs.get('mode',
                                                                                    'constant')]
    return S.Pad(imp.symbol(inputs[0]), mode=mode, pad_width=width, constant_value=value,
                 name=name)


def _cast(imp, inputs, attrs, name):
    from onnx import helper
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(attrs['to']))
    value = imp.values[inputs[0]]
    if isinstance(value, np.ndarray):
        return value.astype(dtype)
    if isinstance(value, _Dims):
        return value
    return S.Cast(imp.symbol(inputs[0]), dtype=dtype.name, name=name)


def _identity(imp, inputs, attrs, name):
    value = imp.values[inputs[0]]
    return value if not isinstance(value, S.Symbol) else S.identity(value, name=name)


def _activation(kind):
    return _unary(lambda x, a, name: S.Activation(x, act_type=kind, name=name))


def _scalar(op):
    def apply(x, c, flip):
        return {'+': lambda: x + c, '*': lambda: x * c,
                '-': lambda: c - x if flip else x - c, '/': lambda: c / x if flip else x / c,
                '**': lambda: c ** x if flip else x ** c}[op]()
    return apply


_OPS = {
    'Constant': _constant,
    'Shape': _shape,
    'Gather': _gather,
    'Unsqueeze': _unsqueeze,
    'Squeeze': _squeeze,
    'Concat': _concat,
    'Slice': _slice,
    'Reshape': _reshape,
    'Cast': _cast,
    'Identity': _identity,
    'Dropout': lambda imp, inputs, attrs, name: imp.values[inputs[0]],
    'Conv': _conv,
    'MaxPool': _pool('max'),
    'AveragePool': _pool('avg'),
    'GlobalAveragePool': _global_pool('avg'),
    'GlobalMaxPool': _global_pool('max'),
    'Gemm': _gemm,
    'MatMul': _matmul,
    'BatchNormalization': _batchnorm,
    'Flatten': _flatten,
    'Softmax': _softmax(False),
    'LogSoftmax': _softmax(True),
    'Relu': _activation('relu'),
    'Sigmoid': _activation('sigmoid'),
    'Tanh': _activation('tanh'),
    'Softplus': _activation('softrelu'),
    'LeakyRelu': _unary(lambda x, a, name: S.LeakyReLU(x, act_type='leaky',
                                                       slope=a.get('alpha', 0.01), name=name)),
    'Elu': _unary(lambda x, a, name: S.LeakyReLU(x, act_type='elu', slope=a.get('alpha', 1.0),
                                                 name=name)),
    'Exp': _unary(lambda x, a, name: S.exp(x, name=name)),
    'Log': _unary(lambda x, a, name: S.log(x, name=name)),
    'Sqrt': _unary(lambda x, a, name: S.sqrt(x, name=name)),
    'Neg': _unary(lambda x, a, name: S.negative(x, name=name)),
    'Abs': _unary(lambda x, a, name: S.abs(x, name=name)),
    'Transpose': _unary(lambda x, a, name: S.transpose(x, axes=_ints(a['perm']), name=name)
                        if 'perm' in a else S.transpose(x, name=name)),
    'Add': _binary(S.broadcast_add, np.add, _scalar('+')),
    'Sub': _binary(S.broadcast_sub, np.subtract, _scalar('-')),
    'Mul': _binary(S.broadcast_mul, np.multiply, _scalar('*')),
    'Div': _binary(S.broadcast_div, np.divide, _scalar('/')),
    'Pow': _binary(S.broadcast_power, np.power, _scalar('**')),
    'ReduceMean': _reduce(S.mean),
    'ReduceSum': _reduce(S.sum),
    'ReduceMax': _reduce(S.max),
    'ReduceMin': _reduce(S.min),
    'Clip': _clip,
    'Pad': _pad,
}
