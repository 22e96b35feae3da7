"""MXNet's internal operators: _CrossDeviceCopy runs as a copy, the legacy NumpyOp / NDArrayOp
make MXNet's _Native / _NDArray nodes, and the placeholders refuse to run with an MXNetError."""
import json

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError


def _graph(nodes):
    return json.dumps({'nodes': nodes, 'arg_nodes': [0], 'heads': [[len(nodes) - 1, 0, 0]],
                       'attrs': {'mxnet_version': ['int', 10901]}})


def test_cross_device_copy_in_a_loaded_graph():
    s = mx.sym.load_json(_graph([
        {'op': 'null', 'name': 'd', 'inputs': []},
        {'op': '_CrossDeviceCopy', 'name': 'copy', 'inputs': [[0, 0, 0]]},
        {'op': '_plus_scalar', 'name': 'p', 'attrs': {'scalar': '1'}, 'inputs': [[1, 0, 0]]}]))
    assert s.infer_shape(d=(2,))[1] == [(2,)]
    grad = mx.nd.zeros(2)
    exe = s.bind(mx.cpu(), {'d': mx.nd.array([1, 2])}, args_grad={'d': grad})
    assert exe.forward(is_train=True)[0].asnumpy().tolist() == [2, 3]
    exe.backward(mx.nd.ones(2) * 3)
    assert grad.asnumpy().tolist() == [3, 3]


def test_legacy_python_ops_make_native_and_ndarray_nodes():
    class Double(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] * 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * out_grad[0]

    with pytest.warns(UserWarning):
        op = Double(need_top_grad=True)
    s = op(mx.sym.Variable('x'), name='dbl')
    node = json.loads(s.tojson())['nodes'][1]
    assert node['op'] == '_Native' and node['attrs']['need_top_grad'] == 'True'
    # the graph reloaded in this process still runs the operator
    s = mx.sym.load_json(s.tojson())
    grad = mx.nd.zeros(3)
    exe = s.bind(mx.cpu(), {'x': mx.nd.array([1, 2, 3])}, args_grad={'x': grad})
    assert exe.forward(is_train=True)[0].asnumpy().tolist() == [2, 4, 6]
    exe.backward(mx.nd.ones(3))
    assert grad.asnumpy().tolist() == [2, 2, 2]
    with pytest.warns(UserWarning):
        ident = mx.operator.NDArrayOp()
    node = json.loads(ident(mx.sym.Variable('x')).tojson())['nodes'][1]
    assert node['op'] == '_NDArray' and set(node['attrs']) == {'info'}


def test_native_node_of_another_process_is_refused():
    with pytest.raises(MXNetError, match='no live NumpyOp'):
        mx.sym.load_json(_graph([
            {'op': 'null', 'name': 'd', 'inputs': []},
            {'op': '_Native', 'name': 'n', 'attrs': {'info': '7f00dead'}, 'inputs': [[0, 0, 0]]}]))


def test_placeholders_refuse_to_run():
    s = mx.sym._internal._NoGradient()
    assert s.list_arguments() == [] and json.loads(s.tojson())['nodes'][0]['op'] == '_NoGradient'
    with pytest.raises(MXNetError, match='_NoGradient'):
        mx.nd._internal._NoGradient()
    for name in ('_CachedOp', '_CachedOpThreadSafe', '_CustomFunction'):
        with pytest.raises(MXNetError, match=name):
            getattr(mx.nd._internal, name)(mx.nd.ones(2))
    with pytest.raises(MXNetError, match='hybridize'):
        mx.sym._internal._CachedOp(mx.sym.Variable('d')).infer_shape(d=(2,))
    np.testing.assert_array_equal(mx.nd._internal._CrossDeviceCopy(mx.nd.ones(2)).asnumpy(),
                                  [1, 1])
