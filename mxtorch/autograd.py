"""mx.autograd: imperative recording over torch autograd.

`with mx.autograd.record():` runs `mx.nd` operators with torch's graph recording on;
`x.attach_grad()` (or `mark_variables`) makes x a leaf whose gradient lands in `x.grad` after
`y.backward()`; `grad(heads, variables, create_graph=True)` returns gradients that are recorded
themselves, so they can be differentiated again. `is_training()` decides the mode of
Dropout/BatchNorm in `mx.nd` calls. Each recorded operator call also leaves a small record on its
outputs, from which `get_symbol` rebuilds the computation as an `mx.sym` Symbol.
"""
import threading
import weakref

import torch

from . import int_grad, joint
from .base import MXNetError
from .ndarray.ndarray import NDArray

_state = threading.local()

_GRAD_REQS = ('null', 'write', 'add')


def is_recording():
    return getattr(_state, 'recording', False)


def is_training():
    return getattr(_state, 'training', False)


def set_recording(is_recording):  # pylint: disable=redefined-outer-name
    """Turn recording on or off; returns the previous state."""
    prev = getattr(_state, 'recording', False)
    _state.recording = bool(is_recording)
    return prev


def set_training(train_mode):  # pylint: disable=redefined-outer-name
    """Turn training mode on or off; returns the previous state."""
    prev = is_training()
    _state.training = bool(train_mode)
    return prev


class _RecordingStateScope:
    """Sets recording and/or training state inside a `with` block (None leaves one as it is)."""

    def __init__(self, is_record, train_mode):  # pylint: disable=redefined-outer-name
        self._enter_is_record = is_record
        self._enter_train_mode = train_mode
        self._prev_is_record = None
        self._prev_train_mode = None

    def __enter__(self):
        if self._enter_is_record is not None:
            self._prev_is_record = set_recording(self._enter_is_record)
            _state.paused = getattr(_state, 'paused', 0) + (
                self._prev_is_record and not self._enter_is_record)
        if self._enter_train_mode is not None:
            self._prev_train_mode = set_training(self._enter_train_mode)
        return self

    def __exit__(self, *exc):
        if self._enter_is_record is not None:
            _state.paused -= self._prev_is_record and not self._enter_is_record
            set_recording(self._prev_is_record)
        if self._enter_train_mode is not None:
            set_training(self._prev_train_mode)


def record(train_mode=True):  # pylint: disable=redefined-outer-name
    """Scope in which operators are recorded for differentiation (in training mode by default)."""
    return _RecordingStateScope(True, train_mode)


def pause(train_mode=False):  # pylint: disable=redefined-outer-name
    """Scope in which operators are not recorded (in predict mode by default)."""
    return _RecordingStateScope(False, train_mode)


def train_mode():
    """Scope in which operators run in training mode; recording is left as it is."""
    return _RecordingStateScope(None, True)


def predict_mode():
    """Scope in which operators run in predict mode; recording is left as it is."""
    return _RecordingStateScope(None, False)


# ---------------------------------------------------------------------------------------------
# Variables
# ---------------------------------------------------------------------------------------------
# NDArrays whose gradient backward() fills: id -> weak reference. (A WeakSet would compare
# NDArrays with ==, which is element-wise, when the same array is attached twice.)
_attached = {}


def _attach(var):
    key = id(var)
    ref = _attached.get(key)
    if ref is not None and ref() is var:
        return

    def forget(dead, key=key):
        if _attached.get(key) is dead:
            del _attached[key]
    _attached[key] = weakref.ref(var, forget)


def _differentiable(tensor):
    return tensor.is_floating_point() or tensor.is_complex()


def mark_variables(variables, gradients, grad_reqs='write'):
    """Make `variables` leaves whose gradients are written (or added) into `gradients`.

    A variable that was computed under recording becomes a fresh leaf: gradients stop there.
    """
    if isinstance(variables, NDArray):
        if not isinstance(gradients, NDArray):
            raise TypeError('mark_variables: gradients must be an NDArray when variables is one')
        variables, gradients = [variables], [gradients]
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    grad_reqs = list(grad_reqs)
    for req in grad_reqs:
        if req not in _GRAD_REQS:
            raise KeyError(req)
    if not len(variables) == len(gradients) == len(grad_reqs):
        raise MXNetError('mark_variables: %d variables, %d gradients and %d grad_reqs; the '
                         'lengths must agree' % (len(variables), len(gradients), len(grad_reqs)))
    for var, grad, req in zip(variables, gradients, grad_reqs):
        tensor = var._tensor
        if not tensor.is_leaf:
            tensor = tensor.detach()
        if tensor.requires_grad != (req != 'null' and _differentiable(tensor)):
            tensor = tensor.detach() if tensor.requires_grad else tensor
            tensor.requires_grad_(req != 'null' and _differentiable(tensor))
        if hasattr(tensor, '_mx_entry'):
            del tensor._mx_entry
        int_grad.forget(tensor)
        if req != 'null' and not _differentiable(tensor):   # an integer variable (MXNet's)
            int_grad.attach(tensor)
        if getattr(grad, '_stype', None) == 'row_sparse':    # sparse kernels give it rows
            tensor._mx_row_grad = True
        elif hasattr(tensor, '_mx_row_grad'):
            del tensor._mx_row_grad
        var._tensor = tensor
        var._grad = grad
        var._grad_req = req
        var._fresh_grad = False
        _attach(var)


def _prepare_write(target, value=None):
    """Before writing `value` (a tensor, or None for a constant) into the tensor `target`:
    while recording, an array already in the recorded graph cannot be written (MXNet's error);
    returns whether the write itself is to be recorded (value carries gradient)."""
    if not is_recording():
        return False
    if int_grad.carries_grad(target):
        raise MXNetError('Assigning to NDArrays that are already in a computational graph will '
                         'cause undefined behavior when evaluating gradients. Please call '
                         'backward first to clear the graph or do this out side of a record '
                         'section. Also note that you cannot use inplace operations like +=, *=, '
                         'relu(x, out=x), y[idx]=x, etc inside a record section.')
    return value is not None and value.requires_grad


def _paused_in_record():
    """Inside pause() within record(): where MXNet code rewrites arrays the recorded graph
    holds (spectral norm's power iteration) and backward reads the new values."""
    return getattr(_state, 'paused', 0) > 0 and not is_recording()


def _refuse_inplace(result):
    """An operator writing its recorded result into one of its own inputs (x += y, relu(x,
    out=x)) cannot be differentiated: refused while recording, as in MXNet."""
    if is_recording() and result.requires_grad:
        raise MXNetError('Inplace operations (+=, -=, x[:]=, etc) are not supported when '
                         'recording with autograd.')


def _variables():
    """The live marked variables that take gradients."""
    out = []
    for ref in list(_attached.values()):
        var = ref()
        if var is not None and var._tensor.requires_grad and var._tensor.is_leaf:
            out.append(var)
        elif var is not None and getattr(int_grad.shadow(var._tensor), 'is_leaf', False):
            out.append(var)
    return out


# ---------------------------------------------------------------------------------------------
# Differentiation
# ---------------------------------------------------------------------------------------------
def _parse_heads(heads, head_grads):
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    elif isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    else:
        head_grads = list(head_grads)
    if len(heads) != len(head_grads):
        raise AssertionError('heads and head_grads must be lists of the same length')
    for i, h in enumerate(heads):
        if not int_grad.carries_grad(h._tensor):
            raise MXNetError('Cannot differentiate head %d because it is not in a computational '
                             'graph. You need to set is_recording to true or use '
                             'autograd.record() to save computational graphs for backward. If '
                             'you want to differentiate the same graph twice, you need to pass '
                             'retain_graph=True to backward.' % i)
    tensors = [int_grad.graph_tensor(h._tensor) for h in heads]
    grads = []
    for h, g in zip(tensors, head_grads):
        if g is None:
            grads.append(torch.ones_like(h))
        else:
            grads.append(g._tensor.to(h.device, h.dtype).reshape(h.shape))
    return heads, tensors, grads


def _run_grad(tensors, grads, inputs, retain_graph, create_graph, train):
    try:
        with _RecordingStateScope(create_graph, train), torch.enable_grad():
            return torch.autograd.grad(tensors, inputs, grads, retain_graph=retain_graph,
                                       create_graph=create_graph, allow_unused=True)
    except RuntimeError as err:
        raise MXNetError('autograd: %s' % err) from None


def _release(heads):
    """Forget the history of `heads` once their graph is spent (retain_graph=False), so that
    differentiating them again fails as in MXNet instead of silently reusing it."""
    for h in heads:
        if not h._tensor.is_leaf or not getattr(int_grad.shadow(h._tensor), 'is_leaf', True):
            h._tensor = h._tensor.detach()


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):  # pylint: disable=redefined-outer-name
    """Gradients of `heads` into the `.grad` of every marked variable they depend on."""
    heads, tensors, grads = _parse_heads(heads, head_grads)
    leaves = _variables()
    if leaves:
        results = _leaf_grads(tensors, grads, [int_grad.graph_tensor(v._tensor) for v in leaves],
                              retain_graph, train_mode)
        adopted = set()
        with torch.no_grad():
            for var, g in zip(leaves, results):
                if g is None:
                    continue
                target = var._grad
                if g.is_sparse:            # rows a sparse kernel stored (embedding, dot)
                    from .executor_sparse import write_rows
                    write_rows(target, g, var._grad_req)
                    var._fresh_grad = True
                    continue
                if var._grad_req == 'add':
                    target._tensor.add_(g.to(target._tensor.dtype))
                elif id(g) not in adopted and _adoptable(g, target):
                    target._tensor = g
                    adopted.add(id(g))
                else:
                    target._tensor.copy_(g)
                var._fresh_grad = True
    if not retain_graph:
        _release(heads)


def _leaf_grads(tensors, grads, leaves, retain_graph, train):
    """The gradients of `tensors` w.r.t. the leaf tensors `leaves` (None where unreachable):
    where the graph is traced calls (hybridized blocks) below at most a few operators, run
    without torch's engine (joint.leaf_grads); else by torch's accumulation into their
    `.grad`: each is a tensor of its own (torch keeps the computed gradient when nothing else
    holds it, else a copy)."""
    try:
        direct = joint.leaf_grads(tensors, grads, retain_graph,
                                  lambda: _RecordingStateScope(False, train))
    except RuntimeError as err:
        raise MXNetError('autograd: %s' % err) from None
    if direct is not None:
        return [direct.get(id(t), _NO_GRAD)[1] for t in leaves]
    for t in leaves:
        t.grad = None
    try:
        with _RecordingStateScope(False, train), torch.enable_grad():
            if _ENGINE is None:
                torch.autograd.backward(tensors, grads, retain_graph=retain_graph, inputs=leaves)
            else:       # the engine torch.autograd.backward calls, after the checks
                _ENGINE.run_backward(tuple(tensors), tuple(grads), retain_graph, False,
                                     tuple(leaves), True, True)
    except RuntimeError as err:
        raise MXNetError('autograd: %s' % err) from None
    finally:
        results = [t.grad for t in leaves]
        for t in leaves:
            t.grad = None
    return results


_NO_GRAD = (None, None)
_storage_use_count = getattr(torch._C, '_storage_Use_Count', None)
# torch's autograd engine: the heads and head gradients are checked by _parse_heads (each head
# gradient has its head's shape, dtype and device), so backward calls it without
# torch.autograd.backward's Python-side re-validation
_ENGINE = getattr(torch.autograd.Variable, '_execution_engine', None)


def _adoptable(g, target):
    """Whether the gradient tensor `g` can become `target`'s tensor ('write' without a copy):
    a dense NDArray of g's shape, dtype and device, and g's memory shared with no other tensor
    (a gradient passed through views may be the head gradient's memory)."""
    if target.__class__ is not NDArray or _storage_use_count is None:
        return False
    t = target._tensor
    if g.shape != t.shape or g.dtype != t.dtype or g.device != t.device or \
            not g.is_contiguous() or t.requires_grad:
        return False
    storage = g.untyped_storage()
    return _storage_use_count(storage._cdata) == 2      # g's and `storage`'s references


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False,
         train_mode=True):  # pylint: disable=redefined-outer-name
    """Gradients of `heads` with respect to `variables`, returned as new NDArrays (a list).

    With create_graph=True the computation of the gradients is recorded, so they can be
    differentiated again; retain_graph defaults to create_graph.
    """
    from .ndarray.ndarray import _wrap
    heads, tensors, grads = _parse_heads(heads, head_grads)
    if isinstance(variables, NDArray):
        variables = [variables]
    elif not len(variables):
        raise AssertionError('variables cannot be an empty list.')
    for i, var in enumerate(variables):
        if not int_grad.carries_grad(var._tensor):
            raise MXNetError('Cannot differentiate with respect to the %d-th variable because '
                             'it does not require gradient.' % (i + 1))
    retain_graph = create_graph if retain_graph is None else retain_graph
    results = _run_grad(tensors, grads, [int_grad.graph_tensor(v._tensor) for v in variables],
                        retain_graph, create_graph, train_mode)
    out = []
    for i, (var, g) in enumerate(zip(variables, results)):
        if g is None:
            raise MXNetError('Cannot differentiate with respect to the %d-th variable because '
                             'it is unreachable from the outputs.' % (i + 1))
        if g._is_zerotensor():
            g = torch.zeros(g.shape, dtype=g.dtype, device=g.device)
        elif g.is_sparse:
            if not create_graph:           # the rows a sparse kernel stored, as MXNet's
                from .executor_sparse import rows_array
                out.append(rows_array(g, var._ctx, var._tensor.dtype))
                continue
            g = g.to_dense()
        if not create_graph or g.dtype != var._tensor.dtype:   # (an integer variable's)
            g = g.detach().to(var._tensor.dtype)
        elif not g.requires_grad:
            # a gradient that does not depend on the variables (x * c, clip, dropout masks)
            # stays in the graph, as in MXNet, so differentiating it again gives zeros
            g = _Anchor.apply(g, var._tensor)
        out.append(_wrap(g, var._ctx))
    if not retain_graph:
        _release(heads)
    return out


class _Anchor(torch.autograd.Function):
    """value(g, x) = g, with a zero gradient for x: keeps a constant gradient connected to x."""

    @staticmethod
    def forward(ctx, value, anchor):  # pylint: disable=arguments-differ
        ctx.anchor_meta = (anchor.shape, anchor.dtype, anchor.device)
        return value.clone()

    @staticmethod
    def backward(ctx, dvalue):  # pylint: disable=arguments-differ
        shape, dtype, device = ctx.anchor_meta
        return dvalue, torch.zeros(shape, dtype=dtype, device=device)


# ---------------------------------------------------------------------------------------------
# The recorded graph as a Symbol
# ---------------------------------------------------------------------------------------------
class _Record:
    """One recorded operator call: its OpDef, parsed params and input entries."""
    __slots__ = ('op', 'params', 'inputs')

    def __init__(self, op, params, inputs):
        self.op, self.params, self.inputs = op, params, inputs


class _Leaf:
    """An input that no recorded operator produced: a marked variable or a constant."""
    __slots__ = ('marked',)

    def __init__(self, marked):
        self.marked = marked


def _entry_of(tensor):
    entry = getattr(tensor, '_mx_entry', None)
    if entry is None:
        entry = (_Leaf(tensor.requires_grad and tensor.is_leaf), 0)
        tensor._mx_entry = entry
    return entry


def _record_op(op, params, inputs, outputs):
    """Called for each operator run while recording: note it on outputs that carry gradient."""
    for t in outputs:
        if t.requires_grad:
            break
    else:
        return
    rec = _Record(op, params, [_entry_of(t) for t in inputs])
    for i, t in enumerate(outputs):
        t._mx_entry = (rec, i)


def _record_graph(graph, inputs, outputs, inline):
    """Called for a hybridized block's call while recording: note on `outputs` (the tensors of
    `graph`'s outputs, computed from `inputs`, the tensors of its arguments then auxiliary
    states) either the graph's own operators (`inline`) or one cached-graph node, as MXNet
    records a CachedOp."""
    for t in outputs:
        if t.requires_grad:
            break
    else:
        return
    if not inline:
        rec = _Record(_cached_graph_op(), {}, [_entry_of(t) for t in inputs])
        for i, t in enumerate(outputs):
            t._mx_entry = (rec, i)
        return
    from .symbol.graph import topo_order
    names = graph.list_arguments() + graph.list_auxiliary_states()
    by_name = dict(zip(names, inputs))
    entries = {}
    for node in topo_order(graph._entries):
        if node.op is None:
            entries[id(node)] = _entry_of(by_name[node.name])
        else:
            entries[id(node)] = _Record(node.op, node.params,
                                        [_node_entry(entries, n, k) for n, k in node.inputs])
    for t, (node, k) in zip(outputs, graph._entries):
        t._mx_entry = _node_entry(entries, node, k)


def _cached_graph_op():
    global _CACHED_GRAPH_OP        # pylint: disable=global-statement
    if _CACHED_GRAPH_OP is None:
        from .ops.internal import cached_graph_op
        _CACHED_GRAPH_OP = cached_graph_op()
    return _CACHED_GRAPH_OP


_CACHED_GRAPH_OP = None


def _node_entry(entries, node, index):
    item = entries[id(node)]
    return item if node.op is None else (item, index)


def get_symbol(x):
    """The recorded computation that produced `x`, as a Symbol (inputs that are marked
    variables are named var<i>, other inputs null<i>; operators node_<j>)."""
    from .ops.params import format_attr_value
    from .symbol.graph import Node
    from .symbol.symbol import Symbol
    if not isinstance(x, NDArray):
        raise AssertionError('get_symbol: Invalid argument type, expecting %s, got %s'
                             % (NDArray, type(x)))
    nodes = {}
    counts = {'var': 0, 'op': 0}

    def build(item):
        key = id(item)
        if key in nodes:
            return nodes[key]
        if isinstance(item, _Leaf):
            node = Node(None, '%s%d' % ('var' if item.marked else 'null', counts['var']))
            counts['var'] += 1
        else:
            inputs = [(build(src), idx) for src, idx in item.inputs]
            attrs = {k: format_attr_value(v) for k, v in item.params.items()
                     if v is not None and k in item.op.params
                     and v != item.op.params[k].default}
            node = Node(item.op, 'node_%d' % counts['op'], attrs, inputs)
            counts['op'] += 1
        nodes[key] = node
        return node

    src, idx = _entry_of(x._tensor)
    return Symbol([(build(src), idx)])


# ---------------------------------------------------------------------------------------------
# Custom differentiation
# ---------------------------------------------------------------------------------------------
class _FunctionBridge(torch.autograd.Function):
    """Links a Function's outputs (computed beforehand) to its inputs in torch's graph; its
    backward is the Function's own, on NDArrays."""

    @staticmethod
    def forward(ctx, func, outputs, *inputs):  # pylint: disable=arguments-differ
        ctx.func = func
        ctx.n_inputs = len(inputs)
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *out_grads):  # pylint: disable=arguments-differ
        from .ndarray.ndarray import from_torch
        func = ctx.func
        with pause(is_training()):
            rets = func.backward(*[from_torch(g.detach()) for g in out_grads])
        if isinstance(rets, NDArray):
            rets = (rets,)
        rets = tuple(rets)
        if len(rets) != ctx.n_inputs:
            raise MXNetError('%s.backward must return exactly the same number of NDArrays as '
                             'the number of NDArrays arguments to forward. Expecting %d got %d'
                             % (type(func).__name__, ctx.n_inputs, len(rets)))
        for ret in rets:
            if not isinstance(ret, NDArray):
                raise MXNetError('autograd.Function.backward must return NDArrays, not %s'
                                 % type(ret).__name__)
        return (None, None) + tuple(r._tensor for r in rets)


class Function:
    """Custom differentiation: subclass it, define forward(*inputs) and backward(*out_grads)
    on NDArrays (backward returns one gradient per forward input), and call an instance once.
    `save_for_backward(*arrays)` keeps arrays for backward in `self.saved_tensors`."""

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args):
        self.saved_tensors = args

    def __call__(self, *inputs):
        if self._used:
            raise AssertionError('Each Function instance can only be called once. Please create '
                                 'another instance.')
        self._used = True
        with pause(is_training()):
            outputs = self.forward(*inputs)
        if not is_recording() or not any(x._tensor.requires_grad for x in inputs):
            return outputs
        single = isinstance(outputs, NDArray)
        outs = (outputs,) if single else tuple(outputs)
        linked = _FunctionBridge.apply(self, [o._tensor.detach() for o in outs],
                                       *[x._tensor for x in inputs])
        for out, tensor in zip(outs, linked):
            out._tensor = tensor
        return outputs

    def forward(self, *inputs):
        """Forward computation on NDArrays."""
        raise NotImplementedError

    def backward(self, *output_grads):
        """Backward computation: one gradient per output in, one per input out."""
        raise NotImplementedError
