"""mx.onnx: export a Symbol and its parameters to an ONNX file (MXNet 1.9's `mx.onnx`).

The graph is bound for the given input shapes, wrapped as a torch.nn.Module
(mx.contrib.torch.to_torch) and written by torch.onnx's exporter, so every operator mxtorch
runs with traceable torch code exports. Needs the `onnx` package (pip install mxtorch[export]).
"""
import logging
import os
import warnings

import numpy as np

from ..base import MXNetError

__all__ = ['export_model']


def _load(sym, params):
    """(Symbol, {name: NDArray}) from objects or from -symbol.json / .params paths."""
    from .. import ndarray as nd
    from .. import symbol
    if isinstance(sym, (str, os.PathLike)):
        sym = symbol.load(os.fspath(sym))
    elif not isinstance(sym, symbol.Symbol):
        raise MXNetError('export_model: sym must be a Symbol or the path of a -symbol.json file, '
                         'got %s' % type(sym).__name__)
    if isinstance(params, (str, os.PathLike)):
        loaded = nd.load(os.fspath(params))
        if not isinstance(loaded, dict):
            raise MXNetError('export_model: %s holds no named arrays' % params)
        params = {k.split(':', 1)[1] if k.startswith(('arg:', 'aux:')) else k: v
                  for k, v in loaded.items()}
    elif isinstance(params, (list, tuple)) and len(params) == 2 and \
            all(isinstance(p, dict) for p in params):
        params = dict(params[0], **params[1])
    elif not isinstance(params, dict):
        raise MXNetError('export_model: params must be a dict, [arg_params, aux_params] or the '
                         'path of a .params file, got %s' % type(params).__name__)
    return sym, params


def _dynamic_axes(names, in_shapes, dynamic, dynamic_input_shapes):
    """torch.onnx dynamic_axes: every dimension (dynamic=True), or those given as None."""
    if not dynamic:
        return None
    if dynamic_input_shapes is None:
        dynamic_input_shapes = [[None] * len(s) for s in in_shapes]
    if len(dynamic_input_shapes) != len(in_shapes):
        raise MXNetError('export_model: dynamic_input_shapes has %d shapes for %d inputs'
                         % (len(dynamic_input_shapes), len(in_shapes)))
    axes = {}
    for name, shape, dyn in zip(names, in_shapes, dynamic_input_shapes):
        if len(dyn) != len(shape):
            raise MXNetError('export_model: dynamic shape %s of %r does not have the rank of %s'
                             % (tuple(dyn), name, tuple(shape)))
        axes[name] = {i: '%s_dim%d' % (name, i) for i, d in enumerate(dyn) if d is None}
    return axes


def export_model(sym, params, in_shapes=None, in_types=np.float32,
                 onnx_file_path='model.onnx', verbose=False, dynamic=False,
                 dynamic_input_shapes=None, run_shape_inference=False, input_type=None,
                 input_shape=None, opset_version=None):
    """Write `sym` with `params` as an ONNX model; returns onnx_file_path.

    sym: a Symbol or the path of a -symbol.json file. params: {name: NDArray} (arguments and
    auxiliary states), [arg_params, aux_params], or the path of a .params file.
    in_shapes: one shape per input, the inputs being the symbol's arguments without a value in
    params, less the label of the output layer (`<last node>_label`), in list_inputs order.
    in_types: one dtype, or one per input. dynamic: every input dimension symbolic, or those
    that are None in dynamic_input_shapes. input_type/input_shape: older names of
    in_types/in_shapes. opset_version: the ONNX opset (default: torch.onnx's).
    """
    try:
        import onnx
        import torch
    except ImportError:
        raise ImportError('mx.onnx.export_model needs the onnx package: '
                          'pip install "mxtorch[export]"') from None
    from ..contrib.torch import to_torch
    in_types = input_type if input_type is not None else in_types
    in_shapes = input_shape if input_shape is not None else in_shapes
    sym, params = _load(sym, params)
    output_label = sym.get_internals()[len(sym.get_internals()) - 1].name + '_label'
    names = [n for n in sym.list_inputs() if n not in params and n != output_label]
    if in_shapes is None or len(in_shapes) != len(names):
        raise MXNetError('export_model: in_shapes must give one shape per input %s, got %s'
                         % (names, in_shapes))
    in_shapes = [tuple(int(d) for d in s) for s in in_shapes]
    if not isinstance(in_types, (list, tuple)):
        in_types = [in_types] * len(in_shapes)
    if len(in_types) != len(in_shapes):
        raise MXNetError('export_model: the lengths of in_types and in_shapes must be equal')
    in_types = [np.dtype(t) for t in in_types]
    aux_names = set(sym.list_auxiliary_states())
    arg_params = {k: v for k, v in params.items() if k not in aux_names}
    aux_params = {k: v for k, v in params.items() if k in aux_names}
    module = to_torch(sym, arg_params, aux_params, list(zip(names, in_shapes)),
                      type_dict=dict(zip(names, in_types)))
    dummy = tuple(torch.zeros(s, dtype=getattr(torch, t.name)) for s, t in zip(in_shapes, in_types))
    kwargs = {'dynamo': False} if _has_dynamo_flag(torch) else {}
    if opset_version is not None:
        kwargs['opset_version'] = opset_version
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')        # the tracer's notes on Python-side shape checks
        torch.onnx.export(module, dummy, onnx_file_path, input_names=names,
                          output_names=sym.list_outputs(), verbose=verbose,
                          do_constant_folding=False,
                          dynamic_axes=_dynamic_axes(names, in_shapes, dynamic,
                                                     dynamic_input_shapes), **kwargs)
    model = onnx.load(onnx_file_path)
    _rename_initializers(model, module.mxnet_names)
    if run_shape_inference:
        try:
            model = onnx.shape_inference.infer_shapes(model)
        except Exception:                      # noqa: BLE001 (MXNet keeps the export then too)
            logging.info('Shape inference failed, original export is kept.')
    onnx.save(model, onnx_file_path)
    logging.info('Input shape of the model %s', in_shapes)
    logging.info('Exported ONNX file %s saved to disk', onnx_file_path)
    return onnx_file_path


def _has_dynamo_flag(torch):
    import inspect
    return 'dynamo' in inspect.signature(torch.onnx.export).parameters


def _rename_initializers(model, mxnet_names):
    """Initializers under their MXNet names (the module holds them as Python identifiers)."""
    renames = {a: n for a, n in mxnet_names.items() if a != n}
    if not renames:
        return
    graph = model.graph
    for init in graph.initializer:
        init.name = renames.get(init.name, init.name)
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name in renames:
                node.input[i] = renames[name]
    for value in graph.input:
        value.name = renames.get(value.name, value.name)
