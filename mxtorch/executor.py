"""The Executor: a Symbol bound to arrays on a device.

bind plans once (plan.py): topological order, each node's parsed params and forward callable,
the shapes and dtypes of every array, which outputs are losses, as one generated flat Python
function (`print(executor.code)`).

forward runs that function (under autograd when gradients are wanted) and copies the heads into
stable output arrays. backward asks autograd, once, for the gradients of the arguments that
want them, seeding it with the head gradients and with each loss operator's declared gradient
at the loss's input (loss outputs are computed outside autograd), writes or adds them into the
gradient arrays, then commits auxiliary-state updates (BatchNorm moving statistics, as MXNet's
CPU kernels do, in the backward of a training step).
Monitoring and partial forward interpret the same steps one at a time.
"""
import functools
import logging
import os
import threading
import weakref

import numpy as np
import torch
from torch.autograd.variable import Variable

from . import profiler
from . import cuda_graphs
from . import int_grad
from . import joint
from .base import MXNetError, np_dtype, torch_dtype
from .capi import ArrayHandle
from .compiler import Compiled
from .context import Context
from .ndarray.ndarray import NDArray, _wrap
from .ndarray.alloc import zeros as lazy_zeros
from .ops.shapes import first, known, prod
from .symbol.graph import topo_order
from .symbol.infer import complete_zero_size_shapes, infer_graph_shapes, infer_graph_types
from .symbol import optimize
from .random import _generator_state, _set_generator_state
from .ops.conv import channels_last_enabled
from .plan import Plan
from .executor_sparse import StorageTypes
from .symbol.placement import place_nodes
from .util import is_np_shape

_GRAD_REQS = ('write', 'add', 'null')
_LOG = logging.getLogger(__name__)
# training calls run eagerly before the call is traced (joint.py)
JOINT_AFTER = int(os.environ.get('MXTORCH_JOINT_AFTER', '2'))


class _Slot:
    """What one thread's forward leaves behind: its output arrays and what its backward needs."""

    def __init__(self, outputs=None):
        self.outputs = outputs
        self.output_dict = None
        self.last = None
        self.run = 0              # the executor's forward count when this slot's forward ran


class Executor:
    """A bound symbol (see Symbol.bind / simple_bind).

    Thread safety: forward, backward, partial_forward and copy_params_from hold a per-executor
    lock, so each forward computes on exactly the inputs it loaded. The first thread to run
    forward owns the bound `outputs`; another thread that runs forward gets output arrays of its
    own, so the outputs a thread reads are those of its own last forward (a thread that never ran
    forward reads those of the latest forward). The argument, gradient and auxiliary arrays are
    shared: a backward whose forward was followed by another thread's forward raises MXNetError
    (the inputs its gradients need were replaced) instead of computing wrong gradients.
    """

    def __init__(self, symbol, ctx, arg_arrays, grad_arrays, grad_reqs, aux_arrays, shapes,
                 out_types, group2ctx=None, out_arrays=None, owns_grads=False):
        self._lock = threading.RLock()
        self._home = self._latest = _Slot()   # the bound outputs, and the latest forward's slot
        self._home_owner = None               # the thread that claimed the bound outputs
        self._local = threading.local()       # .slot: the calling thread's own slot
        self._runs = 0                        # forwards run so far
        self._symbol = symbol
        self._ctx = ctx
        self._group2ctx = group2ctx
        self.arg_arrays = arg_arrays
        # bound without args_grad: grad_arrays is None, as in MXNet (and backward computes nothing)
        self.grad_arrays = grad_arrays
        self._grad_list = grad_arrays if grad_arrays is not None else [None] * len(arg_arrays)
        self.aux_arrays = aux_arrays
        self._grad_reqs = grad_reqs
        self._owns_grads = owns_grads     # grad arrays made by simple_bind: 'write' may adopt
        self._arg_nodes, self._aux_nodes = symbol._variables()
        self._arg_names = [n.name for n in self._arg_nodes]
        self._aux_names = [n.name for n in self._aux_nodes]
        self._output_names = symbol.list_outputs()
        # the plan runs the graph after the bind-time passes (get_optimized_symbol shows it):
        # MXNet's common-subexpression elimination, and fusions MXNet does not do (unrolled
        # recurrent cells), which step-by-step runs leave out (see _stepwise)
        shapes = dict(shapes)
        fused = optimize.fuse(symbol, shapes)
        self._fused = fused is not symbol
        self._optimized = optimize.mxnet_passes(fused, shapes)
        placement = place_nodes(topo_order(self._optimized._entries), ctx, group2ctx) \
            if group2ctx else {}
        devices = {k: c.torch_device for k, c in placement.items()} if placement else None
        self._plan = Plan.from_symbol(self._optimized, self._arg_nodes, self._aux_nodes, shapes,
                                      devices)
        self._shapes = shapes
        self._group_devices = devices
        self._stepwise_parts = None
        # sparse values (from sparse arguments, cast_storage, ...): their steps run the ops'
        # sparse kernels; None for an all-dense graph, whose plan runs as it is
        self._storage = StorageTypes.of(self._plan, arg_arrays + aux_arrays, self._grad_list,
                                        ctx)
        if self._storage is not None:
            self._plan = self._storage.plan
        self._draws_random = any(step.op.random for step in self._plan.steps)
        device = ctx.torch_device
        int_grads = self._storage is None and _integer_gradients(
            self._plan, arg_arrays, grad_reqs, self._grad_list)
        # training on the CPU: 2-D convolutions on channels-last activations (plan.py)
        channels_last = device.type == 'cpu' and self._storage is None and not int_grads \
            and not devices and channels_last_enabled()
        forward_train, self._ns_train = self._plan.compile(True, device, channels_last)
        forward_infer, self._ns_infer = self._plan.compile(False, device)
        if int_grads:                  # integer values on a gradient path (int_grad.py)
            int_grad.wrap_plan_steps(self._ns_train, self._plan.steps)
            int_grad.wrap_plan_steps(self._ns_infer, self._plan.steps)
        compiled = Compiled if self._storage is None and not int_grads else _uncompiled
        self._forward_train = compiled(forward_train, device, 'train')
        self._forward_infer = compiled(forward_infer, device, 'infer')
        self._fast_infer = None
        # the training call traced into forward and backward graphs (joint.py) after a few
        # calls (where MXTORCH_COMPILE compiles the plan, once that is settled, and timed
        # against the compiled code): not for sparse values, integer gradients, placed graphs
        # or operators the tracer must not enter
        self._joint_calls = 0
        self._joint_calls_on = {}         # run_on: leaf positions -> [calls, Joint or False]
        self._joint = None if (_joint_enabled() and self._storage is None and not int_grads
                               and not devices
                               and all(s.op.traceable for s in self._plan.steps)) else False
        head_ctx = [placement.get(id(n), ctx) for n, _ in self._optimized._entries]
        self.outputs = out_arrays or [
            _wrap(lazy_zeros(shapes[(id(n), k)], torch_dtype(t), c.torch_device), c)
            for (n, k), t, c in zip(symbol._entries, out_types, head_ctx)]
        if self._storage is not None:           # outputs MXNet stores sparse
            self.outputs = self._storage.outputs(self.outputs)
        self._leaf_positions = [i for i, (req, g) in enumerate(zip(grad_reqs, self._grad_list))
                                if req != 'null' and g is not None
                                and _value_dtype(self.arg_arrays[i]) != torch.bool]
        self._head_kinds = [n.op.head_grad(n.params) if n.op is not None else 'required'
                            for n, _ in symbol._entries]
        self._check_differentiable()
        self._leaves = {}                 # position -> (argument tensor, its autograd leaf)
        self._last = None
        self._monitor = None
        self._monitor_all = False
        self._last_watch = None      # a monitored training pass's backward nodes (monitoring)
        self._partial = None
        self._arg_dict = self._grad_dict = self._aux_dict = None

    # ---- per-thread state -----------------------------------------------------------------------
    def _slot(self):
        """The calling thread's slot, or (if it never ran forward) the latest forward's."""
        return getattr(self._local, 'slot', None) or self._latest

    def _claim(self):
        """The calling thread's own slot, made on its first forward: the bound outputs if no other
        thread holds them, otherwise fresh arrays like them."""
        slot = getattr(self._local, 'slot', None)
        if slot is None:
            owner = self._home_owner() if self._home_owner is not None else None
            if owner is None or not owner.is_alive() or owner is threading.current_thread():
                slot = self._home
                self._home_owner = weakref.ref(threading.current_thread())
            else:
                slot = _Slot([_zeros_like(o) for o in self._home.outputs])
            self._local.slot = slot
        return slot

    @property
    def outputs(self):
        return self._slot().outputs

    @outputs.setter
    def outputs(self, value):
        slot = self._slot()
        slot.outputs, slot.output_dict = value, None

    @property
    def _last(self):
        return self._slot().last

    @_last.setter
    def _last(self, value):
        self._slot().last = value

    def _check_own_forward(self, slot):
        """MXNetError if another thread ran forward after this thread's (shared inputs replaced)."""
        if slot.last is not None and slot.run != self._runs:
            raise MXNetError('Executor.backward in thread %r: another thread ran forward on this '
                             'executor after this thread\'s forward, replacing the inputs the '
                             'gradients need; use one executor per thread, or run forward and '
                             'backward together under a lock of your own'
                             % threading.current_thread().name)

    # ---- views -----------------------------------------------------------------------------------
    @property
    def code(self):
        """The generated Python source of the forward plan."""
        return self._plan.source

    def _inference(self):
        """The forward used for inference without gradients: the plan after fusion.py's
        rewrites (BatchNorm folded into convolutions, in-place ReLU, channels-last)."""
        if self._fast_infer is None:
            from . import fusion
            device = self._ctx.torch_device
            if self._storage is not None:        # (sparse values: no rewrites, no tracer)
                self._fast_infer = self._forward_infer
            elif fusion.enabled():   # its steps keep state between calls: not for the tracer
                fused = fusion.optimize_for_inference(self._plan).compile(False, device)[0]
                self._fast_infer = fused  # ... but what a compiled unfused forward must beat
                if isinstance(self._forward_infer, Compiled):
                    compiled = Compiled(self._forward_infer.fn, device, 'inference', fused)
                    self._fast_infer = compiled if compiled.active else fused
            else:
                self._fast_infer = Compiled(self._forward_infer.fn, device, 'inference')
        return self._fast_infer

    @staticmethod
    def _named(names, arrays):
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError('Duplicate names detected, %s' % dup)
        return dict(zip(names, arrays))

    @property
    def arg_dict(self):
        if self._arg_dict is None:
            self._arg_dict = self._named(self._arg_names, self.arg_arrays)
        return self._arg_dict

    @property
    def grad_dict(self):
        if self._grad_dict is None:
            self._grad_dict = self._named(self._arg_names, self._grad_list)
        return self._grad_dict

    @property
    def aux_dict(self):
        if self._aux_dict is None:
            self._aux_dict = self._named(self._aux_names, self.aux_arrays)
        return self._aux_dict

    @property
    def output_dict(self):
        slot = self._slot()
        if slot.output_dict is None:
            slot.output_dict = self._named(self._output_names, slot.outputs)
        return slot.output_dict

    # ---- forward -----------------------------------------------------------------------------------
    def _load_kwargs(self, kwargs):
        staged = []
        for name, value in kwargs.items():
            if name not in self.arg_dict:
                raise TypeError('Unknown argument %s' % name)
            if isinstance(value, NDArray):
                src = value if value.stype != 'default' else value._tensor   # (sparse: its parts)
            elif isinstance(value, np.ndarray):
                src = torch.from_numpy(value)
            else:
                raise ValueError('only accept keyword argument of NDArrays and numpy.ndarray')
            dst = self.arg_dict[name]
            if tuple(src.shape) != dst.shape:
                raise ValueError('Shape not match! Argument %s, need: %s, received: %s'
                                 % (name, dst.shape, tuple(src.shape)))
            staged.append((dst, src))
        with torch.no_grad():
            for dst, src in staged:
                if isinstance(src, NDArray) or dst.stype != 'default':
                    from .ndarray.sparse import assign
                    assign(dst, src if isinstance(src, NDArray) else _wrap(src, dst.context))
                else:
                    dst._tensor.copy_(src)

    def _inputs(self, with_grad):
        if self._storage is not None:
            return self._storage.inputs(self.arg_arrays + self.aux_arrays,
                                        self._leaf_positions if with_grad else (), self._leaf)
        tensors = [a._tensor for a in self.arg_arrays] + [a._tensor for a in self.aux_arrays]
        if with_grad:
            for i in self._leaf_positions:
                tensors[i] = self._leaf(i, tensors[i])
        return tensors

    def _leaf(self, i, tensor):
        """An autograd leaf over argument i's storage (kept while the argument's tensor is the
        same object: it shares its storage and version counter)."""
        cached = self._leaves.get(i)
        if cached is not None and cached[0] is tensor:
            return cached[1]
        if not tensor.is_floating_point():   # an integer argument: a fresh shadow of its values
            leaf = tensor.detach()
            int_grad.attach(leaf)
            return leaf
        leaf = tensor.detach().requires_grad_()
        self._leaves[i] = (tensor, leaf)
        return leaf

    def _run(self, is_train, with_grad, rng=None):
        """Run the plan; remember what backward needs (and, for a graph that draws random numbers,
        the generator state it started from: a backward that has to run it again draws the same,
        as MXNet's backward reuses its forward's masks). `rng`: such a state to start from."""
        plan = self._plan
        if rng is None and self._draws_random:
            rng = _generator_state(self._ctx.torch_device)
        elif rng is not None:
            _set_generator_state(self._ctx.torch_device, rng)
        inputs = self._inputs(with_grad)
        self._last_watch = ({'nodes': [], 'leaves': []}
                            if self._monitor is not None and with_grad else None)
        if self._monitor is not None or profiler.recording():
            plan, fn = self._interpreter(is_train)
        elif is_train:
            fn = self._forward_train
            if with_grad and self._joint is not False:     # traced forward and backward
                joint = self._joint_for(inputs)
                if joint is not None:
                    heads, stats, saved = joint.forward(inputs)
                    self._last = {'train': True, 'heads': None, 'leaves': None, 'losses': None,
                                  'joint': (joint, saved), 'stats': stats, 'rng': rng,
                                  'plan': plan}
                    return heads
        else:
            fn = self._forward_infer if with_grad else self._inference()
        with torch.set_grad_enabled(with_grad):
            heads, stats, losses = fn(*inputs)
        values = heads
        if self._storage is not None:          # autograd sees the dense forms
            heads, losses = self._storage.dense(heads), self._storage.dense_losses(losses)
            inputs = self._storage.leaf_tensors(inputs)
        self._last = {'train': is_train, 'heads': heads if with_grad else None,
                      'leaves': [inputs[i] for i in self._leaf_positions] if with_grad else None,
                      'losses': losses if with_grad else None,
                      'stats': stats if is_train else None, 'rng': rng, 'plan': plan}
        return values

    def _joint_for(self, inputs):
        """The traced training call (joint.py) once this executor has run JOINT_AFTER training
        forwards with gradients, or None (not yet, or not for this graph: then False)."""
        if self._joint is None or self._joint is False:
            if self._joint is None and self._joint_calls >= JOINT_AFTER and \
                    self._forward_train.settled:
                self._joint = _trace_joint(self, inputs)
                if self._joint and cuda_graphs.enabled(self._ctx.torch_device):
                    self._joint = self._captured(self._joint, inputs)
            self._joint_calls += 1
            return None
        return self._joint

    def _captured(self, traced, inputs):
        """`traced` replayed as CUDA graphs (cuda_graphs.py) where capture works, else itself."""
        tangents = [torch.zeros(self.outputs[k].shape, dtype=dtype, device=device)
                    for k, (dtype, device) in zip(traced.tangent_heads, traced.tangent_specs)]
        return cuda_graphs.capture(traced, inputs, tangents) or traced

    def forward(self, is_train=False, **kwargs):
        """Compute the outputs; with is_train, Dropout is active and BatchNorm uses batch stats."""
        with self._lock:
            slot = self._claim()
            self._runs += 1
            slot.run = self._runs
            self._latest = slot
            return self._forward(is_train, kwargs)

    def _forward(self, is_train, kwargs):
        if kwargs:
            self._load_kwargs(kwargs)
        try:
            heads = self._run(is_train, bool(is_train and self._leaf_positions))
        except (MXNetError, RuntimeError) as err:
            # shapes were checked at bind: this is a failure while computing (an index out of
            # range, a negative scale), which MXNet's engine raises when the outputs are waited
            # for (torch's own complaints become MXNetError)
            from . import engine
            self._last = None
            if not isinstance(err, MXNetError):
                err = MXNetError(str(err))
            engine.mark(engine.defer(err), [o._tensor for o in self.outputs])
            return self.outputs
        if self._storage is not None:
            self._storage.store(self.outputs, heads)
            return self.outputs
        with torch.no_grad():
            for out, value in zip(self.outputs, heads):
                out._tensor.copy_(value)
        return self.outputs

    def run_on(self, tensors, is_train, monitor=None, monitor_all=False, keep_sparse=False):
        """Run the plan on `tensors` (arguments, then auxiliary states) in the caller's torch
        grad mode, so the outputs join a graph mx.autograd is recording (Gluon's hybridized
        blocks); with is_train, auxiliary statistics are updated when the gradient comes back
        through the operators that keep them, as MXNet's backward updates them (a training
        forward that is not recorded leaves them as they are). `monitor(name, NDArray)`: called
        as set_monitor_callback's callback is, for this run only. Returns the output tensors
        (keep_sparse: a sparse output's array; `tensors` may hold sparse inputs' arrays)."""
        fn = self._forward_train if is_train else self._forward_infer
        if self._storage is not None:     # sparse inputs given as their dense tensors
            tensors = self._storage.from_tensors(tensors)
        if monitor is not None or profiler.recording():   # step by step: a Gluon op hook
            saved, self._monitor = (self._monitor, self._monitor_all), monitor  # reports, the
            # profiler sees each operator under its MXNet name
            self._monitor_all = monitor_all
            try:
                plan, run = self._interpreter(is_train)
                heads, stats, _ = run(*tensors)
            finally:
                self._monitor, self._monitor_all = saved
        else:
            plan = self._plan
            traced = self._joint_on(tensors) if is_train and torch.is_grad_enabled() else None
            if traced is not None:        # the traced call, as one node of the caller's graph
                after = functools.partial(self._update_aux, plan, tensors[len(
                    self.arg_arrays):]) if plan.stat_steps else None
                return list(joint.call(traced, fn.fn, after, traced.leaf_positions, tensors))
            heads, stats, _ = fn(*tensors)
        if self._storage is not None and not keep_sparse:
            heads = self._storage.dense(heads)
        if is_train and stats:
            aux = tensors[len(self.arg_arrays):]
            for step, outputs in zip(plan.stat_steps, stats):
                step.op.update_aux_at_backward(step.params, [aux[i] for i in step.aux_positions
                                                             if i is not None], outputs)
        return heads

    def _joint_on(self, tensors):
        """run_on's traced call for this set of tensors needing gradients, once JOINT_AFTER
        calls with it have run eagerly; None before, or where the graph is not traced (losses
        or heads that take no head gradient, sparse values, integer gradients)."""
        if self._joint is False or self._plan.loss_steps or \
                any(kind != 'required' for kind in self._head_kinds):
            return None
        leaves = tuple(i for i, t in enumerate(tensors) if t.requires_grad)
        entry = self._joint_calls_on.get(leaves)
        if entry is not None and entry[1]:      # traced for these leaves, checked below then
            return entry[1]
        if not leaves or any(not tensors[i].is_floating_point() or
                             int_grad.shadow(tensors[i]) is not None for i in leaves):
            return None
        if entry is None:
            entry = self._joint_calls_on[leaves] = [0, None]
        if entry[1] is None:
            if entry[0] >= JOINT_AFTER and self._forward_train.settled:
                entry[1] = _trace_joint(self, tensors, leaves, node=True)
                if entry[1]:
                    entry[1].leaf_positions = leaves
            entry[0] += 1
            return None
        return entry[1] or None

    @staticmethod
    def _update_aux(plan, aux, stats):
        """Commit a training call's statistics into the auxiliary state tensors `aux`
        (BatchNorm's moving mean and variance)."""
        with torch.no_grad():
            for step, outputs in zip(plan.stat_steps, stats):
                step.op.update_aux(step.params, [aux[i] for i in step.aux_positions
                                                 if i is not None], outputs)

    # ---- backward ----------------------------------------------------------------------------------
    def _head_grads(self, out_grads):
        if out_grads is None:
            grads = [None] * len(self.outputs)
        elif isinstance(out_grads, NDArray):
            grads = [out_grads]
        elif isinstance(out_grads, dict):
            missing = [n for n in self._output_names if n not in out_grads]
            if missing:
                raise MXNetError('backward: out_grads misses outputs %s' % missing)
            grads = [out_grads[n] for n in self._output_names]
        elif isinstance(out_grads, (list, tuple)):
            grads = list(out_grads)
        else:
            raise TypeError('out_grads must be NDArray, list or dict of NDArray')
        if len(grads) < len(self.outputs):
            raise MXNetError('backward: %d head gradients given for %d outputs (%s)'
                             % (len(grads), len(self.outputs), ', '.join(self._output_names)))
        grads = grads[:len(self.outputs)]        # MXNet ignores extra head gradients
        for name, g, out, kind in zip(self._output_names, grads, self.outputs, self._head_kinds):
            if g is None:
                continue
            if not isinstance(g, NDArray):
                raise TypeError('inputs must be NDArray')
            if g.shape != out.shape and kind != 'zero':     # an unused head gradient goes unread
                raise MXNetError('backward: head gradient of %s has shape %s, expected %s'
                                 % (name, g.shape, out.shape))
        return grads

    def backward(self, out_grads=None, is_train=True):
        """Gradients of the arguments, written or added into grad_arrays per grad_req."""
        with self._lock:
            self._check_own_forward(self._slot())
            self._backward(out_grads)

    def _backward(self, out_grads):
        grads = self._head_grads(out_grads)
        from . import engine
        failure = engine.failure_of([o._tensor for o in self.outputs])
        if failure is not None:      # the forward failed: the gradients carry its error
            engine.mark(failure, [g._tensor for g in self._grad_list if g is not None])
            return
        if self._last is None:       # MXNet runs the backward graph anyway: give it a forward
            self._run(True, bool(self._leaf_positions))
        if self._leaf_positions:
            traced = self._last.get('joint')      # (a captured graph's gradients are borrowed)
            borrowed = traced is not None and getattr(traced[0], 'borrowed', False)
            self._write_grads(self._gradients(grads), borrowed)
        self._zero_integer_grads()
        self._commit_aux()

    def _zero_integer_grads(self):
        """Integer arguments have no gradient: MXNet's backward writes zeros into theirs."""
        with torch.no_grad():
            for i, (req, g, arg) in enumerate(zip(self._grad_reqs, self._grad_list,
                                                  self.arg_arrays)):
                if req == 'write' and g is not None and not _value_dtype(arg).is_floating_point \
                        and i not in self._leaf_positions:
                    g._tensor.zero_()

    def _gradients(self, grads):
        last = self._last
        if last['heads'] is None and last.get('joint') is None:   # no graph recorded
            self._run(last['train'], True, last.get('rng'))     # (inference, second backward)
            last = self._last
        if last.get('joint') is not None:        # the traced backward (joint.py)
            joint, saved = last['joint']
            last['joint'] = None
            return joint.backward(saved, [self._head_grad(k, grads[k])._tensor
                                          for k in joint.tangent_heads])
        outs, head_grads, loss_seeds = self._seeds(
            last['plan'], [int_grad.graph_tensor(h) for h in last['heads']], last['losses'],
            lambda k, head: self._head_grad(k, grads[k])._tensor.to(device=head.device,
                                                                    dtype=head.dtype))
        if self._last_watch is not None:         # each loss node's own backward output
            for step, seed in loss_seeds:
                for watched, node_grads, _ in self._last_watch['nodes']:
                    if watched is step:
                        node_grads[0] = seed.detach()
        dtypes = [t.dtype for t in last['leaves']]
        leaves = [int_grad.graph_tensor(t) for t in last['leaves']]
        last['heads'] = last['leaves'] = last['losses'] = None
        if not outs:
            return [None] * len(leaves)
        watched = self._last_watch['leaves'] if self._last_watch is not None else []
        _run_backward(outs, head_grads, leaves + watched)
        grads = [leaf.grad if leaf.grad is None or leaf.grad.dtype == dt else leaf.grad.to(dt)
                 for leaf, dt in zip(leaves, dtypes)]     # (an integer argument's, cast)
        for leaf in leaves:               # the grad arrays hold them now, nothing else may
            leaf.grad = None
        if self._last_watch is not None:
            self._report_backward()
        return grads

    def _head_grad(self, k, given):
        if given is None:
            raise MXNetError('Because the last operator is not Loss function, head_gradient '
                             'is required when calling backward. (output %s has none)'
                             % self._output_names[k])
        return given

    def _seeds(self, plan, heads, losses, head_grad):
        """(outputs, their gradients, [(loss step, its seed)]) that start the backward: each
        head that needs a given gradient with head_grad(k, head), the outputs of operators that
        compute their own backward (a Custom op with need_top_grad=False) with ones, and each
        loss operator's input with the gradient MXNet declares for it."""
        outs, seeds, loss_seeds = [], [], []
        for k, (head, kind) in enumerate(zip(heads, self._head_kinds)):
            if not head.requires_grad or kind not in ('ones', 'required'):
                continue                  # BlockGrad, and losses (seeded below)
            outs.append(head)
            seeds.append(torch.ones_like(head) if kind == 'ones' else head_grad(k, head))
        for step, values in zip(plan.loss_steps, losses):
            data = values[0]
            if data.requires_grad:
                outs.append(data)
                seeds.append(step.op.loss_gradient(step.params, values[:-1], values[-1]))
                loss_seeds.append((step, seeds[-1]))
        return outs, seeds, loss_seeds

    def _write_grads(self, results, borrowed=False):
        """Per grad_req: 'add' accumulates; 'write' copies, or, into arrays simple_bind made,
        adopts the gradient tensor itself (autograd gives each leaf a tensor of its own; not
        `borrowed` ones, which a captured graph overwrites at its next replay)."""
        with torch.no_grad():
            for i, g in zip(self._leaf_positions, results):
                handle = self._grad_list[i]
                if self._storage is not None:      # with the rows sparse kernels stored
                    g = self._storage.gradient(i, g)
                if g is not None and g.is_sparse:       # a sparse-grad embedding's rows
                    _write_sparse_grad(handle, g, self._grad_reqs[i])
                    continue
                dst = handle._tensor
                if self._grad_reqs[i] == 'add':
                    if g is not None:
                        dst.add_(g)
                elif g is None:
                    dst.zero_()
                elif self._owns_grads and g.is_contiguous() and not borrowed:  # a leaf's
                    handle._tensor = g                          # gradient: its shape and dtype
                else:
                    dst.copy_(g)

    def _commit_aux(self):
        stats = self._last['stats'] if self._last else None
        if not stats:
            return
        self._last['stats'] = None
        self._update_aux(self._last['plan'], [a._tensor for a in self.aux_arrays], stats)

    # ---- monitoring and step-by-step execution --------------------------------------------------
    def set_monitor_callback(self, callback, monitor_all=False):
        """Call `callback(name, handle)` for every operator output (and input with monitor_all),
        as MXNet does: `NDArray(ctypes.cast(handle, NDArrayHandle))` (or the handle itself, which
        reads as the array) gives the value; base.py_str(name) gives the name."""
        self._monitor = callback
        self._monitor_all = monitor_all

    def _report(self, name, tensor):
        handle = ArrayHandle(tensor.detach() if isinstance(tensor, NDArray)   # (a sparse value)
                             else _wrap(tensor.detach(), self._ctx))
        try:
            self._monitor(name, handle)
        finally:
            handle.release()

    def _watch_backward(self, step, args):
        """Monitoring a training pass: give each argument input of `step` an alias of its own
        whose gradient hook records what MXNet's backward node of `step` outputs (this node's
        gradient of that input, before other consumers' are summed in)."""
        n_args = len(step.op.arg_names(step.params))
        if not any(isinstance(v, torch.Tensor) and v.requires_grad for v in args[:n_args]):
            return     # no input needs a gradient: MXNet's backward graph has no node for it
        grads = [None] * n_args
        shapes = [tuple(a.shape) for a in args[:n_args]]
        for i, value in enumerate(args[:n_args]):
            if isinstance(value, NDArray) or not value.is_floating_point():   # (NDArray: sparse)
                continue
            if value.requires_grad:
                alias = value.view_as(value)
            else:          # a variable without gradient: a leaf of its own for this pass only
                alias = value.detach().requires_grad_()
                self._last_watch['leaves'].append(alias)
            alias.register_hook(lambda g, i=i: grads.__setitem__(i, g.detach()))
            args[i] = alias
        self._last_watch['nodes'].append((step, grads, shapes))

    def _report_backward(self):
        """After a monitored backward: `<node>_backward_output[i]` for every node that got a
        gradient, last node first, as MXNet's backward graph reports them."""
        watch, self._last_watch = self._last_watch, None
        for step, grads, shapes in reversed(watch['nodes']):
            if all(g is None for g in grads):
                continue
            for i, (g, shape) in enumerate(zip(grads, shapes)):
                suffix = 'output' if len(grads) == 1 else 'output%d' % i
                self._report('%s_backward_%s' % (step.node.name, suffix),
                             g if g is not None else torch.zeros(shape))

    def _run_step(self, step, values, namespace):
        args = [values[n] for n in step.inputs]
        if (self._last_watch is not None and torch.is_grad_enabled() and not step.fused
                and step.op.backward_node):
            self._watch_backward(step, args)
        if self._monitor is not None and self._monitor_all:
            names = step.op.monitor_input_names(step.params, len(args))
            sources = step.node.inputs if not step.fused else [None] * len(args)
            for name, value, source in zip(names, args, sources):
                if source is not None and source[0].op is None:
                    self._report(source[0].name, value)      # a variable, under its own name
                self._report('%s_%s' % (step.node.name, name), value)
        if profiler.recording():
            with profiler.operator_range(step.op.name):
                result = namespace[step.fn_name](*args)
        else:
            result = namespace[step.fn_name](*args)
        results = result if isinstance(result, tuple) else (result,)
        values.update(zip(step.outputs, results))
        if self._monitor is not None:
            # every output, hidden ones too (BatchNorm's mean/var, Dropout's mask), as MXNet
            for suffix, value in zip(step.op.output_names(step.params), results):
                self._report('%s_%s' % (step.node.name, suffix), value)

    def _stepwise(self):
        """(plan, train namespace, inference namespace) for running step by step (monitor,
        profiler, partial_forward): the graph after MXNet's own bind-time passes only, so every
        node MXNet's executor has is a step (a fused recurrent chain is its cells again)."""
        if self._stepwise_parts is None:
            if self._fused:
                shapes = dict(self._shapes)
                symbol = optimize.mxnet_passes(self._symbol, shapes)
                plan = Plan.from_symbol(symbol, self._arg_nodes, self._aux_nodes, shapes,
                                        self._group_devices)
                if self._storage is not None:
                    plan = self._storage.rewrap(plan)
                device = self._ctx.torch_device
                self._stepwise_parts = (plan, plan.compile(True, device)[1],
                                        plan.compile(False, device)[1])
            else:
                self._stepwise_parts = (self._plan, self._ns_train, self._ns_infer)
        return self._stepwise_parts

    def _interpreter(self, is_train):
        """(plan, fn): fn runs the step-by-step plan one step at a time, reporting."""
        plan, ns_train, ns_infer = self._stepwise()
        namespace = ns_train if is_train else ns_infer

        def run(*inputs):
            values = dict(zip(plan.input_names, inputs))
            for step in plan.steps:
                self._run_step(step, values, namespace)
            return (tuple(values[h] for h in plan.heads),
                    tuple(tuple(values[o] for o in s.outputs) for s in plan.stat_steps),
                    tuple(tuple(values[v] for v in s.inputs + s.outputs[:1])
                          for s in plan.loss_steps))
        return plan, run

    def partial_forward(self, is_train=False, step=0):
        """Run only plan step `step` (call with 0, 1, 2, ... in order); returns the steps left.

        When none are left the outputs hold the result, as after forward().
        """
        with self._lock:
            return self._partial_forward(is_train, step)

    def _partial_forward(self, is_train, step):
        plan, ns_train, ns_infer = self._stepwise()
        steps = plan.steps
        if step == 0 or self._partial is None:
            inputs = self._inputs(False)
            self._partial = dict(zip(plan.input_names, inputs))
        if not 0 <= step < len(steps):
            raise MXNetError('partial_forward: step %d out of range (%d steps)'
                             % (step, len(steps)))
        namespace = ns_train if is_train else ns_infer
        with torch.no_grad():
            self._run_step(steps[step], self._partial, namespace)
        left = len(steps) - step - 1
        if left == 0:
            slot = self._claim()
            self._runs += 1
            slot.run = self._runs
            self._latest = slot
            values = self._partial
            if self._storage is not None:
                self._storage.store(self.outputs, [values[name] for name in plan.heads])
            else:
                with torch.no_grad():
                    for out, name in zip(self.outputs, plan.heads):
                        out._tensor.copy_(values[name])
            self._last = {'train': is_train, 'heads': None, 'leaves': None, 'losses': None,
                          'stats': tuple(tuple(values[o] for o in s.outputs)
                                         for s in plan.stat_steps) if is_train else None,
                          'plan': plan}
            self._partial = None
        return left

    # ---- parameters --------------------------------------------------------------------------------
    def copy_params_from(self, arg_params, aux_params=None, allow_extra_params=False):
        """Copy (and cast) parameter values into this executor's arrays."""
        staged = []
        for params, table, what in ((arg_params, self.arg_dict, 'arguments'),
                                    (aux_params or {}, self.aux_dict, 'auxiliary states')):
            for name, value in params.items():
                if name not in table:
                    if allow_extra_params:
                        continue
                    if what == 'arguments':
                        raise ValueError('Find name "%s" that is not in the arguments' % name)
                    raise ValueError('Find name %s that is not in the auxiliary states' % name)
                dst = table[name]
                if value.shape != dst.shape:
                    raise MXNetError('copy_params_from: %s has shape %s, the executor expects %s'
                                     % (name, value.shape, dst.shape))
                staged.append((dst, value))
        with self._lock, torch.no_grad():
            for dst, value in staged:
                dst._tensor.copy_(value._tensor)

    # ---- reshape -------------------------------------------------------------------------------
    def reshape(self, partial_shaping=False, allow_up_sizing=False, **kwargs):
        """A new executor for new input shapes, sharing parameters and memory with this one."""
        given = {id(n): tuple(kwargs[n.name]) for n in self._arg_nodes if n.name in kwargs}
        order = topo_order(self._symbol._entries)
        shapes = infer_graph_shapes(order, given)
        if not all(known(shapes.get((id(n), 0))) for n in self._arg_nodes + self._aux_nodes):
            for n, a in zip(self._arg_nodes, self.arg_arrays):
                given.setdefault(id(n), a.shape)
            shapes = infer_graph_shapes(order, given)

        def reuse(name, old, new_shape, specified, same_handle=False):
            if new_shape == old.shape:
                return old if same_handle else _wrap(old._tensor, old.context)
            if not specified and not partial_shaping:
                raise MXNetError('Shape of unspecifie arg: %s changed. This can cause the new '
                                 'executor to not share parameters with the old one. Please '
                                 'check for error in network. If this is intended, set '
                                 'partial_shaping=True to suppress this warning.' % name)
            return _carve(name, old, new_shape, allow_up_sizing)

        args, grads = [], []
        for node, arr, grad in zip(self._arg_nodes, self.arg_arrays, self._grad_list):
            shape = shapes[(id(node), 0)]
            args.append(reuse(node.name, arr, shape, node.name in kwargs))
            grads.append(None if grad is None else reuse(node.name, grad, shape, True, True))
        aux = [reuse(n.name, a, shapes[(id(n), 0)], False)
               for n, a in zip(self._aux_nodes, self.aux_arrays)]
        out_types = [np_dtype(o._tensor.dtype) for o in self.outputs]
        grads = None if self.grad_arrays is None else grads
        new = Executor(self._symbol, self._ctx, args, grads, self._grad_reqs, aux, shapes,
                       out_types, self._group2ctx, owns_grads=self._owns_grads)
        for i, ((node, k), old) in enumerate(zip(self._symbol._entries, self.outputs)):
            shape = shapes[(id(node), k)]
            if old.stype == 'default' and prod(shape) <= old.size:
                new.outputs[i] = _wrap(_view_of(old._tensor, shape), self._ctx)
        new._monitor, new._monitor_all = self._monitor, self._monitor_all
        return new

    # ---- introspection -------------------------------------------------------------------------
    def debug_str(self):
        """The plan as text; ends with the memory MXNet-style tools parse: the bound arrays, and
        where a gradient reaches an argument, its gradient array and the intermediate values a
        training pass keeps for backward (nothing behind BlockGrad or grad_req 'null')."""
        arrays = self.arg_arrays + self.aux_arrays + self.outputs
        total = sum(_nbytes(a) for a in arrays)
        nodes = self._gradient_path()
        reached = [i for i in self._leaf_positions if id(self._arg_nodes[i]) in nodes]
        if reached:
            total += sum(_nbytes(self._grad_list[i]) for i in reached)
            itemsize = self.outputs[0]._tensor.element_size() if self.outputs else 4
            total += sum(prod(self._shapes[(id(n), k)]) * itemsize for n in nodes.values()
                         if n.op is not None for k in range(n.num_outputs()) if (id(n), k) in self._shapes)
        return '%sTotal %d MB allocated\nTotal %d TempSpace resource requested\n' % (
            self._symbol.debug_str(), total >> 20, 0)

    def _check_differentiable(self):
        """As MXNet's bind: a gradient wanted through an op without one is an error."""
        wanted = {id(n) for n, req, g in zip(self._arg_nodes, self._grad_reqs, self._grad_list)
                  if req != 'null' and g is not None}
        if not wanted:
            return
        leads = {}                     # id -> whether a wanted argument is upstream
        for node in topo_order(self._symbol._entries):
            leads[id(node)] = id(node) in wanted or any(leads[id(c)] for c, _ in node.inputs)
        for node in self._gradient_path().values():
            if node.op is not None and not node.op.differentiable and leads[id(node)]:
                raise MXNetError('Operator %s is non-differentiable because it didn\'t register '
                                 'FGradient attribute.' % node.op.name)

    def _gradient_path(self):
        """{id: node} of the nodes a head gradient flows through (not past BlockGrad)."""
        seen = {}
        stack = [n for (n, _), kind in zip(self._symbol._entries, self._head_kinds)
                 if kind != 'zero']
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen[id(node)] = node
            if node.op is None or node.op.head_grad(node.params) == 'zero':
                continue
            stack.extend(child for child, _ in node.inputs)
        return seen

    def get_optimized_symbol(self):
        return self._optimized.__copy__()


def _zeros_like(arr):
    """Zeros of `arr`'s shape, dtype, context and storage type."""
    from .ndarray import zeros
    return zeros(arr.shape, ctx=arr.context, dtype=arr.dtype, stype=arr.stype)


def _integer_gradients(plan, args, reqs, grads):
    """Whether integer values lie on a gradient path: an integer argument takes a gradient, or
    a step converts to an integer dtype (Cast)."""
    if any(req != 'null' and g is not None and not _value_dtype(a).is_floating_point
           for a, req, g in zip(args, reqs, grads)):
        return True
    for step in plan.steps:
        op = getattr(step.node, 'op', None)
        if getattr(op, 'converts_dtype', False) and 'dtype' in op.params and \
                not torch_dtype(step.node.params.dtype).is_floating_point:
            return True
    return False


def _value_dtype(arr):
    """The torch dtype of an array (a sparse one's without building its dense form)."""
    return getattr(arr, '_dtype', None) or arr._tensor.dtype


def _joint_enabled():
    return os.environ.get('MXTORCH_JOINT', '1').strip().lower() not in ('0', 'off', 'false')


def _trace_joint(executor, inputs, leaves=None, node=False):
    """joint.trace of the executor's training call (gradients for the inputs at `leaves`,
    by default its arguments'), checked against the eager call (the compiled plan where
    MXTORCH_COMPILE compiled it faster); False where it cannot be traced, does not agree or
    is not faster (timed as one autograd node with `node`, as run_on runs it); said at debug
    level."""
    plan = executor._plan
    forward = executor._forward_train.fn
    leaves = executor._leaf_positions if leaves is None else leaves

    def seeds(heads, losses, tangent):
        return executor._seeds(plan, heads, losses, lambda k, head: tangent(k))[:2]
    gen = torch.Generator().manual_seed(0)           # (not the global stream)
    tangents = [torch.randn(o.shape, generator=gen).to(o._tensor.device, o._tensor.dtype)
                for o in executor.outputs]           # head gradients to trace and check with
    try:
        traced = joint.trace(forward, inputs, leaves, seeds, tangents)
        if traced is None:
            return False
        agrees, fast, slow = joint.compare(traced, executor._forward_train, inputs, leaves,
                                           seeds, tangents, node=node)
    except Exception as err:           # anything the tracer cannot follow: stay eager
        _LOG.debug('mxtorch: training call not traced (%s: %s)', type(err).__name__, err)
        return False
    use = agrees and fast < slow * joint.KEEP_BELOW
    _LOG.debug('mxtorch: traced training call %s the eager one, %.3g ms against %.3g: %s',
               'agrees with' if agrees else 'differs from', fast * 1e3, slow * 1e3,
               'used' if use else 'not used')
    return traced if use else False


def _uncompiled(fn, device, name):
    """A plan function left as it is (sparse values are no tensors for the compiler)."""
    return fn


def _nbytes(arr):
    """Bytes an array holds (a sparse one: its stored values and indices)."""
    if getattr(arr, 'stype', 'default') == 'default':
        return arr.size * arr._tensor.element_size()
    parts = [arr.data, arr.indices] + ([arr.indptr] if arr.stype == 'csr' else [])
    return sum(_nbytes(p) for p in parts)


_ENGINE = getattr(Variable, '_execution_engine', None)


def _write_sparse_grad(handle, g, req):
    """Write a sparse COO gradient (executor_sparse.write_rows): a row_sparse handle stores
    its rows (its dense form is never built)."""
    from .executor_sparse import write_rows
    write_rows(handle, g, req)


def _run_backward(outputs, grads, leaves):
    """torch.autograd.backward(outputs, grads, inputs=leaves): gradients into the leaves' .grad
    (as fast as loss.backward(), where autograd.grad costs several percent more on convolution
    networks). The head gradients are checked already, so call the engine that function wraps
    directly, without its Python-side re-validation (about 40 us a call)."""
    if _ENGINE is None:
        torch.autograd.backward(outputs, grads, inputs=leaves)
    else:
        _ENGINE.run_backward(tuple(outputs), tuple(grads), False, False, tuple(leaves), True,
                             True)


# ---------------------------------------------------------------------------------------------
# Memory sharing helpers
# ---------------------------------------------------------------------------------------------
def _view_of(tensor, shape):
    """`shape` carved from the start of `tensor`'s storage (writes go through)."""
    return tensor.reshape(-1)[:prod(shape)].view(shape)


def _carve(name, old, shape, allow_up_sizing):
    if prod(shape) <= old.size and old._tensor.is_contiguous():
        return _wrap(_view_of(old._tensor, shape), old.context)
    if not allow_up_sizing:
        raise MXNetError('New shape of arg: %s is larger than original. First making a big '
                         'executor and then down sizing it is more efficient than the reverse. '
                         'If you really want to up size, set allow_up_sizing=True to enable '
                         'allocation of new arrays.' % name)
    return _wrap(lazy_zeros(shape, old._tensor.dtype, old._tensor.device), old.context)


# ---------------------------------------------------------------------------------------------
# bind / simple_bind
# ---------------------------------------------------------------------------------------------
def _check_ctx(ctx):
    if not isinstance(ctx, Context):
        raise TypeError('Context type error')


def _as_list(values, names, what, allow_none, required):
    """Arrays aligned with `names` from a list or a dict."""
    if values is None:
        return [None] * len(names)
    if isinstance(values, dict):
        result = []
        for name in names:
            if name not in values:
                if required:
                    raise ValueError('key `%s` is missing in `%s`' % (name, what))
                result.append(None)
            else:
                result.append(values[name])
    elif isinstance(values, (list, tuple)):
        if len(values) != len(names):
            raise ValueError('Length of %s does not match the number of arguments' % what)
        result = list(values)
    else:
        raise TypeError('%s must be a list or a dict of NDArray' % what)
    for name, value in zip(names, result):
        if value is None:
            if required and not allow_none:
                raise ValueError('key `%s` is missing in `%s`' % (name, what))
        elif not isinstance(value, NDArray):
            raise TypeError('%s: %s must be NDArray, got %s' % (what, name, type(value).__name__))
    return result


def _grad_reqs(grad_req, names):
    if isinstance(grad_req, str):
        if grad_req not in _GRAD_REQS:
            raise ValueError('grad_req must be one of %s, got %r' % (_GRAD_REQS, grad_req))
        return [grad_req] * len(names)
    if isinstance(grad_req, (list, tuple)):
        if len(grad_req) != len(names):
            raise ValueError('grad_req list has %d entries for %d arguments'
                             % (len(grad_req), len(names)))
        reqs = list(grad_req)
    elif isinstance(grad_req, dict):
        reqs = [grad_req.get(n, 'null') for n in names]
    else:
        raise TypeError('grad_req must be str, list or dict')
    for name, req in zip(names, reqs):
        if req not in _GRAD_REQS:
            raise ValueError('grad_req of %s must be one of %s, got %r' % (name, _GRAD_REQS, req))
    return reqs


def _infer_for_bind(symbol, arg_nodes, aux_nodes, arg_arrays, aux_arrays):
    order = topo_order(symbol._entries)
    given = {id(n): a.shape for n, a in zip(arg_nodes + aux_nodes, arg_arrays + aux_arrays)}
    types = {(id(n), 0): np_dtype(_value_dtype(a))
             for n, a in zip(arg_nodes + aux_nodes, arg_arrays + aux_arrays)}
    shapes = infer_graph_shapes(order, given, types)
    for node, arr in zip(arg_nodes + aux_nodes, arg_arrays + aux_arrays):
        inferred = shapes.get((id(node), 0))
        if inferred is not None and tuple(inferred) != arr.shape:
            raise MXNetError('bind: %s has shape %s, the symbol needs %s'
                             % (node.name, arr.shape, inferred))
    type_table = infer_graph_types(order, {id(n): np_dtype(_value_dtype(a)) for n, a in
                                           zip(arg_nodes + aux_nodes, arg_arrays + aux_arrays)})
    if is_np_shape():
        shapes = complete_zero_size_shapes(order, shapes, type_table)
    out_types = []
    for node, k in symbol._entries:
        shape = shapes.get((id(node), k))
        if not known(shape) and not (is_np_shape() and shape is not None):
            raise MXNetError('bind: cannot infer the shape of output %s (got %s)'
                             % (node.output_names()[k] if node.op else node.name, shape))
        out_types.append(first(type_table.get((id(node), k)), np_dtype('float32')))
    return shapes, out_types


def bind(symbol, ctx, args, args_grad=None, grad_req='write', aux_states=None, group2ctx=None,
         shared_exec=None):
    """Bind `symbol` to the given arrays (used as they are, not copied)."""
    _check_ctx(ctx)
    arg_nodes, aux_nodes = symbol._variables()
    arg_names = [n.name for n in arg_nodes]
    aux_names = [n.name for n in aux_nodes]
    arg_arrays = _as_list(args, arg_names, 'args', False, True)
    grad_arrays = _as_list(args_grad, arg_names, 'args_grad', True, False)
    if aux_nodes and aux_states is None:
        raise ValueError('aux_states of %s are required' % aux_names)
    aux_arrays = _as_list(aux_states, aux_names, 'aux_states', False, True)
    reqs = _grad_reqs(grad_req, arg_names)
    placement = place_nodes(topo_order(symbol._entries), ctx, group2ctx) if group2ctx else {}
    nodes = arg_nodes + aux_nodes + arg_nodes
    for node, arr in zip(nodes, arg_arrays + aux_arrays + grad_arrays):
        where = placement.get(id(node), ctx)
        if arr is not None and _device_type(arr) != where.torch_device.type:
            raise MXNetError('bind: %s lives on %s, its node on %s' % (node.name, arr.context,
                                                                       where))
    for name, arr, grad in zip(arg_names, arg_arrays, grad_arrays):
        if grad is not None and grad.shape != arr.shape:
            raise MXNetError('bind: gradient of %s has shape %s, the argument %s'
                             % (name, grad.shape, arr.shape))
    shapes, out_types = _infer_for_bind(symbol, arg_nodes, aux_nodes, arg_arrays, aux_arrays)
    return Executor(symbol, ctx, arg_arrays, None if args_grad is None else grad_arrays, reqs,
                    aux_arrays, shapes, out_types, group2ctx)


def _device_type(arr):
    """The torch device type an array lives on (a sparse array's dense form is not built)."""
    if getattr(arr, '_stype', None):
        return arr._ctx.torch_device.type
    return arr._tensor.device.type


def simple_bind(symbol, ctx, grad_req='write', type_dict=None, group2ctx=None,
                shared_arg_names=None, shared_exec=None, shared_buffer=None, stype_dict=None,
                **kwargs):
    """Infer every shape and dtype from the given input shapes, allocate zero-filled arrays and
    bind. Parameters named in shared_arg_names (and their gradients) come from shared_exec
    (else they are new); the other arguments are carved from same-named shared_buffer entries
    when large enough (new ones are added to it)."""
    _check_ctx(ctx)
    if shared_arg_names is not None and not isinstance(shared_arg_names, list):
        raise ValueError('shared_arg_names in simple_bind must be a list or None')
    arg_nodes, aux_nodes = symbol._variables()
    arg_names = [n.name for n in arg_nodes]
    order = topo_order(symbol._entries)
    given = {}
    for node in arg_nodes + aux_nodes:
        shape = kwargs.get(node.name)
        if isinstance(shape, tuple):
            given[id(node)] = tuple(int(d) for d in shape)
    type_given = {}
    for node in arg_nodes:
        if type_dict is not None and node.name in type_dict:
            type_given[id(node)] = np_dtype(type_dict[node.name])
        elif type_dict is None and '__dtype__' not in node.attrs:
            type_given[id(node)] = np_dtype('float32')
    try:
        types = infer_graph_types(order, type_given)
        shapes = infer_graph_shapes(order, given, types)
        missing = [n.name for n in arg_nodes + aux_nodes if not known(shapes.get((id(n), 0)))]
        if missing:
            raise MXNetError('cannot infer the shapes of %s; give them as keyword arguments'
                             % ', '.join(missing))
    except MXNetError as err:
        lines = ['%s: %s' % (k, v) for k, v in kwargs.items() if isinstance(v, tuple)]
        raise RuntimeError('simple_bind error. Arguments:\n%s\n%s'
                           % ('\n'.join(lines), err)) from None
    if not isinstance(grad_req, str) and not grad_req:
        raise RuntimeError('grad_req in simple_bind cannot be an empty %s'
                           % type(grad_req).__name__)
    reqs = _grad_reqs(grad_req, arg_names)
    shared_names = set(shared_arg_names or ())
    shared_args = shared_exec.arg_dict if shared_exec is not None else {}
    shared_grads = shared_exec.grad_dict if shared_exec is not None else {}

    def dtype_of(node, index=0):
        return torch_dtype(first(types.get((id(node), index)), 'float32'))

    placement = place_nodes(order, ctx, group2ctx) if group2ctx else {}

    def allocate(dt, shape, shared, buffer_key=None, exact=False, node=None):
        where = placement.get(id(node), ctx)
        device = where.torch_device
        if shared is not None and shared.shape == shape and shared._tensor.dtype == dt:
            return shared
        if exact:               # parameters come from shared_exec only (as MXNet): never
            return _wrap(lazy_zeros(shape, dt, device), where)   # the buffer
        if buffer_key is not None and shared_buffer is not None:
            buf = shared_buffer.get(buffer_key)
            if buf is not None and buf.size >= prod(shape) and buf._tensor.dtype == dt:
                return _wrap(_view_of(buf._tensor, shape), where)
            arr = _wrap(lazy_zeros(shape, dt, device), where)
            shared_buffer[buffer_key] = arr
            return arr
        return _wrap(lazy_zeros(shape, dt, device), where)

    arg_arrays, grad_arrays = [], []
    for node, req in zip(arg_nodes, reqs):
        shape = tuple(shapes[(id(node), 0)])
        if node.name in shared_names:
            arg_arrays.append(allocate(dtype_of(node), shape, shared_args.get(node.name),
                                       node.name, exact=True, node=node))
            grad_arrays.append(None if req == 'null' else allocate(
                dtype_of(node), shape, shared_grads.get(node.name), (node.name, 'grad'),
                exact=True, node=node))
            continue
        arg_arrays.append(allocate(dtype_of(node), shape, None, node.name, node=node))
        grad_arrays.append(None if req == 'null' else
                           allocate(dtype_of(node), shape, None, node=node))
    aux_arrays = []
    shared_aux = shared_exec.aux_dict if shared_exec is not None else {}
    for node in aux_nodes:
        aux_arrays.append(allocate(dtype_of(node), tuple(shapes[(id(node), 0)]),
                                   shared_aux.get(node.name), node=node))
    from .ndarray.sparse import apply_storage_types        # sparse args and gradients
    taken = [(i, lst, lst[i]) for lst, source in ((arg_arrays, shared_args),
                                                   (grad_arrays, shared_grads))
             for i, node in enumerate(arg_nodes)
             if node.name in shared_names and lst[i] is not None
             and source.get(node.name) is lst[i]]
    apply_storage_types(order, arg_nodes, arg_arrays, grad_arrays, stype_dict)
    for i, lst, arr in taken:          # arrays of shared_exec stay the very same arrays
        if arr.stype == lst[i].stype:
            lst[i] = arr
    out_types, out_arrays = [], []
    if isinstance(shared_exec, Executor):       # (output_dict refuses repeated names)
        shared_outs = dict(zip(shared_exec._output_names, shared_exec.outputs))
    else:
        shared_outs = getattr(shared_exec, 'output_dict', None) or {}
    for (node, k), name in zip(symbol._entries, symbol.list_outputs()):
        shape = shapes.get((id(node), k))
        if not known(shape):
            raise RuntimeError('simple_bind error: cannot infer the shape of output %s' % name)
        out_types.append(first(types.get((id(node), k)), np_dtype('float32')))
        held = shared_outs.get(name)          # shared_exec's memory serves its outputs too
        if held is not None and held.stype == 'default' and held.size >= prod(shape) and \
                held._tensor.dtype == dtype_of(node, k):
            out_arrays.append(_wrap(_view_of(held._tensor, tuple(shape)), held.context))
            continue
        out_arrays.append(allocate(dtype_of(node, k), tuple(shape), None, node=node))
    return Executor(symbol, ctx, arg_arrays, grad_arrays, reqs, aux_arrays, shapes, out_types,
                    group2ctx, out_arrays, owns_grads=True)
