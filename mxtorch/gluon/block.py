"""mx.gluon.Block, HybridBlock and SymbolBlock.

A Block names itself and its Parameters as MXNet does: `<alias><n>_` from the global
NameManager at top level ('dense0_'), or from its parent's counters inside the parent's
name_scope() ('hybridsequential0_dense0_'). A HybridBlock runs `hybrid_forward(F, x, ...)` with
F = mx.nd; after hybridize() its graph is traced once with F = mx.sym and run through the
Executor's generated plan, one bound executor per input signature (shapes, dtypes, context),
on the very tensors of the inputs and Parameters, so gradients reach the Parameters under
mx.autograd.record() exactly as in the imperative run.
"""
from collections import OrderedDict, defaultdict
import json
import os
import re
import threading
import warnings

import numpy as np
import torch

from .. import autograd, initializer, ndarray, symbol
from .. import name as _name
from ..base import MXNetError, mx_real_t
from ..context import Context, cpu
from ..util import is_np_array
from ..ndarray.cached_op import CachedOp
from ..ndarray.ndarray import NDArray, _wrap
from ..symbol import Symbol
from ..symbol.graph import topo_order
from .parameter import DeferredInitializationError, Parameter, ParameterDict
from .utils import _brief_print_list, _flatten, _indent, _regroup, HookHandle


# torch's grad-mode switch itself (torch.set_grad_enabled wraps it in an object per call)
_set_grad_enabled = getattr(torch._C, '_set_grad_enabled', torch.set_grad_enabled)


class _BlockScope:
    """The Block whose name_scope() is open, and its counters for naming children."""
    _current = threading.local()

    def __init__(self, block):
        self._block = block
        self._counter = {}
        self._old_scope = None
        self._name_scope = None

    @staticmethod
    def create(prefix, params, hint):
        """(prefix, ParameterDict) for a new Block with alias `hint`."""
        current = getattr(_BlockScope._current, 'value', None)
        if current is None:
            if prefix is None:
                prefix = _name.NameManager.current.get(None, hint) + '_'
            params = ParameterDict(prefix) if params is None else \
                ParameterDict(params.prefix, params)
            return prefix, params
        if prefix is None:
            count = current._counter.get(hint, 0)
            prefix = '%s%d_' % (hint, count)
            current._counter[hint] = count + 1
        if params is None:
            parent = current._block.params
            params = ParameterDict(parent.prefix + prefix, parent._shared)
        else:
            params = ParameterDict(params.prefix, params)
        return current._block.prefix + prefix, params

    def __enter__(self):
        if self._block._empty_prefix:
            return self
        self._old_scope = getattr(_BlockScope._current, 'value', None)
        _BlockScope._current.value = self
        self._name_scope = _name.Prefix(self._block.prefix)
        self._name_scope.__enter__()
        return self

    def __exit__(self, *exc):
        if self._block._empty_prefix:
            return
        self._name_scope.__exit__(*exc)
        self._name_scope = None
        _BlockScope._current.value = self._old_scope


def _gather_type_ctx_info(args):
    """(has a Symbol, has an NDArray, the contexts, the first context) of nested args."""
    if isinstance(args, NDArray):
        return False, True, {args.context}, args.context
    if isinstance(args, Symbol):
        return True, False, set(), None
    if isinstance(args, (list, tuple)):
        has_sym = has_nd = False
        ctxs, first = set(), None
        for item in args:
            s, n, c, f = _gather_type_ctx_info(item)
            has_sym, has_nd = has_sym or s, has_nd or n
            ctxs |= c
            if first is None:
                first = f
        return has_sym, has_nd, ctxs, first
    return False, False, set(), None


class Block:
    """Base class of all layers and models: forward(*args) on NDArrays."""

    def __init__(self, prefix=None, params=None):
        self._empty_prefix = prefix == ''
        self._prefix, self._params = _BlockScope.create(prefix, params, self._alias())
        self._name = self._prefix[:-1] if self._prefix.endswith('_') else self._prefix
        self._scope = _BlockScope(self)
        self._children = OrderedDict()
        self._reg_params = {}
        self._forward_hooks = OrderedDict()
        self._forward_pre_hooks = OrderedDict()

    def __repr__(self):
        modstr = '\n'.join('  (%s): %s' % (key, _indent(repr(block), 2))
                           for key, block in self.__dict__.items() if isinstance(block, Block))
        return '%s(\n%s\n)' % (self.__class__.__name__, modstr)

    def __setattr__(self, name, value):
        """Registers child Blocks and Parameters assigned as attributes."""
        if hasattr(self, name):
            existing = getattr(self, name)
            if isinstance(existing, (Parameter, Block)) and not isinstance(value, type(existing)):
                raise TypeError('Changing attribute type for %s from %s to %s is not allowed.'
                                % (name, type(existing), type(value)))
        if isinstance(value, Block):
            self.register_child(value, name)
        elif isinstance(value, Parameter):
            assert name not in self._reg_params, \
                'Overriding Parameter attribute %s is not allowed. If you want to share ' \
                'parameters between blocks, please set \'params\' at Block construction ' \
                'instead.' % name
            self._reg_params[name] = value
        super().__setattr__(name, value)

    def _check_container_with_block(self):
        children = set(id(c) for c in self._children.values())

        def unregistered(data):
            if isinstance(data, (list, tuple)):
                return any(unregistered(x) for x in data)
            if isinstance(data, dict):
                return any(unregistered(x) for x in data.values())
            return isinstance(data, Block) and id(data) not in children
        for k, v in self.__dict__.items():
            if isinstance(v, (list, tuple, dict)) and not (k.startswith('__') or
                                                           k == '_children'):
                if unregistered(v):
                    warnings.warn('"%s" is an unregistered container with Blocks. Note that '
                                  'Blocks inside the list, tuple or dict will not be '
                                  'registered automatically. Make sure to register them using '
                                  'register_child() or switching to '
                                  'nn.Sequential/nn.HybridSequential instead. '
                                  % (self.__class__.__name__ + '.' + k), stacklevel=3)

    def _alias(self):
        return self.__class__.__name__.lower()

    @property
    def prefix(self):
        return self._prefix

    @property
    def name(self):
        return self._name

    def name_scope(self):
        """`with block.name_scope():` children created inside are named under this block."""
        return self._scope

    @property
    def params(self):
        """This Block's own ParameterDict (children's Parameters not included)."""
        return self._params

    def collect_params(self, select=None):
        """A ParameterDict of this Block's and its descendants' Parameters (names matching the
        regular expression `select`, when given)."""
        self._check_container_with_block()
        ret = ParameterDict(self._params.prefix)
        if not select:
            ret.update(self.params)
        else:
            pattern = re.compile(select)
            ret.update({k: v for k, v in self.params.items() if pattern.match(k)})
        for child in self._children.values():
            ret.update(child.collect_params(select=select))
        return ret

    def _collect_params_with_prefix(self, prefix=''):
        if prefix:
            prefix += '.'
        ret = {prefix + key: val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def save_parameters(self, filename, deduplicate=False):
        """Save the Parameters under their structural names ('0.weight', 'conv.bias')."""
        params = self._collect_params_with_prefix()
        if deduplicate:
            first = {}
            for k, v in params.items():
                first.setdefault(id(v), (k, v))
            params = dict(first.values())
        ndarray.save(filename, {k: v._reduce() for k, v in params.items()})

    def save_params(self, filename):
        warnings.warn('save_params is deprecated. Please use save_parameters. Note that if you '
                      'want load from SymbolBlock later, please use export instead.')
        self.collect_params().save(filename, strip_prefix=self.prefix)

    def load_parameters(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
                        cast_dtype=False, dtype_source='current'):
        """Load Parameters saved by save_parameters (or, by full names, by save_params)."""
        loaded = ndarray.load(filename)
        params = self._collect_params_with_prefix()
        if not loaded and not params:
            return
        if not any('.' in k for k in loaded.keys()):
            del loaded
            self.collect_params().load(filename, ctx, allow_missing, ignore_extra, self.prefix,
                                       cast_dtype=cast_dtype, dtype_source=dtype_source)
            return
        if not allow_missing:
            names_of = defaultdict(list)
            for k, v in params.items():
                names_of[id(v)].append(k)
            for name, param in params.items():
                assert any(p in loaded for p in names_of[id(param)]), \
                    "Parameter '%s' is missing in file '%s', which contains parameters: %s. " \
                    'Set allow_missing=True to ignore missing parameters.' % (
                        name, filename, _brief_print_list(loaded.keys()))
        for name in loaded:
            if not ignore_extra and name not in params:
                raise ValueError("Parameter '%s' loaded from file '%s' is not present in "
                                 'ParameterDict, which contains parameters %s. Set '
                                 'ignore_extra=True to ignore. ' % (
                                     name, filename, _brief_print_list(self._params.keys())))
            if name in params:
                params[name]._load_init(loaded[name], ctx, cast_dtype=cast_dtype,
                                        dtype_source=dtype_source)

    def load_params(self, filename, ctx=None, allow_missing=False, ignore_extra=False):
        warnings.warn('load_params is deprecated. Please use load_parameters.')
        self.load_parameters(filename, ctx, allow_missing, ignore_extra)

    def save(self, prefix):
        """Write `prefix-model.json` (the block tree: each block's name, its children's keys,
        and a hybridized block's traced graph) and `prefix-model.params`; `load` restores both
        into a block built the same way."""
        model = {}
        counter = [0]

        def describe(blk, parent):
            entry = {'orig_name': blk.name}
            parent[type(blk).__name__.lower() + str(counter[0])] = entry
            if isinstance(blk, HybridBlock):
                entry['hybridized'] = bool(blk._cached_graph)
                if blk._cached_graph:
                    inputs, out = blk._cached_graph
                    entry.update(in_format=blk._in_format, out_format=blk._out_format,
                                 inputs=[s.tojson() for s in inputs], symbol=out.tojson())
            entry['children'] = {}
            for key, child in blk._children.items():
                counter[0] += 1
                entry['children'][child.name] = key
                describe(child, entry)
        describe(self, model)
        with open(prefix + '-model.json', 'w') as f:
            json.dump(model, f)
        self.save_parameters(prefix + '-model.params')

    def load(self, prefix):
        """Restore what `save(prefix)` wrote into this block (built as the saved one was):
        block and parameter names, children's keys, traced graphs, then the parameters."""
        with open(prefix + '-model.json') as f:
            model = json.load(f)
        counter = [0]

        def restore(blk, parent):
            entry = parent[type(blk).__name__.lower() + str(counter[0])]
            blk._name = entry['orig_name']
            if isinstance(blk, HybridBlock) and entry.get('hybridized'):
                blk._in_format = entry['in_format']
                blk._out_format = entry['out_format']
                blk._cached_graph = ([symbol.load_json(s) for s in entry['inputs']],
                                     symbol.load_json(entry['symbol']))
                blk._cached = None
                blk._active = True
            params = blk.params._params
            for key in list(params):
                params[blk.name + '_' + key[len(blk.params.prefix):]] = params.pop(key)
            for child in blk._children.values():
                counter[0] += 1
                restore(child, entry)
            renamed = OrderedDict((entry['children'][child.name], child)
                                  for child in blk._children.values())
            blk._children.clear()
            blk._children.update(renamed)
        restore(self, model)
        self.load_parameters(prefix + '-model.params')

    def register_child(self, block, name=None):
        """Register `block` as a child (named by its position when `name` is None)."""
        if name is None:
            name = str(len(self._children))
        self._children[name] = block

    def register_forward_pre_hook(self, hook):
        """hook(block, inputs) runs before forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_pre_hooks, hook)
        return handle

    def register_forward_hook(self, hook):
        """hook(block, inputs, outputs) runs after forward; returns a HookHandle."""
        handle = HookHandle()
        handle.attach(self._forward_hooks, hook)
        return handle

    def apply(self, fn):
        """fn(block) on every descendant, then on this Block."""
        for child in self._children.values():
            child.apply(fn)
        fn(self)
        return self

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialise every Parameter of this Block and its descendants."""
        self.collect_params().initialize(init, ctx, verbose, force_reinit)

    def hybridize(self, active=True, **kwargs):
        """Hybridize the HybridBlocks among the descendants."""
        for child in self._children.values():
            child.hybridize(active, **kwargs)

    def cast(self, dtype):
        """Cast every Parameter to `dtype`."""
        for child in self._children.values():
            child.cast(dtype)
        for param in self.params.values():
            param.cast(dtype)

    def reset_ctx(self, ctx):
        self.collect_params().reset_ctx(ctx)

    def zero_grad(self):
        self.collect_params().zero_grad()

    def __call__(self, *args):
        if self._forward_pre_hooks:
            for hook in list(self._forward_pre_hooks.values()):
                hook(self, args)
        out = self.forward(*args)
        if self._forward_hooks:
            for hook in list(self._forward_hooks.values()):
                hook(self, args, out)
        return out

    def forward(self, *args):
        raise NotImplementedError

    def register_op_hook(self, callback, monitor_all=False):
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def summary(self, *inputs):
        """Print each layer's output shape and parameter count for a forward of `inputs`."""
        summary = OrderedDict()
        seen = set()
        hooks = []

        def shape_str(out):
            flat, _ = _flatten(out, 'output')
            shapes = [x.shape for x in flat if x is not None]
            return str(shapes[0]) if len(shapes) == 1 else str(shapes)

        def register(block):
            assert not isinstance(block, HybridBlock) or not block._active, \
                '"%s" must not be hybridized to print summary.' % block.name

            def hook(blk, _, outputs):
                key = '%s-%i' % (blk.__class__.__name__, len(summary) + 1)
                n_params = trainable = 0
                for p in blk.params.values():
                    size = int(np.prod(p.data().shape))
                    n_params += size
                    if p.grad_req != 'null':
                        trainable += size
                    if id(p) in seen:
                        n_params -= size
                        trainable -= size if p.grad_req != 'null' else 0
                    seen.add(id(p))
                summary[key] = (shape_str(outputs), n_params, trainable)
            if not isinstance(block, (Sequential_types())):
                hooks.append(block.register_forward_hook(hook))

        summary['Input'] = (shape_str(list(inputs) if len(inputs) > 1 else inputs[0]), 0, 0)
        try:
            self.apply(register)
            self(*inputs)
            line = '-' * 80
            print(line)
            print('%25s  %42s %15s' % ('Layer (type)', 'Output Shape', 'Param #'))
            print('=' * 80)
            total = trainable = 0
            for layer, (shape, n, t) in summary.items():
                print('%25s  %42s %15s' % (layer, shape, n))
                total += n
                trainable += t
            print('=' * 80)
            print('Parameters in forward computation graph, duplicate included')
            print('   Total params: ' + str(total))
            print('   Trainable params: ' + str(trainable))
            print('   Non-trainable params: ' + str(total - trainable))
            print('Shared params in forward computation graph: ' + str(
                total - sum(int(np.prod(p.data().shape))
                            for p in self.collect_params().values())))
            print('Unique parameters in model: ' + str(
                sum(int(np.prod(p.data().shape)) for p in self.collect_params().values())))
            print(line)
        finally:
            for h in hooks:
                h.detach()


def Sequential_types():
    from .nn.basic_layers import Sequential, HybridSequential
    return (Sequential, HybridSequential)


class _CachedGraph:
    """A hybridized block's traced Symbol, bound once per input signature."""

    def __init__(self, inputs, out):
        self.inputs = inputs
        self.out = out
        self.arg_names = out.list_arguments()
        self.aux_names = out.list_auxiliary_states()
        self.executors = {}
        self.params = None            # name -> Parameter, found on the first call
        self.bindings = {}            # input signature -> _Binding (the per-call fast path)
        # a graph with an operator whose output shape depends on values cannot be bound to a
        # static plan: it runs operator by operator (mx.nd.CachedOp), as MXNet's CachedOp does
        ops = [n.op for n in topo_order(out._entries) if n.op is not None]
        self.imperative = CachedOp(out) if any(op.dynamic_shape for op in ops) else None
        self.n_ops = len(ops)         # a recorded call inlines graphs of up to inline_limit
        self.inline = self.inline_for = None     # HybridBlock._inlined, for its flags list


class _Binding:
    """A cached graph's executor for one input signature (context, input shapes and dtypes),
    with where each of its arguments and auxiliary states comes from: the position of an input,
    or a Parameter with the value array it had when bound. A Parameter whose arrays were
    replaced since (re-initialised, cast, moved, grad_req changed) makes the binding stale."""
    __slots__ = ('executor', 'sources')

    def __init__(self, executor, sources):
        self.executor = executor
        self.sources = sources

    def tensors(self, data):
        """The tensors to run on, in the executor's order, or None when stale."""
        out = []
        for src in self.sources:
            if src.__class__ is int:
                out.append(data[src]._tensor)
            else:
                param, arrays, arr = src
                if param._data is not arrays:
                    return None
                out.append(arr._tensor)
        return out


_SPARSE_TYPES = frozenset((ndarray.sparse.CSRNDArray, ndarray.sparse.RowSparseNDArray))


def _sparse_call(block, cached, args, data, ctx):
    """A hybridized call with sparse inputs (block_sparse.py)."""
    from .block_sparse import call
    return call(block, cached, args, data, ctx)


def _op_hook(graph, callback):
    """A monitor for the executor of `graph` calling an op hook as MXNet's CachedOp does:
    callback(node output or input name, operator name, NDArray) for each operator's outputs
    (and inputs, with monitor_all); bare variables are not reported."""
    ops = {n.name: n.op.name for n in graph._nodes() if n.op is not None}

    def monitor(name, arr):
        node = max((n for n in ops if name.startswith(n + '_')), key=len, default=None)
        if node is not None:
            callback(name, ops[node], arr)
    return monitor


def _trailing_nones_only(fmt, stored):
    """Whether two flattened input formats differ only by trailing None arguments (-1), as
    when an argument with a None default is given or left out."""
    short, long_ = sorted((list(fmt), list(stored)), key=len)
    return long_[:len(short)] == short and all(f == -1 for f in long_[len(short):])


class HybridBlock(Block):
    """A Block whose hybrid_forward(F, x, ...) works with F = mx.nd and F = mx.sym; after
    hybridize() it runs as one traced graph."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._cached_graph = ()
        self._cached = None
        self._out_format = None
        self._in_format = None
        self._active = False
        self._flags = []
        self._callback = None
        self._monitor_all = False

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if isinstance(value, HybridBlock):
            self._clear_cached_op()

    def register_child(self, block, name=None):
        if not isinstance(block, HybridBlock):
            raise ValueError('Children of HybridBlock must also be HybridBlock, but %s has type '
                             '%s. If you are using Sequential, please try HybridSequential '
                             'instead.' % (str(block), str(type(block))))
        super().register_child(block, name)
        self._clear_cached_op()

    def _clear_cached_op(self):
        self._cached_graph = ()
        self._cached = None

    def hybridize(self, active=True, backend=None, clear=True, static_alloc=False,
                  static_shape=False, inline_limit=2, forward_bulk_size=None,
                  backward_bulk_size=None, **kwargs):
        """Run as one traced graph from the next call on (active=False: imperatively)."""
        self._active = active
        self._flags = [('static_alloc', static_alloc), ('static_shape', static_shape),
                       ('inline_limit', inline_limit)]
        if clear:
            self._clear_cached_op()
        if active and (self._forward_hooks or self._forward_pre_hooks):
            warnings.warn('"%s" is being hybridized while still having forward hook/pre-hook. '
                          'If "%s" is a child of HybridBlock, the hooks will not take effect.'
                          % (self, self))
        for child in self._children.values():
            child.hybridize(active, static_alloc=static_alloc, static_shape=static_shape,
                            inline_limit=inline_limit, forward_bulk_size=forward_bulk_size,
                            backward_bulk_size=backward_bulk_size, **kwargs)

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)

    # ---- tracing -------------------------------------------------------------------------------
    def _get_graph(self, *args):
        if not self._cached_graph:
            flat_args, self._in_format = _flatten(args, 'input')
            real = sum(a is not None for a in flat_args)
            if real == 0:
                raise ValueError('All args are None and we do not support such a case. '
                                 'Received args=%s' % (args,))
            flat_inputs, sym_inputs, n = [], [], 0
            for arg in flat_args:
                if arg is None:
                    flat_inputs.append(None)
                    continue
                var = symbol.var('data%d' % n if real > 1 else 'data')
                n += 1
                flat_inputs.append(var)
                sym_inputs.append(var)
            grouped = _regroup(flat_inputs, self._in_format)[0]
            params = {k: v.var() for k, v in self._reg_params.items()}
            with self.name_scope():
                out = self.hybrid_forward(symbol, *grouped, **params)
            out, self._out_format = _flatten(out, 'output')
            self._cached_graph = sym_inputs, symbol.Group(out)
        return self._cached_graph

    def _infer_attrs(self, infer_fn, attr, *args):
        inputs, out = self._get_graph(*args)
        flat, _ = _flatten(args, 'input')
        flat = [a for a in flat if a is not None]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            arg_attrs, _, aux_attrs = getattr(out, infer_fn)(
                **{i.name: getattr(j, attr) for i, j in zip(inputs, flat)})
            if arg_attrs is None:
                raise ValueError(w[0].message if w else
                                 '%s failed for the given inputs' % infer_fn)
        table = dict(zip(out.list_arguments(), arg_attrs))
        table.update(zip(out.list_auxiliary_states(), aux_attrs))
        for p in self.collect_params().values():
            if p.name in table:
                setattr(p, attr, table[p.name])

    def infer_shape(self, *args):
        """Fill in the unknown shapes of the Parameters from the inputs."""
        self._infer_attrs('infer_shape', 'shape', *args)

    def infer_type(self, *args):
        """Set the dtypes of the Parameters from the inputs."""
        self._infer_attrs('infer_type', 'dtype', *args)

    def _deferred_infer_shape(self, *args):
        try:
            self.infer_shape(*args)
        except Exception as err:
            raise ValueError('Deferred initialization failed because shape cannot be '
                             'inferred. %s' % err) from None

    # ---- hybridized run --------------------------------------------------------------------------
    def _graph_params(self):
        """name -> Parameter of the traced graph's parameters (by their keys in
        collect_params(), which Block.load renames to the saved graph's names)."""
        return dict(self.collect_params().items())

    def _call_cached_op(self, *args):
        cached = self._cached
        if cached is None:
            inputs, out = self._get_graph(*args)
            cached = self._cached = _CachedGraph(inputs, out)
        if all(isinstance(a, NDArray) for a in args) and \
                len(args) == len(self._in_format) and not any(self._in_format):
            data = args            # flat NDArray inputs, as traced: no flattening needed
        else:
            data = self._flat_inputs(args)
        ctx = data[0]._ctx
        if len(data) == 1:
            if data[0].__class__ in _SPARSE_TYPES:       # (its dense form is not built)
                return _sparse_call(self, cached, args, data, ctx)
            tensor = data[0]._tensor
            key = (ctx, tensor.shape, tensor.dtype)
        else:
            for a in data:
                if a.__class__ in _SPARSE_TYPES:
                    return _sparse_call(self, cached, args, data, ctx)
            key = (ctx,) + tuple((a._tensor.shape, a._tensor.dtype) for a in data)
        binding = cached.bindings.get(key)
        tensors = binding.tensors(data) if binding is not None else None
        if tensors is None:
            if getattr(cached, 'sparse', False):     # sparse values inside: outputs too
                return _sparse_call(self, cached, args, data, ctx)
            with ctx:
                if cached.imperative is not None:
                    return self._call_imperative(cached, args, data, ctx)
                binding = self._bind(cached, args, data, ctx)
            if binding.executor._storage is not None:
                cached.sparse = True
                return _sparse_call(self, cached, args, data, ctx)
            cached.bindings[key] = binding
            tensors = binding.tensors(data)
        monitor = None if self._callback is None else _op_hook(cached.out, self._callback)
        recording = autograd.is_recording()
        grad_mode = torch.is_grad_enabled()
        if grad_mode != recording:
            _set_grad_enabled(recording)
        try:
            heads = binding.executor.run_on(tensors, autograd.is_training(), monitor=monitor,
                                            monitor_all=self._monitor_all)
        finally:
            if grad_mode != recording:
                _set_grad_enabled(grad_mode)
        if recording:
            autograd._record_graph(cached.out, tensors, heads, self._inlined(cached))
        if self._out_format == 0:              # one output, as traced
            return _wrap(heads[0], ctx)
        outs = [_wrap(h, ctx) for h in heads]
        return _regroup(outs, self._out_format)[0]

    def _inlined(self, cached):
        """Whether a recorded call shows in get_symbol as the graph's own operators (no
        static_alloc, at most inline_limit of them) rather than one _CachedOp node."""
        flags = self._flags
        if cached.inline_for is not flags:     # hybridize() gives a new flags list
            options = dict(flags)
            cached.inline = not options.get('static_alloc') and \
                cached.n_ops <= options.get('inline_limit', 2)
            cached.inline_for = flags
        return cached.inline

    def _flat_inputs(self, args):
        """The non-None NDArrays of nested args, whose structure must be the traced one's."""
        flat, fmt = _flatten(args, 'input')
        if fmt != self._in_format and not _trailing_nones_only(fmt, self._in_format):
            raise ValueError('The argument structure of HybridBlock does not match with the '
                             'cached version. Stored format = %s, input format = %s'
                             % (self._in_format, fmt))
        data = [a for a in flat if a is not None]
        for a in data:
            if not isinstance(a, NDArray):
                raise TypeError('HybridBlock input must be (nested) list of NDArray, but got '
                                '%s of type %s' % (a, type(a)))
        return data

    def _graph_values(self, cached, args, data, ctx):
        """name -> NDArray of every graph variable (Parameters finish deferred init here)."""
        if cached.params is None:
            cached.params = self._graph_params()
        params = cached.params
        try:
            values = {name: p.data(ctx) for name, p in params.items()}
        except DeferredInitializationError:
            self._deferred_infer_shape(*args)
            for p in params.values():
                p._finish_deferred_init()
            values = {name: p.data(ctx) for name, p in params.items()}
        for sym_in, arr in zip(cached.inputs, data):
            values[sym_in.name] = arr
        missing = [n for n in cached.arg_names + cached.aux_names if n not in values]
        if missing:
            raise MXNetError('the hybridized graph needs %s, which are neither inputs nor '
                             'Parameters of %s' % (missing, self.name))
        return values

    def _call_imperative(self, cached, args, data, ctx):
        values = self._graph_values(cached, args, data, ctx)
        outs = cached.imperative(*[values[n.name] for n in cached.imperative._variables])
        return _regroup(list(outs) if isinstance(outs, (list, tuple)) else [outs],
                        self._out_format)[0]

    def _bind(self, cached, args, data, ctx):
        """A _Binding for these inputs (the executor shared by equal shapes and dtypes)."""
        values = self._graph_values(cached, args, data, ctx)
        args_nd = [values[n] for n in cached.arg_names]
        aux_nd = [values[n] for n in cached.aux_names]
        key = (ctx,) + tuple((a.shape, a.dtype, a.stype) for a in args_nd + aux_nd)
        executor = cached.executors.get(key)
        if executor is None:
            executor = symbol.Symbol.bind(cached.out, ctx, args_nd, grad_req='null',
                                          aux_states=aux_nd)
            cached.executors[key] = executor
        position = {id(a): i for i, a in enumerate(data)}
        params = cached.params
        sources = []
        for name in cached.arg_names + cached.aux_names:
            arr = values[name]
            if id(arr) in position:
                sources.append(position[id(arr)])
            else:
                param = params[name]
                sources.append((param, param._data, arr))
        return _Binding(executor, sources)

    # ---- export -------------------------------------------------------------------------------
    def export(self, path, epoch=0, remove_amp_cast=True):
        """Write `path-symbol.json` and `path-%04d.params` (epoch), loadable by
        mx.mod.Module, mx.model.load_checkpoint and SymbolBlock.imports."""
        if not self._cached_graph:
            raise RuntimeError('Please first call block.hybridize() and then run forward with '
                               'this block at least once before calling export.')
        sym = self._cached_graph[1]
        sym.save('%s-symbol.json' % path, remove_amp_cast=remove_amp_cast)
        arg_names = set(sym.list_arguments())
        aux_names = set(sym.list_auxiliary_states())
        arg_dict = {}
        for name, param in self.collect_params().items():
            if name in arg_names:
                arg_dict['arg:%s' % name] = param._reduce()
            elif name in aux_names:
                arg_dict['aux:%s' % name] = param._reduce()
            else:
                warnings.warn('Parameter "%s" is not found in the graph. ' % name, stacklevel=3)
        ndarray.save('%s-%04d.params' % (path, epoch), arg_dict)
        return '%s-symbol.json' % path, '%s-%04d.params' % (path, epoch)

    def register_op_hook(self, callback, monitor_all=False):
        self._callback = callback
        self._monitor_all = monitor_all
        for child in self._children.values():
            child.register_op_hook(callback, monitor_all)

    def optimize_for(self, x, *args, backend=None, clear=False, **kwargs):
        self.hybridize(True, backend=backend, clear=clear, **kwargs)
        return self(x, *args)

    def forward(self, x, *args):
        """Run hybrid_forward with mx.nd (or the cached graph, when hybridized) on NDArrays,
        or with mx.sym on Symbols."""
        if isinstance(x, NDArray) and (not args or all(isinstance(a, NDArray) for a in args)):
            first = x._ctx          # the common case: flat NDArray inputs
            has_sym, has_nd = False, True
            ctxs = None             # (worked out when hybridized)
        else:
            has_sym, has_nd, ctxs, first = _gather_type_ctx_info([x] + list(args))
        if has_sym and has_nd:
            raise ValueError('In HybridBlock, we do not support mixed NDArrays and Symbols '
                             'types for the input. Please check the type of the args.\n')
        if not has_sym and not has_nd:
            raise ValueError('In HybridBlock, there must be one NDArray or one Symbol in the '
                             'input. Please check the type of the args.\n')
        if has_nd:
            # under npx.set_np() a hybridized block runs imperatively (F = mx.nd, whose
            # F.np / F.npx are mx.np / mx.npx): mxtorch traces graphs of classic operators only
            if self._active and not is_np_array():
                if ctxs is None:
                    ctxs = () if all(a._ctx is first for a in args) else \
                        {first}.union(a._ctx for a in args)
                if len(ctxs) > 1:
                    raise ValueError('Find multiple contexts in the input, After hybridized, '
                                     'the HybridBlock only supports one input context. You can '
                                     'print the ele.ctx in the input arguments to inspect '
                                     'their contexts. Find all contexts = %s' % ctxs)
                # (binding or tracing runs under the inputs' context; a bound plan needs none)
                return self._call_cached_op(x, *args)
            with first:
                try:
                    params = {k: v.data(first) for k, v in self._reg_params.items()}
                except DeferredInitializationError:
                    self._deferred_infer_shape(x, *args)
                    for v in self.params.values():
                        v._finish_deferred_init()
                    params = {k: v.data(first) for k, v in self._reg_params.items()}
                return self.hybrid_forward(ndarray, x, *args, **params)
        params = {k: v.var() for k, v in self._reg_params.items()}
        with self.name_scope():
            return self.hybrid_forward(symbol, x, *args, **params)

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


class SymbolBlock(HybridBlock):
    """A HybridBlock made from a Symbol: `inputs` are its data variables, every other
    argument and auxiliary state becomes a Parameter."""

    @staticmethod
    def imports(symbol_file, input_names, param_file=None, ctx=None, allow_missing=False,
                ignore_extra=False):
        """A SymbolBlock from an exported `-symbol.json` (and `.params`) file."""
        sym = symbol.load(symbol_file)
        if isinstance(input_names, str):
            input_names = [input_names]
        if param_file is None:
            inputs = [symbol.var(i, dtype=mx_real_t) for i in input_names]
        else:
            inputs = [symbol.var(i) for i in input_names]
        ret = SymbolBlock(sym, inputs)
        if param_file is not None:
            ret.collect_params().load(param_file, ctx, allow_missing, ignore_extra,
                                      cast_dtype=True, dtype_source='saved')
        return ret

    def __repr__(self):
        s = '{name}(\n{modstr}\n)'
        modstr = '\n'.join(['{block} : {numinputs} -> {numoutputs}'.format(
            block=self._cached_graph[1], numinputs=len(self._cached_graph[0]),
            numoutputs=len(self._cached_graph[1].list_outputs()))])
        return s.format(name=self.__class__.__name__, modstr=modstr)

    def __init__(self, outputs, inputs, params=None):
        super().__init__(prefix=None, params=None)
        self._prefix = ''
        self._params = ParameterDict('', params)
        if isinstance(inputs, Symbol) and len(inputs.list_outputs()) == 1:
            inputs = [inputs]
        if isinstance(outputs, (list, tuple)) and len(outputs) == 1:
            outputs = outputs[0]
        syms, self._in_format = _flatten(inputs, 'input')
        out, self._out_format = _flatten(outputs, 'output')
        out = symbol.Group(out) if len(out) > 1 else out[0]
        input_names = set()
        for s in syms:
            assert len(s.get_internals().list_outputs()) == 1, \
                'Input symbols must be variable, but %s is an output of operators' % str(s)
            input_names.add(s.name)
        arg_types, aux_types = {}, {}
        in_types = {}
        for s in syms:
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                known = s.infer_type()[0]
            if not known or known[0] is None:
                in_types = None
                break
            in_types[s.name] = known[0]
        if in_types:
            try:
                at, _, xt = out.infer_type(**in_types)
                arg_types = dict(zip(out.list_arguments(), at or ()))
                aux_types = dict(zip(out.list_auxiliary_states(), xt or ()))
            except Exception:       # noqa: BLE001  (then float32, MXNet's default)
                arg_types, aux_types = {}, {}
        for arg in out.list_arguments():
            if arg not in input_names:
                self.params.get(arg, allow_deferred_init=True,
                                dtype=arg_types.get(arg) or mx_real_t)
        for aux in out.list_auxiliary_states():
            if aux not in input_names:
                self.params.get(aux, grad_req='null', allow_deferred_init=True,
                                dtype=aux_types.get(aux) or mx_real_t)
        for node in out._nodes():        # (csr inputs are fine, as in MXNet)
            assert node.op is not None or node.attrs.get('__storage_type__') != '1', \
                "SymbolBlock doesn't support Parameter '%s' because its storage type is " \
                "'row_sparse'." % node.name
        self._cached_graph = syms, out
        # registered under their names less the common prefix (the structural names that
        # save_parameters writes), as MXNet's SymbolBlock
        common = len(os.path.commonprefix(list(self.params.keys())))
        self._reg_params = {k[common:]: v for k, v in self.params.items()}

    def _get_graph(self, *args):
        return self._cached_graph

    def _graph_params(self):
        return dict(self.params.items())

    def forward(self, x, *args):
        if isinstance(x, NDArray):
            with x.context:
                return self._call_cached_op(x, *args)
        assert isinstance(x, Symbol), \
            'HybridBlock requires the first argument to forward be either Symbol or NDArray, ' \
            'but got %s' % type(x)
        flat, _ = _flatten([x] + list(args), 'input')
        out = self._cached_graph[1]
        mapping = {i.name: j for i, j in zip(self._cached_graph[0], flat)}
        ret = out(**mapping)
        return _regroup(list(ret), self._out_format)[0]

    def _clear_cached_op(self):
        graph = self._cached_graph
        super()._clear_cached_op()
        self._cached_graph = graph

    def cast(self, dtype):
        self._clear_cached_op()
        super().cast(dtype)
        if np.dtype(dtype).name == 'float16':
            inputs = self._cached_graph[1].get_internals().list_inputs()
            for node in inputs:
                for stat, sibs in (('running_var', ('running_mean', 'gamma', 'beta')),
                                   ('moving_var', ('moving_mean', 'gamma', 'beta'))):
                    if node.endswith(stat):
                        prefix = node[:-len(stat)]
                        if all(prefix + s in inputs for s in sibs):
                            self.params.get(node).cast('float32')
                            for s in sibs:
                                self.params.get(prefix + s).cast('float32')

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError
