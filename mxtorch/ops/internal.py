"""The internal operators MXNet 1.9.1 registers for its own graphs, and what each means here.

* `_CrossDeviceCopy` (the copy MXNet's group2ctx placement puts between devices): a graph
  holding one loads and runs, the node copying its input (gradient: the head gradient).
* `_Native` / `_NDArray` (the nodes of the deprecated mx.operator.NumpyOp / NDArrayOp): their
  `info` attribute names a live operator object of this process (in MXNet a pointer); such a
  node runs that operator, and one whose `info` names nothing living is refused.
* `_NoGradient` (the placeholder MXNet's gradient pass puts for an input without a gradient):
  it has no value; a graph holding one loads, but computing it is refused, as in MXNet.
* `_CachedOp`, `_CachedOpThreadSafe` (a hybridized block's node) and `_CustomFunction`
  (an mx.autograd.Function's node) hold live objects MXNet never writes to a graph file; called
  by name they are refused with an MXNetError saying what to use instead.
"""
from ..base import MXNetError
from .custom import _CUSTOM
from .params import Bool, Str
from .registry import OpDef, get_op, register
from .shapes import same_shape, same_type


# ---------------------------------------------------------------------------------------------
# _CrossDeviceCopy
# ---------------------------------------------------------------------------------------------
register(OpDef('_CrossDeviceCopy', lambda p, data: data.clone(), infer_shape=same_shape,
               infer_type=same_type, doc='A copy of data (in MXNet: to another device).'))


# ---------------------------------------------------------------------------------------------
# _Native / _NDArray: the legacy Python operators
# ---------------------------------------------------------------------------------------------
_LIVE = {}      # info -> the mx.operator.PythonOp it names


def _live(p, name):
    pyop = _LIVE.get(p.info)
    if pyop is None:
        raise MXNetError('%s: info=%r names no live NumpyOp / NDArrayOp of this process (the '
                         'node of a deprecated Python operator runs only where its operator '
                         'object was made; use mx.operator.CustomOp for graphs that are saved)'
                         % (name, p.info))
    return pyop


def _python_op(name, frontend, params, need_top_grad):
    def custom(p):
        return _CUSTOM.parse_params({'op_type': _live(p, name)._op_type})

    def forward(p, *tensors, train=False):
        return _CUSTOM.forward(custom(p), *tensors, train=train)

    register(OpDef(
        name, forward, params=params, mode_dependent=True,
        doc='The node of a legacy Python operator (mx.operator.%s) named by info.' % frontend,
        inputs=lambda p: _CUSTOM.arg_names(custom(p)),
        outputs=lambda p: _CUSTOM.output_names(custom(p)),
        infer_shape=lambda p, ins, outs: _CUSTOM.infer_shape(custom(p), ins, outs),
        infer_type=lambda p, ins, outs: _CUSTOM.infer_type(custom(p), ins, outs),
        head_grad=lambda p: 'required' if need_top_grad(p) else 'ones'))


_python_op('_Native', 'NumpyOp', {'info': Str(), 'need_top_grad': Bool(True)},
           lambda p: p.need_top_grad)
_python_op('_NDArray', 'NDArrayOp', {'info': Str()},
           lambda p: _live(p, '_NDArray').need_top_grad())


def python_op_symbol(pyop, numpy, args, kwargs):
    """The symbol of a legacy Python operator (mx.operator.NumpyOp / NDArrayOp) applied to
    `args`: a `_Native` (numpy) or `_NDArray` node whose info names `pyop`."""
    from ..symbol.register import create
    info = '%x' % id(pyop)
    _LIVE[info] = pyop
    if numpy:
        return create('_Native', args, dict(kwargs, info=info,
                                            need_top_grad=pyop.need_top_grad()))
    return create('_NDArray', args, dict(kwargs, info=info))


# ---------------------------------------------------------------------------------------------
# _NoGradient and the nodes that hold live objects
# ---------------------------------------------------------------------------------------------
def _refuse(name, why):
    def fail(*args, **kwargs):
        raise MXNetError('Operator %s cannot be computed: %s' % (name, why))
    return fail


_NO_GRADIENT = ('it is the placeholder of MXNet\'s gradient graphs for an input that has no '
                'gradient, and has no value')
register(OpDef('_NoGradient', _refuse('_NoGradient', _NO_GRADIENT), inputs=(), doc=_NO_GRADIENT,
               infer_shape=lambda p, ins, outs: (ins, outs),
               infer_type=lambda p, ins, outs: (ins, outs), differentiable=False))

for _name, _why in (
        ('_CachedOp', 'it is the node of a hybridized block and runs the block\'s cached graph; '
                      'use HybridBlock.hybridize() or mx.nd.CachedOp(symbol)'),
        ('_CachedOpThreadSafe', 'it is the node of a thread-safe cached graph and runs that '
                                'graph; use HybridBlock.hybridize() or mx.nd.CachedOp(symbol)'),
        ('_CustomFunction', 'it is the node mx.autograd.Function records; subclass '
                            'mx.autograd.Function and call the instance instead')):
    register(OpDef(_name, _refuse(_name, _why), infer_shape=_refuse(_name, _why), doc=_why,
                   infer_type=_refuse(_name, _why), differentiable=False))


def cached_graph_op():
    """The operator MXNet records a hybridized block's call as (not inlined), in
    mx.autograd.get_symbol's graph."""
    return get_op('_CachedOp')
