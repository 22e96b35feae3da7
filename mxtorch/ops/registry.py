"""The operator registry: one declarative `OpDef` per operator.

An OpDef says everything the rest of mxtorch needs to know about an operator; Symbol, Executor,
JSON and NDArray code are generic over it and never name a specific operator:

* `params`: the schema (ops/params.py) that parses MXNet's string attributes.
* `inputs(p)` / `aux(p)`: names of the array inputs and of the auxiliary states (inputs the
  operator mutates, e.g. BatchNorm's moving statistics); a tuple or a function of the params.
  `variadic='num_args'` makes the inputs `arg0..argN-1`.
* `outputs(p)`: names of all outputs; only the first `visible_outputs(p)` are user-visible
  (BatchNorm's mean/var and Dropout's mask are hidden).
* `forward(p, *inputs)`: the computation in torch ops, returning a tensor or a tuple of all
  outputs. `mode_dependent` ops also get `train=` (Dropout, BatchNorm); `creation` ops (no
  inputs: zeros, random, ...) get `device=` and `out_shape=` (the inferred output shape, where
  a 0 in the `shape` parameter was filled from consumers; None in imperative calls). The gradient is torch autograd's, unless the op says
  otherwise through a torch.autograd.Function inside forward.
* `infer_shape(p, in_shapes, out_shapes)` -> (in_shapes, out_shapes): may fill unknown input
  shapes (weights from data). Shapes are tuples with 0 for an unknown dim, None when unknown.
  Without a rule, output shapes come from running `forward` on meta tensors.
* `infer_type(p, in_types, out_types)` -> (in_types, out_types); default: one dtype for all.
* `loss_gradient(p, inputs, output)` -> the gradient w.r.t. inputs[0] for loss outputs, whose
  gradient is MXNet's own (SoftmaxOutput, the regression outputs, MakeLoss). The executor feeds
  it to autograd at the loss's input; imperative calls get it attached by `attach_gradient`.
* `head_grad`: 'required' (normal), 'ignored' (loss outputs: their declared gradient is used
  and head gradients are ignored), 'zero' (BlockGrad: the output's gradient is identically
  zero) or 'ones' (no head gradient needed: the executor seeds the op's own backward with ones;
  Custom ops with need_top_grad=False); or a function of the params giving one of those.
* `update_aux(p, aux, outputs)` updates the aux tensors in place after a training pass from the
  pass's outputs (BatchNorm's moving averages); the executor calls it when it commits.
* `init_hints`: {input name: initializer JSON} put on variables bound to those inputs.
* `differentiable=False`: MXNet registers no gradient for the op; binding a graph that needs a
  gradient through it fails (an op with a zero gradient is differentiable).
* `random=True`: the op draws random numbers; graph passes never merge two such calls.
"""
import functools

import torch

from .. import inference_graph
from ..base import MXNetError
from .params import parse_params

# Operators whose inputs a monitor names after their parameters (`fc_data`, `bn_gamma`); MXNet
# names the inputs of every other operator `input0`, `input1`, ... and of variadic ones `arg<i>`.
_NAMED_INPUT_OPS = frozenset([
    'BatchNorm', 'BilinearSampler', 'Convolution', 'Correlation', 'Deconvolution', 'Dropout',
    'Embedding', 'FullyConnected', 'GridGenerator', 'GroupNorm', 'IdentityAttachKLSparseReg',
    'InstanceNorm', 'L2Normalization', 'LRN', 'LayerNorm', 'LeakyReLU', 'LinearRegressionOutput',
    'LogisticRegressionOutput', 'MAERegressionOutput', 'MakeLoss', 'Pad', 'Pooling', 'RNN',
    'ROIPooling', 'SVMOutput', 'SequenceLast', 'SequenceMask', 'SequenceReverse', 'SliceChannel',
    'SoftmaxOutput', 'SpatialTransformer', 'SwapAxis', 'softmax', 'log_softmax', 'where', 'take',
    'batch_take', 'pick', 'one_hot', 'tile', 'repeat', 'reverse', 'squeeze', 'diag',
    'depth_to_space', 'space_to_depth', 'slice_like', 'gather_nd', 'scatter_nd',
    'softmax_cross_entropy', 'ctc_loss', 'CTCLoss',
])

_REGISTRY = {}        # every name and alias -> OpDef
_CANONICAL = {}       # canonical name -> OpDef


def _as_fn(value):
    if callable(value):
        return value
    value = tuple(value)
    return lambda p: value


class OpDef:
    # storage types (ops/sparse.py): infer_storage(p, in_stypes) -> out stypes, or None for
    # MXNet's dense fallback; sparse_forward(p, inputs, out_stypes) -> outputs, or None
    infer_storage = None
    sparse_forward = None
    grad_storage = None       # (p, in_stypes) -> storage type of each input's gradient
    # forward(p, *inputs) run instead of `forward` by an imperative call whose out= is its first
    # input, for kernels whose numbers depend on that aliasing (nag_mom_update reads the weight
    # after writing it)
    forward_into_input0 = None
    # MXNet's backward graph has a node for this op (reported by Monitor as
    # `<name>_backward_output[i]`); False where MXNet hands the head gradient straight to the
    # inputs (its CloneGradient) and reports nothing
    backward_node = True
    # the output's shape depends on the input values (boolean_mask): a static plan cannot be
    # bound; hybridized Gluon runs such graphs operator by operator, as MXNet's CachedOp does
    dynamic_shape = False
    # torch.compile may trace the forward (compiler.py); False where it runs Python the tracer
    # must not enter (custom operators, control flow over sub-executors): a compiled plan calls
    # such a step as it is, between compiled regions
    traceable = True
    # the forward reads tensor values in Python (data-dependent control flow: box_nms's greedy
    # suppression) while the shapes of its outputs follow from its inputs' shapes: an inference
    # graph's trace records each call as one opaque operator that runs the forward as it is
    # (inference_graph.opaque), instead of giving up on the whole graph
    reads_values = False
    # ---- facts graph rewrites look up (fusion.py, symbol/optimize.py, symbol/json_format.py)
    # the op's first output is a new tensor it owns: a post-operation may overwrite it in place
    fresh_output = False
    # pointwise_act(p) -> ('relu', []) or ('hardtanh', [low, high]) when the op is that
    # elementwise activation (a fused convolution's last post-operation), else None
    pointwise_act = None
    # inference_affine(p) -> affine(bias, *params) -> (scale, shift), or None: at inference the
    # op maps x + bias to x * scale + shift per channel of axis 1, `params` being its inputs
    # after the data (a convolution's bias and the op fold into the convolution's weights)
    inference_affine = None
    # the op adds its two inputs, of one shape (a fused convolution's sum post-operation)
    sum_of_two = False
    # conv_geometry(p) -> the geometry of a channel-first convolution (rank, stride, pad,
    # dilate, groups, has_bias: conv.ConvGeometry) that fused kernels can run; else None.
    # A training plan runs 2-D ones on channels-last activations (plan.py)
    conv_geometry = None
    # keeps_layout(p) -> True where the op's values do not depend on how its inputs lie in
    # memory and, given channels-last 4-D data, its first output is channels-last too (torch's
    # element-wise, pooling and convolution kernels; BatchNorm's own): a training plan keeps
    # such ops on channels-last activations between convolutions (plan.py)
    keeps_layout = None
    # deconv_geometry(p) -> the geometry of a channel-first 2-D transposed convolution (stride,
    # pad, adj, dilate, groups, has_bias: conv.DeconvGeometry) that oneDNN can run; else None
    deconv_geometry = None
    # bind_rewrite(symbol, shapes) -> symbol: a rewrite symbol/optimize.fuse runs at bind over
    # whole graphs (the recurrent op family's: unrolled cells as one fused op); it returns
    # `symbol` itself where nothing applies and puts its new nodes' shapes into `shapes`
    bind_rewrite = None
    # amp_cast_input(k) -> the input whose value the op's output k is, cast to another dtype:
    # graphs saved without AMP casts read that input instead
    amp_cast_input = None
    # output k is input k converted to another dtype (Cast, amp_cast): a gradient passes
    # straight back through it, to or from an integer dtype as well (int_grad.py)
    converts_dtype = False
    # False where MXNet's backward over integer-typed values is zero (the modulo, whose
    # gradient kernels are 0 for integer types): int_grad.py links such results with zeros
    integer_gradient = True
    # upgrade_attrs(attrs, version): fixes, in place, the attrs of a node loaded from a graph
    # MXNet `version` saved (MXNet's load-time upgrades of one operator)
    upgrade_attrs = None
    # names among the arguments that the operator mutates (MXNet's FMutateInputs): they are
    # auxiliary states of a graph although they keep their place in MXNet's input order
    # (a tuple, or a function of the node's params giving one)
    mutated_args = ()

    def __init__(self, name, forward, params=None, inputs=('data',), aux=(), outputs=('output',),
                 visible_outputs=None, variadic=None, mode_dependent=False, creation=False,
                 infer_shape=None, infer_type=None, head_grad='required', update_aux=None,
                 init_hints=None, aliases=(), doc='', loss_gradient=None, differentiable=True,
                 random=False):
        self.name = name
        self.plain_forward = forward
        self.loss_gradient = loss_gradient
        self.forward = forward if loss_gradient is None else \
            _with_declared_gradient(forward, loss_gradient)
        self.params = dict(params or {})
        self._inputs = _as_fn(inputs)
        self._aux = _as_fn(aux)
        self._outputs = _as_fn(outputs)
        self._visible = visible_outputs
        self.variadic = variadic
        if variadic and variadic in self.params:       # a count of inputs: at least one, bounded
            counted = self.params[variadic]
            if getattr(counted, 'lower', 0) is None:
                counted.lower = 1
            counted.count = True
        self.mode_dependent = mode_dependent
        self.creation = creation
        self.infer_shape = infer_shape
        self.infer_type = infer_type
        if head_grad == 'ignored' and loss_gradient is None:
            raise MXNetError('operator %s: head_grad="ignored" needs a loss_gradient' % name)
        self._head_grad = _as_fn((head_grad,)) if isinstance(head_grad, str) else head_grad
        self.update_aux = update_aux
        self.differentiable = differentiable
        self.random = random
        self.init_hints = dict(init_hints or {})
        self.aliases = tuple(aliases)
        self.doc = doc or (forward.__doc__ or '')
        self._param_cache = {}

    def __repr__(self):
        return '<OpDef %s>' % self.name

    # ---- parameters --------------------------------------------------------------------------
    def parse_params(self, attrs):
        """Params of an attrs dict (strings or Python values). Cached for string attrs."""
        try:
            key = tuple(sorted(attrs.items()))
            hash(key)
        except TypeError:
            return parse_params(self.name, self.params, attrs)
        cached = self._param_cache.get(key)
        if cached is None:
            cached = parse_params(self.name, self.params, attrs)
            if len(self._param_cache) < 4096:
                self._param_cache[key] = cached
        return cached

    # ---- inputs and outputs ------------------------------------------------------------------
    def arg_names(self, p):
        """Names of the non-auxiliary inputs."""
        if self.variadic:
            return ['arg%d' % i for i in range(p[self.variadic])]
        return list(self._inputs(p))

    def aux_names(self, p):
        return list(self._aux(p))

    def input_names(self, p):
        """All inputs in graph order: arguments first, then auxiliary states."""
        return self.arg_names(p) + self.aux_names(p)

    def aux_positions(self, p, count):
        """Positions, among a node's `count` inputs, of the inputs it mutates (aux states)."""
        args = self.arg_names(p)
        mutated = self.mutated_args(p) if callable(self.mutated_args) else self.mutated_args
        return [args.index(n) for n in mutated] + list(range(len(args), count))

    def monitor_input_names(self, p, count):
        """The names a monitor gives the inputs, as MXNet 1.9.1 does."""
        if self.variadic:
            return ['arg%d' % i for i in range(count)]
        names = self.input_names(p)
        if self.name in _NAMED_INPUT_OPS or names[:2] == ['lhs', 'rhs'] or \
                self.name.startswith(('_linalg_', 'linalg_')):
            return names
        return ['input%d' % i for i in range(count)]

    def output_names(self, p):
        return list(self._outputs(p))

    def num_outputs(self, p):
        return len(self.output_names(p))

    def num_visible_outputs(self, p):
        if self._visible is None:
            return len(self._outputs(p))
        return self._visible(p) if callable(self._visible) else self._visible

    def visible_output_names(self, p):
        """Suffixes used by list_outputs: 'output' alone, else the declared names."""
        names = self.output_names(p)[:self.num_visible_outputs(p)]
        return names

    def head_grad(self, p):
        """'required', 'ignored' or 'zero': what backward needs from an output's head gradient."""
        kind = self._head_grad(p)
        return kind[0] if isinstance(kind, tuple) else kind

    # ---- execution ---------------------------------------------------------------------------
    def update_aux_at_backward(self, p, aux, outputs):
        """A recorded training call's auxiliary statistics (BatchNorm's moving mean and
        variance): MXNet updates them in the operator's backward, so they change when the
        gradient reaches this call's output (once per backward pass) and not at all for a call
        that is not recorded or not differentiated (a forward under train_mode() alone)."""
        out = outputs[0]
        if not out.requires_grad:
            return
        # the hook lives on `out`: holding `out` too would make a cycle that keeps the whole
        # recorded graph alive (the update reads the statistics, never the output itself)
        stats = (None,) + tuple(outputs[1:])

        def update(grad):
            with torch.no_grad():
                self.update_aux(p, aux, stats)
        out.register_hook(update)

    def bind_forward(self, p, train, device, out_shape=None, plain=False):
        """The forward callable for fixed params, mode and device: fn(*tensors) -> outputs.

        plain: a loss operator's forward alone, outside autograd (the executor applies its
        loss_gradient itself)."""
        kwargs = {}
        if self.mode_dependent:
            kwargs['train'] = train
        if self.creation:
            kwargs['device'] = device
            kwargs['out_shape'] = out_shape
        if plain:
            forward = functools.partial(self.plain_forward, p, **kwargs)

            def without_autograd(*inputs):
                with torch.no_grad():
                    return forward(*inputs)
            fn = without_autograd
        else:
            fn = functools.partial(self.forward, p, **kwargs)
        if not self.traceable:
            fn = _untraced(fn)
        if self.reads_values:
            fn = inference_graph.opaque(fn)
        return fn


def _untraced(fn):
    """fn, called as it is from code torch.compile traces (a graph break around it)."""
    import torch._dynamo
    return torch._dynamo.disable(fn, recursive=True)


def attach_gradient(value, x, grad):
    """`value` in the forward pass; in the backward its gradient w.r.t. x is `grad` (times the
    head gradient): value + (x - x) * grad, in native autograd ops."""
    if not (torch.is_grad_enabled() and x.requires_grad):
        return value
    return value.detach() + (x - x.detach()) * grad.detach()


def _with_declared_gradient(forward, loss_gradient):
    """A loss operator's forward for imperative use: its value, carrying its declared gradient
    w.r.t. the first input when autograd records."""
    def forward_with_gradient(p, *inputs, **kwargs):
        with torch.no_grad():
            out = forward(p, *inputs, **kwargs)
        if torch.is_grad_enabled() and inputs[0].requires_grad:
            return attach_gradient(out, inputs[0], loss_gradient(p, inputs, out))
        return out
    forward_with_gradient.__doc__ = forward.__doc__
    return forward_with_gradient


def register(opdef):
    if opdef.name in _CANONICAL:
        raise MXNetError('operator %s registered twice' % opdef.name)
    _CANONICAL[opdef.name] = opdef
    for n in (opdef.name,) + opdef.aliases:
        if n in _REGISTRY and _REGISTRY[n] is not opdef:
            raise MXNetError('operator name %s registered twice' % n)
        _REGISTRY[n] = opdef
    return opdef


def add_alias(name, opdef):
    """Make `name` another name of the registered `opdef` (MXNet's add_alias)."""
    if name in _REGISTRY and _REGISTRY[name] is not opdef:
        raise MXNetError('operator name %s registered twice' % name)
    _REGISTRY[name] = opdef
    if name != opdef.name and name not in opdef.aliases:
        opdef.aliases = opdef.aliases + (name,)
    return opdef


def defop(name, **kwargs):
    """Decorator form: `@defop('FullyConnected', params=..., inputs=...)` over the forward."""
    def wrap(forward):
        register(OpDef(name, forward, **kwargs))
        return forward
    return wrap


def get_op(name):
    try:
        return _REGISTRY[name]
    except KeyError:
        raise MXNetError('Operator %s is not registered' % name) from None


def find_op(name):
    return _REGISTRY.get(name)


def all_ops():
    """{every name and alias: OpDef}."""
    return dict(_REGISTRY)


def canonical_ops():
    return dict(_CANONICAL)
