"""mx.contrib.onnx: ONNX models in and out (MXNet 1.9's `mx.contrib.onnx`).

import_model reads an ONNX file into (sym, arg_params, aux_params) for graphs whose operators
mxtorch has (onnx2mx.py lists them), import_to_gluon into a gluon SymbolBlock; export_model is
mx.onnx.export_model. They need the `onnx` package (pip install "mxtorch[export]").
"""
from ...base import MXNetError
from ...onnx import export_model

__all__ = ['import_model', 'get_model_metadata', 'import_to_gluon', 'export_model']


def _load(model_file):
    try:
        import onnx
    except ImportError:
        raise ImportError('mx.contrib.onnx needs the onnx package: '
                          'pip install "mxtorch[export]"') from None
    try:
        return onnx.load_model(model_file)
    except OSError:
        raise
    except Exception as err:          # noqa: BLE001 (protobuf's DecodeError and friends)
        raise MXNetError('%s is not a readable ONNX model: %s' % (model_file, err)) from None


def import_model(model_file):
    """(sym, arg_params, aux_params) from the ONNX file `model_file`."""
    from .onnx2mx import Importer
    return Importer(_load(model_file)).run()


def get_model_metadata(model_file):
    """{'input_tensor_data': [(name, shape, onnx elem_type)], 'output_tensor_data':
    [(name, shape)]}: the graph's inputs other than initializers, and its outputs (a dimension
    with no fixed size reads 0, as in MXNet)."""
    graph = _load(model_file).graph
    params = {t.name for t in graph.initializer}

    def dims(value):
        return tuple(d.dim_value for d in value.type.tensor_type.shape.dim)
    return {'input_tensor_data': [(v.name, dims(v), v.type.tensor_type.elem_type)
                                  for v in graph.input if v.name not in params],
            'output_tensor_data': [(v.name, dims(v)) for v in graph.output]}


def import_to_gluon(model_file, ctx):
    """A gluon SymbolBlock of the ONNX file `model_file`: its inputs the graph's inputs other
    than initializers (in the graph's order), its parameters loaded on `ctx` (a Context or a
    list of them)."""
    from ... import symbol
    from ...gluon import SymbolBlock
    sym, arg_params, aux_params = import_model(model_file)
    data_names = [name for name, _, _ in get_model_metadata(model_file)['input_tensor_data']]
    net = SymbolBlock(outputs=sym, inputs=[symbol.var(name) for name in data_names])
    params = net.collect_params()
    for name, value in list(arg_params.items()) + list(aux_params.items()):
        if name in params:
            params[name].shape = value.shape
            params[name]._load_init(value, ctx=ctx)
    return net
