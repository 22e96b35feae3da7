"""Automatic mixed precision, as MXNet 1.9.1's mx.contrib.amp.

`init()` makes the operator functions of mx.sym and mx.nd cast their inputs per AMP's lists
(lists/): low-precision ops to float16/bfloat16, precision-sensitive ops to float32, ops
combining arrays to the widest type among them; loss outputs carry the loss scale.
`convert_symbol` / `convert_model` / `convert_hybrid_block` / `convert_bucketing_module`
rewrite a float32 graph the same way for inference, with amp_cast nodes.
`init_trainer` + `scale_loss` give a Gluon Trainer dynamic loss scaling (an update whose
gradients overflow is skipped and the scale halved).
"""
import contextlib
import functools
import logging

import numpy as np

from ... import ndarray, symbol
from ...base import MXNetError, bfloat16, np_dtype, DTYPE_CODES
from ...ndarray import NDArray
from ...ops import amp_lists
from ...ops.shapes import first
from ...symbol import Symbol
from ...symbol.graph import Node, topo_order
from ...symbol.infer import infer_graph_types
from .loss_scaler import LossScaler

__all__ = ['init', 'init_trainer', 'scale_loss', 'unscale', 'convert_model',
           'convert_hybrid_block', 'list_lp16_ops', 'list_fp32_ops', 'list_lp16_fp32_ops',
           'list_conditional_fp32_ops', 'list_widest_type_cast', 'list_loss_output_functions',
           'list_lp16_use_fp32_params', 'convert_symbol', 'convert_bucketing_module']

_WIDTH = [np.dtype('float16'), bfloat16, np.dtype('float32'), np.dtype('float64')]
_amp_initialized = False
_amp_loss_scale_initialized = False
_loss_scaler = None


def _target_name(target_dtype):
    """'float16' or 'bfloat16' for any spelling of them; AssertionError otherwise (MXNet)."""
    if isinstance(target_dtype, str) and target_dtype in ('float16', 'bfloat16'):
        return target_dtype
    try:
        dt = np_dtype(target_dtype)
    except TypeError:
        dt = None
    if dt == bfloat16:
        return 'bfloat16'
    if dt == np.dtype('float16'):
        return 'float16'
    raise AssertionError('AMP currently supports only float16 or bfloat16 as a target_dtype, '
                         'got %r' % (target_dtype,))


# ---------------------------------------------------------------------------------------------
# the lists
# ---------------------------------------------------------------------------------------------
def list_lp16_ops(target_dtype):
    """Ops run in the low-precision type."""
    return amp_lists.lp16(_target_name(target_dtype))


def list_fp32_ops(target_dtype):
    """Ops run in float32."""
    _target_name(target_dtype)
    return amp_lists.fp32()


def list_lp16_fp32_ops(target_dtype):
    """Ops run in whatever type reaches them."""
    return amp_lists.lp16_fp32(_target_name(target_dtype))


def list_conditional_fp32_ops(target_dtype):
    """(op, parameter, values) that make an op run in float32."""
    _target_name(target_dtype)
    return list(amp_lists.CONDITIONAL_FP32)


def list_widest_type_cast(target_dtype):
    """Ops whose inputs are cast to the widest type among them."""
    _target_name(target_dtype)
    return amp_lists.widest()


def list_loss_output_functions(target_dtype):
    """Loss outputs whose gradient carries the loss scale."""
    _target_name(target_dtype)
    return amp_lists.loss_output()


def list_lp16_use_fp32_params(target_dtype):
    """{op: input names kept in float32} for ops run in the low-precision type."""
    return dict(amp_lists.LP16_USE_FP32_PARAMS[_target_name(target_dtype)])


# ---------------------------------------------------------------------------------------------
# init: casting wrappers around the operator functions
# ---------------------------------------------------------------------------------------------
def _is_float(dtype):
    return dtype == bfloat16 or np.issubdtype(dtype, np.floating)


def _cast(value, dtype_name):
    if isinstance(value, NDArray):
        dt = np_dtype(dtype_name)
        if np_dtype(value.dtype) == dt or not _is_float(value.dtype):
            return value
        return ndarray.amp_cast(value, dtype=dtype_name)
    if isinstance(value, Symbol):
        return symbol.amp_cast(value, dtype=dtype_name)
    return value


def _widest(arrays):
    if all(isinstance(a, NDArray) for a in arrays):
        floats = [np_dtype(a.dtype) for a in arrays if _is_float(a.dtype)]
        if len(set(floats)) <= 1:
            return arrays
        widest = max(floats, key=_WIDTH.index)
        return [_cast(a, 'bfloat16' if widest == bfloat16 else widest.name) for a in arrays]
    if all(isinstance(a, Symbol) for a in arrays):
        cast = symbol.amp_multicast(*arrays, num_outputs=len(arrays))
        return [cast[i] for i in range(len(arrays))]
    return arrays


def _casting(f, mode, target, conditions=None):
    """f with its array arguments cast: mode 'lp16' to target, 'fp32' to float32, 'widest' to
    the widest float type among them; `conditions` [(param, values)] make 'fp32' conditional."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        if conditions is not None and not any(kwargs.get(p) in values
                                              for p, values in conditions):
            return f(*args, **kwargs)
        keys = [k for k, v in kwargs.items() if isinstance(v, (NDArray, Symbol))]
        arrays = [a for a in args if isinstance(a, (NDArray, Symbol))] + \
            [kwargs[k] for k in keys]
        if mode == 'widest':
            cast = _widest(arrays)
        else:
            name = target if mode == 'lp16' else 'float32'
            cast = [_cast(a, name) for a in arrays]
        it = iter(cast)
        args = [next(it) if isinstance(a, (NDArray, Symbol)) else a for a in args]
        kwargs.update((k, next(it)) for k in keys)
        return f(*args, **kwargs)
    return wrapper


def _op_modules(root):
    """root (mx.sym or mx.nd) and its operator submodules."""
    mods = [root]
    for sub in ('op', '_internal', 'contrib'):
        mod = getattr(root, sub, None)
        if mod is not None and mod not in mods:
            mods.append(mod)
    return mods


def _wrap_all(target, target_precision_ops, conditional_fp32_ops, fp32_ops):
    lp16 = target_precision_ops if target_precision_ops is not None else list_lp16_ops(target)
    fp32 = fp32_ops if fp32_ops is not None else list_fp32_ops(target)
    conditional = {}
    for op, param, values in (conditional_fp32_ops if conditional_fp32_ops is not None
                              else list_conditional_fp32_ops(target)):
        conditional.setdefault(op, []).append((param, values))
    plan = [(n, 'lp16', None) for n in lp16] + [(n, 'fp32', None) for n in fp32] + \
        [(n, 'widest', None) for n in list_widest_type_cast(target)] + \
        [(n, 'fp32', c) for n, c in conditional.items()]
    for root in (symbol, ndarray):
        for mod in _op_modules(root):
            for name, mode, cond in plan:
                f = getattr(mod, name, None)
                if callable(f):
                    setattr(mod, name, _casting(f, mode, target, cond))


def _wrap_loss_outputs(scaler, target):
    def scaled(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            kwargs['grad_scale'] = kwargs.get('grad_scale', 1.0) * scaler.loss_scale
            return f(*args, **kwargs)
        return wrapper

    def warned(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            logging.warning('%s does not support dynamic loss scaling in symbolic and '
                            'hybridized execution.', f.__name__)
            return f(*args, **kwargs)
        return wrapper
    for root, wrap in ((ndarray, scaled), (symbol, warned)):
        for mod in _op_modules(root):
            for name in list_loss_output_functions(target):
                f = getattr(mod, name, None)
                if callable(f):
                    setattr(mod, name, wrap(f))


def init(target_dtype='float16', target_precision_ops=None, conditional_fp32_ops=None,
         fp32_ops=None):
    """Switch AMP on (once per process, before building the model)."""
    global _amp_initialized, _loss_scaler
    if _amp_initialized:
        return
    target = _target_name(target_dtype)
    _amp_initialized = True
    logging.info('Using AMP')
    _wrap_all(target, target_precision_ops, conditional_fp32_ops, fp32_ops)
    _loss_scaler = LossScaler()
    _wrap_loss_outputs(_loss_scaler, target)


def _trainer_class():
    from ...gluon import trainer
    return trainer.Trainer


def init_trainer(optimizer_or_trainer):
    """Give a Gluon Trainer dynamic loss scaling: its updates are skipped while gradients
    overflow. (As in MXNet, a bare Optimizer is refused.)"""
    global _amp_loss_scale_initialized
    assert _amp_initialized, 'AMP not initialized, did you forget to call amp.init()?'
    from ... import optimizer as opt
    trainer_cls = _trainer_class()
    if isinstance(optimizer_or_trainer, trainer_cls):
        if not _amp_loss_scale_initialized:
            _amp_loss_scale_initialized = True
            scaler = _loss_scaler
        else:
            scaler = LossScaler()
        t = optimizer_or_trainer
        t._amp_loss_scaler = scaler
        t._amp_original_scale = t._scale
        update = t._update

        def _update(ignore_stale_grad=False):
            if scaler.has_overflow(t._params):
                return                      # this step's gradients overflowed: skip it
            update(ignore_stale_grad)
        t._update = _update
    elif isinstance(optimizer_or_trainer, opt.Optimizer):
        raise TypeError('AMP is currently only compatible with Gluon Trainer')
    else:
        raise TypeError('optimizer_or_trainer should be a Gluon Trainer or an optimizer, '
                        'instead is %s' % type(optimizer_or_trainer))


@contextlib.contextmanager
def scale_loss(loss, optimizer_or_trainer):
    """`with amp.scale_loss(loss, trainer) as scaled: scaled.backward()`: the loss times the
    loss scale; the trainer divides the gradients by it again."""
    scaler = getattr(optimizer_or_trainer, '_amp_loss_scaler', None)
    assert scaler is not None, \
        'Loss scaler is not initialized, did you forget to call amp.init_trainer()?'
    optimizer_or_trainer._scale = optimizer_or_trainer._amp_original_scale / scaler.loss_scale
    if isinstance(loss, (list, tuple)):
        yield [l * scaler.loss_scale for l in loss]
    else:
        yield scaler.loss_scale * loss


def unscale(optimizer_or_trainer):
    """Divide the gradients by the loss scale now (e.g. before clipping them)."""
    from ... import optimizer as opt
    if isinstance(optimizer_or_trainer, _trainer_class()):
        for param in optimizer_or_trainer._params:
            if param.grad_req == 'null':
                continue
            for g in param.list_grad():
                g[:] *= optimizer_or_trainer._scale
        optimizer_or_trainer._scale = 1.
    elif isinstance(optimizer_or_trainer, opt.Optimizer):
        raise TypeError('AMP is currently only compatible with Gluon Trainer')
    else:
        raise TypeError('optimizer_or_trainer should be a Gluon Trainer or an optimizer, '
                        'instead is %s' % type(optimizer_or_trainer))


# ---------------------------------------------------------------------------------------------
# convert_*: the graph rewrite
# ---------------------------------------------------------------------------------------------
def _dtype_name(dt):
    return 'bfloat16' if dt == bfloat16 else np.dtype(dt).name


def _entry_name(entry):
    node, k = entry
    if node.op is None:
        return node.name
    return '%s_%s' % (node.name, node.op.output_names(node.params)[k])


def _out_types(node, in_types):
    n = node.num_outputs()
    rule = node.op.infer_type
    try:
        if rule is not None:
            outs = rule(node.params, list(in_types), [None] * n)[1]
        else:
            t = next((x for x in in_types if x is not None), np.dtype('float32'))
            outs = [t] * n
    except Exception:      # noqa: BLE001  (a rule that cannot decide: assume float32)
        outs = [None] * n
    return [np.dtype('float32') if t is None else t for t in outs]


def convert_symbol(sym, target_dtype='float16', target_dtype_ops=None, fp32_ops=None,
                   conditional_fp32_ops=None, excluded_sym_names=None, data_names=None,
                   cast_optional_params=False):
    """A copy of `sym` with amp_cast nodes: inputs of low-precision ops cast
    to target_dtype, of float32 ops (and of the nodes named in excluded_sym_names) to float32,
    of widest-type ops to the widest type among them. data_names are the float32 inputs;
    with cast_optional_params, parameters read only in target_dtype are marked (__dtype__)
    to be stored in it."""
    target = _target_name(target_dtype)
    if excluded_sym_names is None:
        excluded_sym_names = []
    if not isinstance(excluded_sym_names, list):
        raise ValueError('excluded_sym_names must be a list of strings representing the names '
                         'of the symbols that should not be casted, while received type %s'
                         % type(excluded_sym_names))
    lp16 = set(target_dtype_ops if target_dtype_ops is not None else list_lp16_ops(target))
    fp32 = set(fp32_ops if fp32_ops is not None else list_fp32_ops(target))
    widest = set(list_widest_type_cast(target))
    conditional = {}
    for op, param, values in (conditional_fp32_ops if conditional_fp32_ops is not None
                              else list_conditional_fp32_ops(target)):
        conditional.setdefault(op, []).append((param, [str(v) for v in values]))
    overlap = lp16 & fp32
    if overlap:
        raise MXNetError('convert_symbol: ops %s are listed both for %s and float32'
                         % (sorted(overlap), target))

    order = topo_order(sym._entries)
    given = {}
    names = set(data_names or [])
    for node in order:
        if node.op is None and node.name in names:
            given[id(node)] = np.dtype('float32')
    known = infer_graph_types(order, given)
    target_dt, f32 = np_dtype(target), np.dtype('float32')

    memo, types, casts = {}, {}, {}

    def cast(entry, dt):
        key = (id(entry[0]), entry[1], _dtype_name(dt))
        if key not in casts:
            name = '%s_amp_cast_%s' % (_entry_name(entry), _dtype_name(dt))
            casts[key] = (Node(amp_lists.cast_op(), name, {'dtype': _dtype_name(dt)},
                               [entry]), 0)
            types[(id(casts[key][0]), 0)] = dt
        return casts[key]

    for node in order:
        if node.op is None:                  # a copy: the caller's symbol stays as it is
            memo[id(node)] = Node(None, node.name, node.attrs)
            types[(id(memo[id(node)]), 0)] = first(known.get((id(node), 0)), f32)
            continue
        inputs = [(memo[id(c)], k) for c, k in node.inputs]
        in_types = [types[(id(n), k)] for n, k in inputs]
        name = node.op.name
        ops = {name} | set(node.op.aliases)
        cond_fp32 = any(node.attrs.get(p) in values for op in ops & set(conditional)
                        for p, values in conditional[op])
        attrs = dict(node.attrs)
        if node.name in excluded_sym_names or ops & fp32 or cond_fp32:
            want = f32
        elif ops & lp16:
            want = target_dt
        elif ops & widest:                   # the narrower floats cast to the widest one
            floats = [t for t in in_types if _is_float(t)]
            want = max(floats, key=_WIDTH.index) if floats else None
        else:
            want = None
        if want is not None:
            # (as MXNet, a conditional float32 op gets its casts even where types agree)
            inputs = [cast(e, want) if _is_float(t) and (t != want or cond_fp32) else e
                      for e, t in zip(inputs, in_types)]
            in_types = [want if _is_float(t) else t for t in in_types]
        new = Node(node.op, node.name, attrs, inputs)
        memo[id(node)] = new
        for k, t in enumerate(_out_types(new, in_types)):
            types[(id(new), k)] = t
    result = Symbol([(memo[id(n)], k) for n, k in sym._entries])
    if cast_optional_params and data_names is not None:
        _mark_optional_params(result, names, target_dt)
    return result


def _mark_optional_params(sym, data_names, target_dt):
    """Parameters whose every reader is a cast to target_dt get __dtype__ = target_dt."""
    readers = {}
    for node in topo_order(sym._entries):
        for child, _ in node.inputs:
            readers.setdefault(id(child), []).append(node)
    cast_op = amp_lists.cast_op()
    for node in topo_order(sym._entries):
        if node.op is not None or node.name in data_names:
            continue
        users = readers.get(id(node), [])
        if users and all(u.op is cast_op and np_dtype(u.attrs['dtype']) == target_dt
                         for u in users):
            node.attrs['__dtype__'] = str(DTYPE_CODES[target_dt])


def _cast_params(sym, params, names):
    """Params cast to the dtypes the converted symbol marks (__dtype__) on their variables."""
    attrs = sym.attr_dict()
    out = dict(params)
    codes = {v: k for k, v in DTYPE_CODES.items()}
    for name in names:
        code = attrs.get(name, {}).get('__dtype__')
        if name in out and code not in (None, '-1'):
            out[name] = out[name].astype(_dtype_name(codes[int(code)]))
    return out


def convert_model(sym, arg_params, aux_params, target_dtype='float16', target_dtype_ops=None,
                  fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                  cast_optional_params=False):
    """(converted symbol, arg_params, aux_params) for mixed-precision inference; params are
    cast where the symbol marks them (cast_optional_params)."""
    target = _target_name(target_dtype)
    assert isinstance(sym, Symbol), 'First argument to convert_model should be Symbol'
    assert isinstance(arg_params, dict), \
        'Second argument to convert_model should be a dict of name to ndarray'
    assert isinstance(aux_params, dict), \
        'Third argument to convert_model should be a dict of name to ndarray'
    params = set(arg_params) | set(aux_params)
    data_names = [n for n in sym.list_inputs() if n not in params]
    converted = convert_symbol(sym, target, target_dtype_ops, fp32_ops, conditional_fp32_ops,
                               excluded_sym_names, data_names, cast_optional_params)
    return (converted, _cast_params(converted, arg_params, converted.list_arguments()),
            _cast_params(converted, aux_params, converted.list_auxiliary_states()))


def convert_hybrid_block(block, target_dtype='float16', target_dtype_ops=None, fp32_ops=None,
                         conditional_fp32_ops=None, excluded_sym_names=None, ctx=None,
                         cast_optional_params=False):
    """A SymbolBlock running `block`'s (hybridized, run once) graph in mixed precision, its
    parameters copied (and cast where marked) onto ctx (default: the current context)."""
    from ...context import current_context
    from ...gluon import HybridBlock, SymbolBlock
    assert isinstance(block, HybridBlock), 'block input should be a HybridBlock'
    cached = getattr(block, '_cached_graph', None)
    if not cached:
        raise RuntimeError('Please first call block.hybridize() and then run forward with '
                           'this block at least once before calling export.')
    inputs, sym = cached
    input_names = [i.name for i in inputs]
    converted = convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                               conditional_fp32_ops, excluded_sym_names, input_names,
                               cast_optional_params)
    values = {name: p._reduce() for name, p in block.collect_params().items()}
    values = _cast_params(converted, values, list(values))
    ret = SymbolBlock(converted, inputs)
    ctx = ctx or current_context()
    for name, param in ret.collect_params().items():
        param._load_init(values[name], ctx, cast_dtype=True, dtype_source='saved')
    return ret


def convert_bucketing_module(bucketing_mod, target_dtype='float16', target_dtype_ops=None,
                             fp32_ops=None, conditional_fp32_ops=None, excluded_sym_names=None,
                             cast_optional_params=False):
    """A BucketingModule whose every bucket's symbol is converted (its params converted once,
    for the default bucket)."""
    from ...module import BucketingModule
    assert isinstance(bucketing_mod, BucketingModule), \
        'bucketing_mod should be a BucketingModule'
    assert bucketing_mod.binded and bucketing_mod.params_initialized, \
        'bucketing_mod should be bound with initialized parameters'
    arg_params, aux_params = bucketing_mod.get_params()
    default = bucketing_mod._default_bucket_key
    sym_gen = bucketing_mod._sym_gen

    def converted_gen(key):
        sym, data_names, label_names = sym_gen(key)
        params = set(arg_params) | set(aux_params)
        names = [n for n in sym.list_inputs() if n not in params]
        return (convert_symbol(sym, target_dtype, target_dtype_ops, fp32_ops,
                               conditional_fp32_ops, excluded_sym_names, names,
                               cast_optional_params), data_names, label_names)
    sym, _, _ = converted_gen(default)
    new_args = _cast_params(sym, arg_params, sym.list_arguments())
    new_aux = _cast_params(sym, aux_params, sym.list_auxiliary_states())
    mod = BucketingModule(converted_gen, default, context=bucketing_mod._context)
    mod.bind(bucketing_mod.data_shapes, bucketing_mod.label_shapes, for_training=False)
    mod.set_params(new_args, new_aux)
    return mod
