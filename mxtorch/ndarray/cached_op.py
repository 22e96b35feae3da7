"""mx.nd.CachedOp: a Symbol run imperatively on NDArrays, as one callable.

The graph's nodes are put in order once; each call runs every operator through the same
imperative path as `mx.nd.<op>` (so autograd records it, and training mode applies), with the
symbol's inputs (`sym.list_inputs()` order: arguments and auxiliary states) given positionally.
"""
from ..base import MXNetError
from ..symbol.graph import topo_order
from .ndarray import NDArray, invoke_parsed


class CachedOp:
    """Cached operator handle: `CachedOp(sym)(*inputs, out=None)` -> output(s) of `sym`."""

    def __init__(self, sym, flags=()):
        self._sym = sym
        self._order = topo_order(sym._entries)
        self._variables = [n for n in self._order if n.op is None]
        self.flags = dict(flags)

    def __call__(self, *args, **kwargs):
        out = kwargs.pop('out', None)
        kwargs.pop('default_ctx', None)
        if kwargs:
            raise TypeError('CachedOp.__call__ got unexpected keyword argument(s) %s'
                            % ', '.join(sorted(kwargs)))
        if len(args) != len(self._variables):
            raise MXNetError('CachedOp: expected %d inputs (%s), got %d'
                             % (len(self._variables),
                                ', '.join(n.name for n in self._variables), len(args)))
        for node, arg in zip(self._variables, args):
            if not isinstance(arg, NDArray):
                raise TypeError('CachedOp: input %s must be an NDArray, got %s'
                                % (node.name, type(arg).__name__))
        values = {id(n): [a] for n, a in zip(self._variables, args)}
        for node in self._order:
            if node.op is None:
                continue
            inputs = [self._entry(values, child, index) for child, index in node.inputs]
            result = invoke_parsed(node.op, node.params, inputs)
            values[id(node)] = result if isinstance(result, list) else [result]
        results = [self._entry(values, node, index) for node, index in self._sym._entries]
        if out is not None:
            outs = out if isinstance(out, (list, tuple)) else [out]
            for o, r in zip(outs, results):
                r.copyto(o)
            return out
        return results[0] if len(results) == 1 else results

    @staticmethod
    def _entry(values, node, index):
        outputs = values[id(node)]
        if index >= len(outputs):
            raise MXNetError('CachedOp: output %d of %s is hidden and cannot be consumed '
                             'imperatively' % (index, node.name))
        return outputs[index]
