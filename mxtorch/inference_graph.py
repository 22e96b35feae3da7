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
  unique, boolean indexing, repeat_interleave by a tensor, ...): Python reading such a shape
  would be frozen too;
* the replay of the graph on the traced inputs differs from the traced run.

Operators whose Python reads values by design while their output shapes follow from their
inputs' (OpDef.reads_values: box_nms, MultiBoxDetection, Proposal, ...) are recorded instead as
one opaque operator (`opaque`, mxtorch::opaque_call) that runs their forward at each replay, so
detection networks with non-maximum suppression in the graph get their graph too.

The inference plan keeps some derived tensors between calls (fusion.py: folded and packed
convolution weights, values computed from parameters alone), each keyed on its source tensors'
version counters. While tracing they are handed to the graph as extra inputs (the tracer maps
the very tensor objects), and the graph runs only while every such source is the same tensor
at the same version as when traced; otherwise the eager function runs (refreshing what it
keeps) and the graph is traced again later. Graphs are traced only where tracing (one more
run of the function) costs little: when an eager forward takes less than `PER_STEP_SECONDS` per
operator and `MAX_SECONDS` in all (thread CPU time).

On CPU a second graph is tried for the same forward: oneDNN Graph (PyTorch's TorchScript fuser
for it, `torch.jit.enable_onednn_fusion`), which compiles each convolution with its post-ops (or
other fusable chain) once and then only executes it, where PyTorch's own oneDNN convolution
call rebuilds its primitive descriptor every call (~15-25 us each: most of a small net's time),
and picks its own blocked layouts. For it the plan is traced with its operators' plain ATen
forms (`plain()`: no channels-last copies, no prepacked oneDNN calls), with the inputs that
stayed the same tensor at the same version over the eager calls (the parameters) and the kept
values as constants, guarded like the kept values. It is tried for forwards up to
`MAX_SECONDS` whatever their number of steps (their big convolutions gain too), kept only where
its outputs agree with the eager function's to `ONEDNN_TOLERANCE` of each output's scale (its
kernels sum in other orders; the few graphs its fuser computes wrongly are caught here), and
each graph is timed over a few calls (`TIMED_CALLS`, more for short ones): the faster (or the
eager function, if clearly faster still) is kept, and traced again directly after a change.
Transformer-like graphs of small matrix products usually stay with PyTorch's graph, convolution
nets go to oneDNN Graph.

`MXTORCH_GRAPH=0` turns both off, `MXTORCH_ONEDNN_GRAPH=0` the oneDNN one alone
(`MXTORCH_ONEDNN_GRAPH=always` keeps it wherever it is valid, untimed).
"""
import operator
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
TIMED_CALLS = 3             # calls each graph is timed over before the faster one is kept,
TIMED_SECONDS = 0.03        # ... more for short calls: until they add up to this (at most
MAX_TIMED_CALLS = 40        # this many): a fastest call of a few is noisy at 0.3 ms a call
ONEDNN_TOLERANCE = 2e-5     # a oneDNN graph's outputs within this much of each output's scale
_DYNAMIC_SHAPE = {'aten::nonzero', 'aten::nonzero_numpy', 'aten::argwhere',
                  'aten::masked_select', 'aten::unique', 'aten::_unique', 'aten::_unique2',
                  'aten::unique_consecutive', 'aten::unique_dim', 'aten::bincount',
                  'aten::repeat_interleave', 'aten::histc', 'aten::item', 'aten::_local_scalar_dense'}
_SHAPE_SOURCES = {'aten::size', 'aten::dim', 'aten::numel', 'prim::Constant'}
_CONVERSIONS = ('__bool__', '__int__', '__float__', '__index__', 'item', 'tolist', 'numpy',
                '__array__')
_STATE = threading.local()     # .log: kept values noted while recording; .tracing, .plain
_PATCH_LOCK = threading.Lock()


def enabled():
    return os.environ.get('MXTORCH_GRAPH', '1') != '0'


def _onednn_mode():
    """'0' (off), '1' (tried, kept where faster) or 'always' (kept where valid)."""
    return os.environ.get('MXTORCH_ONEDNN_GRAPH', '1').strip().lower()


def tracing():
    """Whether this thread is tracing an inference graph (either kind)."""
    return getattr(_STATE, 'tracing', False)


def capturing():
    """Whether this thread is tracing an inference graph for PyTorch's interpreter: kernels
    chosen for eager calls (not the plain ones export tracing wants) are what it should
    record."""
    return getattr(_STATE, 'tracing', False) and not getattr(_STATE, 'plain', False)


def plain():
    """Whether this thread is tracing an inference graph for oneDNN Graph: operators should
    record their plain ATen forms (its fuser's patterns), not layout copies or prepacked oneDNN
    calls."""
    return getattr(_STATE, 'plain', False)


def note(sources, value, settled):
    """Called by a kept value (fusion.py) each time it is read: `value` (a tensor or a tuple of
    them) derived from the tensors `sources`; settled: read from the cache, not computed now."""
    log = getattr(_STATE, 'log', None)
    if log is not None:
        log.append((sources, value, settled))


class _Graph:
    """A traced graph and what running it needs: `live`, the positions of the inputs it takes
    (None: all of them, then `extras`, the kept values); the input shapes and dtypes; `guards`,
    (position, tensor, version) of the inputs it holds as they were when traced; the nesting
    of the function's outputs."""

    def __init__(self, fn, kind, inputs, live, extras, guards, structure):
        self.fn, self.kind, self.live, self.extras = fn, kind, live, tuple(extras)
        self.guards, self.structure = guards, structure
        checked = range(len(inputs)) if live is None else live
        self.shapes = [(i, inputs[i].shape, inputs[i].dtype) for i in checked]
        self.count = len(inputs)
        self.objects = list(inputs)              # the very tensors traced (a quick check)
        self.guarded = [i for i, _, _ in guards]
        self.versions = [v for _, _, v in guards]
        self.pick = operator.itemgetter(*live) if live else None
        self.rebuild = _rebuilder(structure)

    def valid_for(self, inputs):
        """Whether the graph computes the function for these inputs: the same shapes and dtypes,
        and its guarded inputs the same tensors at the same versions. (The executor passes the
        same tensors every call, whose shapes do not change: checked by identity at C speed.)"""
        if len(inputs) != self.count:
            return False
        if not all(map(operator.is_, inputs, self.objects)):
            for i, shape, dtype in self.shapes:
                t = inputs[i]
                if t.shape != shape or t.dtype != dtype:
                    return False
            for i, source, _ in self.guards:
                if inputs[i] is not source:
                    return False
        return list(map(_VERSION, map(inputs.__getitem__, self.guarded))) == self.versions

    def flat(self, inputs):
        if self.live is None:
            return self.fn(*inputs, *self.extras)
        if len(self.live) == 1:
            return self.fn(self.pick(inputs), *self.extras)
        return self.fn(*self.pick(inputs), *self.extras) if self.live else self.fn(*self.extras)

    def __call__(self, inputs):
        return self.rebuild(self.flat(inputs))


_VERSION = operator.attrgetter('_version')


def _rebuilder(structure):
    """flat outputs -> the function's nested tuples, as one generated expression."""
    count = [0]

    def expr(s):
        if s is None:
            count[0] += 1
            return 'f[%d]' % (count[0] - 1)
        return '(' + ''.join(expr(v) + ', ' for v in s) + ')'
    return eval('lambda f: ' + expr(structure))      # noqa: S307 - our own expression


class GraphForward:
    """fn(*input tensors) -> nested tuples of tensors, replaced by a traced graph (see above)."""

    def __init__(self, eager, steps):
        self.eager = eager
        self.steps = steps
        self.graph = None          # the _Graph in use (or being timed)
        self.refused = None        # why this forward stays eager (None: not decided)
        self.calls = 0
        self.retraces = 0
        self.used = 0
        self.last_seconds = None
        self.eager_seconds = None  # the fastest eager call since the start (not the first)
        self.seen = None           # (inputs, their versions) at the last eager call
        self.stable = None         # per input: the same tensor at the same version so far
        self.trial = None          # the current graph's call times while it is timed
        self.best = None           # (seconds, _Graph or None: the eager function) timed so far
        self.pending = None        # the kind of graph the next eager call traces
        self.choice = None         # the kind kept last time ('torch', 'onednn'): traced again
        self.onednn_refused = None  # why no oneDNN Graph (None: not decided)

    def __call__(self, *inputs):
        graph = self.graph
        if graph is not None:
            if graph.valid_for(inputs):
                if self.trial is None:
                    self.used += 1
                    return graph(inputs)
                return self._timed(graph, inputs)
            self._invalidated()
        if self.refused is not None or torch.is_grad_enabled():
            return self.eager(*inputs)
        self.calls += 1
        self._watch(inputs)
        kind = self.pending or (self._next_kind() if self.calls > WARMUP else None)
        if kind is None:
            start = time.thread_time()
            out = self.eager(*inputs)
            self.last_seconds = seconds = time.thread_time() - start
            if self.calls > 1 and (self.eager_seconds is None or seconds < self.eager_seconds):
                self.eager_seconds = seconds
            return out
        self.pending = kind
        if any(type(t) is not torch.Tensor or t.layout != torch.strided or t.requires_grad
               for t in inputs):
            self.refused = 'an input is not a plain dense tensor'
            return self.eager(*inputs)
        return (self._trace_onednn if kind == 'onednn' else self._trace)(inputs)

    def _next_kind(self):
        """The kind of graph worth tracing now, or None (the eager function again)."""
        seconds = self.eager_seconds or self.last_seconds
        if seconds is None:
            return None
        cheap = seconds <= min(MAX_SECONDS, PER_STEP_SECONDS * self.steps)
        onednn = self._onednn_next()
        if self.choice == 'onednn' and onednn or self.choice == 'torch' and cheap:
            return self.choice
        if self.choice is None and onednn and _onednn_mode() == 'always':
            return 'onednn'
        if self.choice is None and cheap:
            return 'torch'
        if self.choice is None and onednn:
            self.best = (self.eager_seconds or seconds, None)
            return 'onednn'
        return None

    def _watch(self, inputs):
        versions = [t._version for t in inputs]
        if self.seen is None or len(self.seen[0]) != len(inputs):
            self.stable = [True] * len(inputs)
        else:
            old, old_versions = self.seen
            self.stable = [s and a is b and u == v for s, a, b, u, v in
                           zip(self.stable, old, inputs, old_versions, versions)]
        self.seen = (list(inputs), versions)

    def _invalidated(self):
        self.graph = self.trial = self.best = self.pending = None
        if self.used < 2:
            self.retraces += 1
            if self.retraces >= MAX_RETRACES:
                self.refused = 'the kept values change between calls'
        self.calls = self.used = 0
        self.seen = self.eager_seconds = None

    # ---- choosing between the graphs --------------------------------------------------------
    def _use(self, graph):
        """Run `graph` from now on: timed first where another candidate is still to come."""
        self.graph, self.pending, self.used = graph, None, 0
        timed = self.choice is None and not (graph.kind == 'onednn' and _onednn_mode() == 'always')
        self.trial = [] if timed else None
        if not timed:
            self.choice = graph.kind

    def _timed(self, graph, inputs):
        start = time.thread_time()
        out = graph(inputs)
        trial = self.trial
        trial.append(time.thread_time() - start)
        if len(trial) > MAX_TIMED_CALLS or len(trial) > TIMED_CALLS and \
                sum(trial) - trial[0] >= TIMED_SECONDS:    # (the first call not counted)
            seconds, self.trial = min(trial[1:]), None
            # a graph is kept unless the eager function is clearly faster (the timing is noisy;
            # a graph spares the Python)
            if self.best is None or seconds < self.best[0] * (1.0 if self.best[1] else 1.05):
                self.best = (seconds, graph)
            if graph.kind == 'torch' and self._onednn_next():
                self.graph, self.pending = None, 'onednn'
            else:
                self._decide()
        return out

    def _onednn_next(self):
        """Whether a oneDNN graph is still to be tried for this forward (not refused, and an
        eager call of MAX_SECONDS at most)."""
        seconds = self.eager_seconds or self.last_seconds
        return self.onednn_refused is None and onednn_graph_available() and \
            seconds is not None and seconds <= MAX_SECONDS

    def _decide(self):
        """Keep the fastest of the candidates timed."""
        best = self.best[1] if self.best is not None else None
        self.graph, self.trial, self.pending, self.best = best, None, None, None
        if best is None:
            self.refused = 'the eager function is faster than the graphs'
        else:
            self.choice = best.kind

    def _failed(self, kind, why, out):
        """A graph of `kind` could not be made: the one timed before it (if any) is kept."""
        self.pending = None
        if kind == 'onednn':
            self.onednn_refused = why
            if self.best is not None and self.best[1] is not None:
                self._decide()
            elif self.choice is None and self.best is not None:   # only eager was timed
                self.best = None                      # (the eager function stays, untimed)
            if self.choice == 'onednn':
                self.choice = None
        else:
            self.refused = why
        return out

    # ---- tracing ----------------------------------------------------------------------------
    def _trace(self, inputs):
        out, log = _recording(self.eager, inputs)
        kept = _kept_tensors(log)
        if kept is None:               # a kept value was (re)computed: not settled yet
            return out
        extras, sources = kept
        position = {id(t): i for i, t in enumerate(inputs)}
        if any(id(s) not in position for s in sources):
            return self._failed('torch', 'a kept value derives from a computed tensor', out)
        n = len(inputs)
        structure = []

        def flat(*args):
            result = self.eager(*args[:n])
            structure[:] = [_structure(result)]
            return tuple(_flatten(result))
        try:
            fn, why, _ = _trace(flat, tuple(inputs) + tuple(extras), extras)
        except Exception as err:  # noqa: BLE001 - anything the tracer cannot take: stay eager
            fn, why = None, '%s: %s' % (type(err).__name__, str(err)[:200])
        if fn is None:
            return self._failed('torch', why, out)
        expected = tuple(_flatten(out))
        got = fn(*inputs, *extras)
        if not _same(got, expected):
            return self._failed('torch', 'the graph computes other values than the function',
                                out)
        self._use(_Graph(fn, 'torch', inputs, None, extras,
                         [(position[id(s)], s, s._version) for s in sources], structure[0]))
        return self.graph.rebuild(got)

    def _trace_onednn(self, inputs):
        """oneDNN Graph's: the plan traced in plain() mode, the stable inputs and kept values
        as constants (but oneDNN's packed weights, which a graph cannot hold: inputs after the
        live ones), compiled by the fuser on its first calls."""
        _STATE.plain = True
        try:
            out, log = _recording(self.eager, inputs)        # (the plain form's kept values)
        finally:
            _STATE.plain = False
        if any(t.device.type != 'cpu' for t in inputs):
            return self._failed('onednn', 'not on the CPU', out)
        kept = _kept_tensors(log)
        if kept is None:               # a kept value was (re)computed: not settled yet
            return out
        opaque = tuple(t for t in kept[0] if t.layout != torch.strided)
        stable = self.stable or [False] * len(inputs)
        live = [i for i, s in enumerate(stable) if not s]
        structure = []

        def flat(*args):
            full = list(inputs)
            for i, t in zip(live, args):
                full[i] = t
            result = self.eager(*full)
            structure[:] = [_structure(result)]
            return tuple(_flatten(result))
        _STATE.plain = True
        try:
            fn, why, sources = _trace(flat, tuple(inputs[i] for i in live) + opaque, None)
        except Exception as err:  # noqa: BLE001 - anything the tracer cannot take
            fn, why = None, '%s: %s' % (type(err).__name__, str(err)[:200])
        finally:
            _STATE.plain = False
        if fn is None:
            return self._failed('onednn', why, out)
        position = {id(t): i for i, t in enumerate(inputs)}
        if any(id(s) not in position or not stable[position[id(s)]] for s in sources):
            return self._failed('onednn', 'a kept value derives from a changing tensor', out)
        args = [inputs[i] for i in live] + list(opaque)
        try:
            got = _onednn_compile(fn, args)
        except RuntimeError as err:       # a pattern the fuser cannot build
            return self._failed('onednn', 'oneDNN Graph: %s' % str(err)[:200], out)
        if not _same(got, tuple(_flatten(out)), ONEDNN_TOLERANCE):
            return self._failed('onednn', 'the graph computes other values than the function',
                                out)
        guards = [(i, inputs[i], inputs[i]._version) for i, s in enumerate(stable) if s]
        self._use(_Graph(fn, 'onednn', inputs, live, opaque, guards, structure[0]))
        return out


# ---- operators that read values, as opaque calls in a traced graph ---------------------------
_OPAQUE = []           # handle -> [fn, whether it returns a tuple]


@torch.library.custom_op('mxtorch::opaque_call', mutates_args=())
def _opaque_call(handle: int, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Run the forward registered as `handle` on `inputs`; its outputs as a list (copies of any
    that share memory with an input: an operator's outputs are its own)."""
    from .ndarray.ndarray import _fresh       # (which imports the operators, and so this)
    entry = _OPAQUE[handle]
    result = entry[0](*inputs)
    entry[1] = isinstance(result, (tuple, list))
    return [_fresh(o, inputs) for o in (result if entry[1] else [result])]


def opaque(fn):
    """fn(*tensors) (an operator's bound forward, OpDef.reads_values), recorded while an
    inference graph is traced as one call of mxtorch::opaque_call: the tracer neither follows
    its Python (which reads values, so a trace of it would freeze this input's decisions) nor
    gives up on the graph; the graph calls fn itself each time it runs. Elsewhere fn as it is."""
    entry = None

    def call(*tensors):
        nonlocal entry
        if not getattr(_STATE, 'tracing', False):
            return fn(*tensors)
        if entry is None:
            entry = [fn, None]
            _OPAQUE.append(entry)
            entry.append(len(_OPAQUE) - 1)
        outs = torch.ops.mxtorch.opaque_call(entry[2], list(tensors))
        return tuple(outs) if entry[1] else outs[0]
    return call


def onednn_graph_available():
    """Whether this PyTorch has the oneDNN Graph fuser for TorchScript (and it is wanted)."""
    return _onednn_mode() not in ('0', 'off', 'false', 'no') and \
        hasattr(torch._C, '_jit_set_llga_enabled') and torch.backends.mkldnn.is_available()


def _onednn_compile(fn, args):
    """Run fn on args with oneDNN Graph's fuser on, so that the profiling executor fuses its
    graph (a profiled run, then the optimised one); the last run's outputs. A graph without
    inputs (its constants folded into its outputs) is left alone: the fuser crashes on it."""
    if not args:
        return fn()
    before = torch._C._jit_llga_enabled()
    torch._C._jit_set_llga_enabled(True)
    try:
        with torch.no_grad():
            for _ in range(torch._C._jit_get_num_profiled_runs() + 2):
                got = fn(*args)
    finally:
        torch._C._jit_set_llga_enabled(before)
    return got


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
    """(the traced graph, None, the kept values' sources) or (None, why not, None). extras:
    the kept values the graph takes as inputs (None: it holds them as constants)."""
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
        return None, 'the Python reads tensor values (%s)' % _STATE.data_dependent, None
    kept = _kept_tensors(log)
    if kept is None or extras is not None and any(all(t is not e for e in extras)
                                                  for t in kept[0]):
        return None, 'the kept values changed while tracing', None
    for node in graph.graph.nodes():
        kind = node.kind()
        if kind in _DYNAMIC_SHAPE and not _static_repeats(node) or \
                (kind == 'aten::index' and _boolean_index(node)):
            return None, 'an output shape depends on values (%s)' % kind, None
    return _fixed_shapes(graph), None, kept[1]


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


def _static_repeats(node):
    """Whether a node is repeat_interleave by a number of repeats (not a tensor of them): its
    output shape follows from its input's."""
    if node.kind() != 'aten::repeat_interleave':
        return False
    ins = list(node.inputs())
    repeats = ins[1] if len(ins) > 1 else ins[0]
    return not isinstance(repeats.type(), torch._C.TensorType)


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


def _same(got, expected, scaled=None):
    """Whether the graph's outputs are the function's: floats within rounding of each element
    (a replay of the same kernels), or with `scaled`, within `scaled` times the output's largest
    magnitude (other kernels: oneDNN Graph's blocked layouts sum in another order)."""
    if len(got) != len(expected):
        return False
    for g, e in zip(got, expected):
        if not isinstance(g, torch.Tensor) or g.shape != e.shape or g.dtype != e.dtype:
            return False
        if (e.dtype.is_floating_point or e.dtype.is_complex) and scaled and e.numel():
            if not torch.equal(g.isnan(), e.isnan()):
                return False
            finite = e.isfinite()
            if not torch.equal(g[~finite], e[~finite]):       # (infinities where they were)
                return False
            g, e = g[finite], e[finite]
            if e.numel() and float((g - e).abs().max()) > scaled * float(e.abs().max()):
                return False
        elif e.dtype.is_floating_point or e.dtype.is_complex:
            if not torch.allclose(g, e, rtol=1e-5, atol=1e-6, equal_nan=True):
                return False
        elif not torch.equal(g, e):
            return False
    return True
