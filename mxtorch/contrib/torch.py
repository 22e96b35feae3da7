"""mx.contrib.torch: a Symbol and its parameters as a `torch.nn.Module`.

    net = mx.contrib.torch.to_torch(sym, arg_params, aux_params, [('data', (1, 3, 224, 224))])
    out = net(torch.randn(1, 3, 224, 224))                 # MXNet's inference forward
    program = torch.export.export(net, (torch.randn(1, 3, 224, 224),))

The module runs the flat function the Executor generates for the graph (`executor.code`), in
inference mode (is_train=False: Dropout off, BatchNorm on its moving statistics). The symbol's
arguments become `nn.Parameter`s and its auxiliary states buffers, under their MXNet names (made
Python identifiers where they are not). Inputs other than parameters and the data (the labels of
loss outputs, which inference does not read) are fed zeros of their inferred shape.
"""
import numpy as np
import torch

from ..base import MXNetError
from ..context import Context, cpu
from ..ndarray.ndarray import NDArray

__all__ = ['SymbolModule', 'to_torch']


def _tensor(value, name):
    if isinstance(value, NDArray):
        return value._tensor.detach().clone()
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return torch.as_tensor(np.asarray(value) if isinstance(value, np.ndarray) else value)
    raise MXNetError('parameter %r must be an NDArray or a numpy array, got %s'
                     % (name, type(value).__name__))


def _data_shapes(data_shapes):
    """[(name, shape)] from a dict, a list of pairs or of DataDesc (Module's provide_data)."""
    if isinstance(data_shapes, dict):
        data_shapes = list(data_shapes.items())
    result = []
    for item in data_shapes:
        name, shape = (item.name, item.shape) if hasattr(item, 'name') else item
        if not isinstance(name, str):
            raise MXNetError('data_shapes: expected (name, shape) pairs, got %r' % (item,))
        result.append((name, tuple(int(d) for d in shape)))
    return result


class SymbolModule(torch.nn.Module):
    """A bound MXNet graph as an nn.Module: forward(*data) -> the symbol's outputs (one tensor,
    or a tuple when the symbol has several). Build it with `to_torch`."""

    def __init__(self, executor, data_names, param_names):
        super().__init__()
        plan = executor._plan            # the executor's flat function over named values
        self._forward_fn = plan.compile(False, executor._ctx.torch_device)[0]
        self.data_names = list(data_names)
        self.output_names = executor._symbol.list_outputs()
        self.mxnet_names = {}            # attribute name -> MXNet name
        self._feed = []                  # per plan input: ('data', i) / ('attr', n) / ('zeros', ..)
        names = executor._arg_names + executor._aux_names
        arrays = list(executor.arg_arrays) + list(executor.aux_arrays)
        n_args = len(executor._arg_names)
        for k, (name, ident, array) in enumerate(zip(names, plan.input_names, arrays)):
            if name in self.data_names:
                self._feed.append(('data', self.data_names.index(name)))
                continue
            if k >= n_args or name in param_names:
                attr = ident if not hasattr(torch.nn.Module, ident) else 'p_' + ident
                tensor = array._tensor.detach().clone()
                if k < n_args:
                    self.register_parameter(attr, torch.nn.Parameter(
                        tensor, requires_grad=tensor.is_floating_point()))
                else:
                    self.register_buffer(attr, tensor)
                self.mxnet_names[attr] = name
                self._feed.append(('attr', attr))
            else:
                self._feed.append(('zeros', (array.shape, array._tensor.dtype)))

    def forward(self, *data):
        if len(data) != len(self.data_names):
            raise TypeError('forward takes %d inputs (%s), got %d'
                            % (len(self.data_names), ', '.join(self.data_names), len(data)))
        inputs = []
        for kind, what in self._feed:
            if kind == 'data':
                inputs.append(data[what])
            elif kind == 'attr':
                inputs.append(getattr(self, what))
            else:
                inputs.append(torch.zeros(what[0], dtype=what[1], device=data[0].device))
        heads = self._forward_fn(*inputs)[0]
        return heads[0] if len(heads) == 1 else tuple(heads)


def to_torch(sym, arg_params, aux_params=None, data_shapes=None, ctx=None, type_dict=None):
    """`sym` with `arg_params`/`aux_params` as a SymbolModule (a torch.nn.Module).

    data_shapes (required): the inputs of forward, in order: [(name, shape)], a dict, or
    Module's provide_data. The shapes are those the graph is planned for (an exported program
    may generalise the batch dimension; see mx.onnx.export_model's `dynamic`).
    type_dict: {name: numpy dtype} for the data (float32 by default).
    """
    arg_params = dict(arg_params or {})
    aux_params = dict(aux_params or {})
    if data_shapes is None:
        raise MXNetError('to_torch: data_shapes is required, e.g. [("data", (1, 3, 224, 224))]')
    data = _data_shapes(data_shapes)
    arguments = sym.list_arguments()
    for name, _ in data:
        if name not in arguments:
            raise MXNetError('to_torch: %r is not an argument of the symbol (its arguments: %s)'
                             % (name, ', '.join(arguments)))
    missing = [n for n in sym.list_auxiliary_states() if n not in aux_params]
    if missing:
        raise MXNetError('to_torch: auxiliary states missing from aux_params: %s'
                         % ', '.join(missing))
    ctx = ctx if isinstance(ctx, Context) else cpu()
    try:
        executor = sym.simple_bind(ctx, grad_req='null', type_dict=type_dict,
                                   **{n: s for n, s in data})
    except MXNetError as err:
        raise MXNetError('to_torch: cannot infer the graph\'s shapes from data_shapes %s: %s'
                         % (dict(data), err)) from None
    data_names = [n for n, _ in data]
    params = set()
    for name, value in list(arg_params.items()) + list(aux_params.items()):
        target = executor.arg_dict.get(name, executor.aux_dict.get(name))
        if target is None or name in data_names:
            continue
        tensor = _tensor(value, name)
        if tuple(tensor.shape) != target.shape:
            raise MXNetError('to_torch: parameter %r has shape %s, the graph needs %s'
                             % (name, tuple(tensor.shape), target.shape))
        target._tensor.copy_(tensor)
        params.add(name)
    unset = [n for n in arguments if n not in params and n not in data_names
             and not _is_label(sym, n)]
    if unset:
        raise MXNetError('to_torch: no value for argument(s) %s: pass them in arg_params or '
                         'name them in data_shapes' % ', '.join(unset))
    return SymbolModule(executor, data_names, params).eval()


def _is_label(sym, name):
    """An argument read only as the label of a loss output (zeros are fed for it)."""
    from ..symbol.graph import topo_order
    for node in topo_order(sym._entries):
        if node.op is None or node.op.loss_gradient is None:
            continue
        if any(child.name == name and child.op is None for child, _ in node.inputs[1:]):
            return True
    return False
