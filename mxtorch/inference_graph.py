"""An inference forward run as one TorchScript graph, where its Python per-operator cost shows.

A bound executor's inference plan (fusion.py's) is a generated Python function calling one
Python callable per operator; on small graphs that dispatch, not the arithmetic, is most of the
time (a BERT layer at sequence length 8: ~8 us of Python per operator against ~2 us of kernel).
`GraphForward` wraps such a function: after two eager calls it traces the third with
torch.jit.trace and, from then on, runs the recorded graph (TorchScript's interpreter calls the
same ATen kernels without the Python around them).

A trace is only a valid replay of the function when the function's Python did not look at
tensor values, so a trace is given up for good (the eager function runs, as before) when:

* a tensor derived from an input's values (not only from shapes) was converted to a Python
  value while tracing (`bool(t)`, `t.item()`, `t.tolist()`, `numpy()` ...): data-dependent
  control flow, which the graph would freeze;
* the graph holds an operator whose output shape depends on values (nonzero, masked_select,
  unique, boolean indexing, ...): Python reading such a shape would be frozen too;
* the replay of the graph on the traced inputs differs from the traced run.

The inference plan keeps some derived tensors between calls (fusion.py: folded and packed
convolution weights, values computed from parameters alone), each keyed on its source tensors'
version counters. While tracing they are handed to the graph as extra inputs (the tracer maps
the very tensor objects), and the graph runs only while every such source is the same tensor
at the same version as when traced; otherwise the eager function runs (refreshing what it
keeps) and the graph is traced again later. Graphs are traced only where tracing (one more
run of the function) costs little: when an eager forward takes less than `PER_STEP_SECONDS` per
operator and `MAX_SECONDS` in all (thread CPU time).

`MXTORCH_GRAPH=0` turns this off.
"""
import os
import sys
import threading
import time
import warnings

import torch

WARMUP = 2                  # eager calls before tracing (the kept values settle)
PER_STEP_SECONDS = 1e-3     # trace when an eager forward takes less than this per step ...
MAX_SECONDS = 1.0           # ... and less than this in all (tracing runs it once more)
MAX_RETRACES = 4            # graphs invalidated before use this often: eager from then on
_DYNAMIC_SHAPE = {'aten::nonzero', 'aten::nonzero_numpy', 'aten::argwhere',
                  'aten::masked_select', 'aten::unique', 'aten::_unique', 'aten::_unique2',
                  'aten::unique_consecutive', 'aten::unique_dim', 'aten::bincount',
                  'aten::repeat_interleave', 'aten::histc', 'aten::item', 'aten::_local_scalar_dense'}
_SHAPE_SOURCES = {'aten::size', 'aten::dim', 'aten::numel', 'prim::Constant'}
_CONVERSIONS = ('__bool__', '__int__', '__float__', '__index__', 'item', 'tolist', 'numpy',
                '__array__')
_STATE = threading.local()     # .log: kept values noted while recording; .tracing: bool
_PATCH_LOCK = threading.Lock()


def enabled():
    return os.environ.get('MXTORCH_GRAPH', '1') != '0'


def capturing():
    """Whether this thread is tracing an inference graph: kernels chosen for eager calls (not
    the plain ones export tracing wants) are what it should record."""
    return getattr(_STATE, 'tracing', False)


def note(sources, value, settled):
    """Called by a kept value (fusion.py) each time it is read: `value` (a tensor or a tuple of
    them) derived from the tensors `sources`; settled: read from the cache, not computed now."""
    log = getattr(_STATE, 'log', None)
    if log is not None:
        log.append((sources, value, settled))


class GraphForward:
    """fn(*input tensors) -> nested tuples of tensors, replaced by a traced graph (see above)."""

    def __init__(self, eager, steps):
        self.eager = eager
        self.steps = steps
        self.graph = None
        self.refused = None        # why this forward stays eager (None: not decided)
        self.calls = 0
        self.retraces = 0
        self.last_seconds = None

    def __call__(self, *inputs):
        graph = self.graph
        if graph is not None:
            if self._unchanged(inputs):
                self.used += 1
                return self._unflatten(graph(*inputs, *self.extras))
            self.graph = None
            if self.used < 2:
                self.retraces += 1
                if self.retraces >= MAX_RETRACES:
                    self.refused = 'the kept values change between calls'
            self.calls = 0
        if self.refused is not None or torch.is_grad_enabled():
            return self.eager(*inputs)
        self.calls += 1
        if self.calls <= WARMUP or (self.last_seconds is not None and self.last_seconds > min(
                MAX_SECONDS, PER_STEP_SECONDS * self.steps)):
            start = time.thread_time()
            out = self.eager(*inputs)
            self.last_seconds = time.thread_time() - start
            return out
        return self._trace(inputs)

    # ---- guards -----------------------------------------------------------------------------
    def _unchanged(self, inputs):
        if len(inputs) != len(self.shapes):
            return False
        for t, (shape, dtype) in zip(inputs, self.shapes):
            if t.shape != shape or t.dtype != dtype:
                return False
        for i, source, version in self.guards:
            if inputs[i] is not source or source._version != version:
                return False
        return True

    # ---- tracing ----------------------------------------------------------------------------
    def _trace(self, inputs):
        if any(type(t) is not torch.Tensor or t.layout != torch.strided or t.requires_grad
               for t in inputs):
            self.refused = 'an input is not a plain dense tensor'
            return self.eager(*inputs)
        out, log = _recording(self.eager, inputs)
        kept = _kept_tensors(log)
        if kept is None:               # a kept value was (re)computed: not settled yet
            return out
        extras, sources = kept
        position = {id(t): i for i, t in enumerate(inputs)}
        if any(id(s) not in position for s in sources):
            self.refused = 'a kept value derives from a computed tensor'
            return out
        n = len(inputs)
        structure = []

        def flat(*args):
            result = self.eager(*args[:n])
            structure[:] = [_structure(result)]
            return tuple(_flatten(result))
        try:
            graph, why = _trace(flat, tuple(inputs) + tuple(extras), extras)
        except Exception as err:  # noqa: BLE001 - anything the tracer cannot take: stay eager
            graph, why = None, '%s: %s' % (type(err).__name__, str(err)[:200])
        if graph is None:
            self.refused = why
            return out
        expected = tuple(_flatten(out))
        got = graph(*inputs, *extras)
        if not _same(got, expected):
            self.refused = 'the graph computes other values than the function'
            return out
        self.graph, self.extras, self.structure, self.used = graph, tuple(extras), \
            structure[0], 0
        self.shapes = [(t.shape, t.dtype) for t in inputs]
        self.guards = [(position[id(s)], s, s._version) for s in sources]
        return self._unflatten(got)

    def _unflatten(self, flat):
        return _rebuild(self.structure, iter(flat))


def _recording(fn, inputs):
    _STATE.log = []
    try:
        out = fn(*inputs)
        return out, _STATE.log
    finally:
        _STATE.log = None


def _kept_tensors(log):
    """(the kept tensors read, their source tensors), each once; None if one was computed."""
    extras, sources, seen = [], [], set()
    for srcs, value, settled in log:
        if not settled:
            return None
        for t in (value if isinstance(value, tuple) else (value,)):
            if isinstance(t, torch.Tensor) and id(t) not in seen:
                seen.add(id(t))
                extras.append(t)
        for s in srcs:
            if isinstance(s, torch.Tensor) and id(s) not in seen:
                seen.add(id(s))
                sources.append(s)
    return extras, sources


def _trace(flat, example, extras):
    """(the traced graph, None) or (None, why not)."""
    _STATE.data_dependent = None
    _STATE.log = []
    with _PATCH_LOCK, warnings.catch_warnings():
        warnings.simplefilter('ignore')
        originals = {name: getattr(torch.Tensor, name) for name in _CONVERSIONS}
        for name, method in originals.items():
            setattr(torch.Tensor, name, _watched(name, method))
        _STATE.tracing = True
        try:
            graph = torch.jit.trace(flat, example, check_trace=False, strict=False)
        finally:
            _STATE.tracing = False
            for name, method in originals.items():
                setattr(torch.Tensor, name, method)
            log, _STATE.log = _STATE.log, None
    if _STATE.data_dependent:
        return None, 'the Python reads tensor values (%s)' % _STATE.data_dependent
    kept = _kept_tensors(log)
    if kept is None or any(all(t is not e for e in extras) for t in kept[0]):
        return None, 'the kept values changed while tracing'
    for node in graph.graph.nodes():
        kind = node.kind()
        if kind in _DYNAMIC_SHAPE or (kind == 'aten::index' and _boolean_index(node)):
            return None, 'an output shape depends on values (%s)' % kind
    return _fixed_shapes(graph), None


def _fixed_shapes(function):
    """The traced function with every size read (aten::size) replaced by the number it read and
    the arithmetic on those folded: the graph runs only for the traced input shapes (the guard
    checks them) and no value-dependent shapes (refused above), so every size is a constant.
    The function as traced where the graph API refuses."""
    try:
        graph = function.graph.copy()
        for node in list(graph.nodes()):
            ins = list(node.inputs())
            if node.kind() != 'aten::size' or len(ins) != 2 or \
                    not isinstance(ins[0].type(), torch._C.TensorType):
                continue
            sizes, dim = ins[0].type().sizes(), ins[1].toIValue()
            if sizes is None or dim is None:
                continue
            constant = graph.create('prim::Constant')
            constant.i_('value', sizes[dim])
            constant.output().setType(torch._C.IntType.get())
            constant.insertBefore(node)
            node.output().replaceAllUsesWith(constant.output())
        torch._C._jit_pass_constant_propagation(graph)
        torch._C._jit_pass_dce(graph)
        return torch._C._create_function_from_graph('inference_graph', graph)
    except (RuntimeError, AttributeError, TypeError):
        return function


def _boolean_index(node):
    """Whether an aten::index node indexes with a boolean mask (its output shape counts it)."""
    values = []
    for value in node.inputs():
        producer = value.node()
        values.extend(producer.inputs() if producer.kind() == 'prim::ListConstruct' else
                      [value])
    return any(isinstance(v.type(), torch._C.TensorType) and
               v.type().scalarType() in ('Bool', 'Byte') for v in values)


def _watched(name, method):
    def converting(self, *args, **kwargs):
        if getattr(_STATE, 'tracing', False) and not _STATE.data_dependent and \
                torch._C._is_tracing() and not _from_shapes(self):
            caller = sys._getframe(1)
            _STATE.data_dependent = '%s at %s:%d' % (
                name, os.path.basename(caller.f_code.co_filename), caller.f_lineno)
        return method(self, *args, **kwargs)
    converting.__name__ = name
    return converting


def _from_shapes(tensor):
    """Whether the traced tensor is computed from tensor shapes and constants alone."""
    try:
        value = torch._C._get_value_trace(tensor)
    except RuntimeError:
        return True                     # not produced by traced operators: a constant
    stack, seen = [value], set()
    while stack:
        node = stack.pop().node()
        kind = node.kind()
        if kind in _SHAPE_SOURCES:
            continue
        if kind == 'prim::Param':
            return False
        for v in node.inputs():
            if v.unique() not in seen:
                seen.add(v.unique())
                stack.append(v)
    return True


def _structure(value):
    if isinstance(value, (tuple, list)):
        return [_structure(v) for v in value]
    return None


def _flatten(value):
    if isinstance(value, (tuple, list)):
        for v in value:
            yield from _flatten(v)
    else:
        yield value


def _rebuild(structure, it):
    if structure is None:
        return next(it)
    return tuple(_rebuild(s, it) for s in structure)


def _same(got, expected):
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected):
        if not isinstance(g, torch.Tensor) or g.shape != e.shape or g.dtype != e.dtype:
            return False
        if e.dtype.is_floating_point or e.dtype.is_complex:
            if not torch.allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True):
                return False
        elif not torch.equal(g, e):
            return False
    return True
