"""Export: mx.onnx.export_model (run with onnxruntime), mx.contrib.onnx.import_model,
mx.contrib.torch.to_torch and torch.export, the `mxtorch export` command."""
import os

import numpy as np
import pytest
import torch

import mxtorch as mx
import mxtorch.onnx  # noqa: F401  (mx.onnx, as `import mxnet.onnx`)
from mxtorch.models import lenet, mlp

onnx = pytest.importorskip('onnx')
ort = pytest.importorskip('onnxruntime')
pytestmark = pytest.mark.filterwarnings('ignore:label_shapes is None')


def resnet_block():
    """conv-bn-relu-conv-bn + a projected shortcut, global pooling, a classifier."""
    data = mx.sym.var('data')
    body = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), pad=(1, 1), name='conv1')
    body = mx.sym.BatchNorm(body, fix_gamma=False, name='bn1')
    body = mx.sym.Activation(body, act_type='relu', name='relu1')
    body = mx.sym.Convolution(body, num_filter=4, kernel=(3, 3), pad=(1, 1), name='conv2')
    body = mx.sym.BatchNorm(body, fix_gamma=False, name='bn2')
    short = mx.sym.Convolution(data, num_filter=4, kernel=(1, 1), no_bias=True, name='sc')
    out = mx.sym.Activation(body + short, act_type='relu', name='relu2')
    out = mx.sym.Pooling(out, global_pool=True, kernel=(1, 1), pool_type='avg', name='pool')
    out = mx.sym.FullyConnected(mx.sym.Flatten(out), num_hidden=5, name='fc')
    return mx.sym.SoftmaxOutput(out, name='softmax')


CASES = {
    'lenet': (lambda: lenet.get_symbol(num_classes=10, small_input=True), (2, 1, 8, 8)),
    'mlp': (lambda: mlp.get_symbol(num_classes=10), (2, 64)),
    'resnet_block': (resnet_block, (2, 3, 6, 6)),
}


def random_params(sym, shape, seed=0):
    rng = np.random.RandomState(seed)
    args, _, aux = sym.infer_shape(data=shape)
    arg = {n: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for n, s in
           zip(sym.list_arguments(), args) if n not in ('data', 'softmax_label')}
    auxp = {n: mx.nd.array(rng.uniform(0.5, 1.5, s)) for n, s in
            zip(sym.list_auxiliary_states(), aux)}
    return arg, auxp


def mxtorch_forward(sym, arg, aux, x):
    mod = mx.mod.Module(sym, label_names=None if 'softmax_label' not in sym.list_arguments()
                        else ['softmax_label'], context=mx.cpu())
    mod.bind([('data', x.shape)], None, for_training=False)
    mod.set_params(arg, aux)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    return mod.get_outputs()[0].asnumpy()


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
    """{case: (sym, arg, aux, onnx path)}, exported once with a dynamic batch."""
    out = {}
    root = tmp_path_factory.mktemp('onnx')
    for name, (make, shape) in CASES.items():
        sym = make()
        arg, aux = random_params(sym, shape)
        path = mx.onnx.export_model(sym, dict(arg, **aux), [shape], np.float32,
                                    str(root / (name + '.onnx')), dynamic=True)
        out[name] = (sym, arg, aux, path)
    return out


@pytest.mark.parametrize('case', sorted(CASES))
def test_onnxruntime_matches_mxtorch(exported, case):
    sym, arg, aux, path = exported[case]
    session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
    assert [i.name for i in session.get_inputs()] == ['data']
    assert [o.name for o in session.get_outputs()] == sym.list_outputs()
    shape = CASES[case][1]
    x = np.random.RandomState(1).uniform(-1, 1, (3,) + shape[1:]).astype(np.float32)  # batch 3
    got = session.run(None, {'data': x})[0]
    want = mxtorch_forward(sym, arg, aux, x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    names = {i.name for i in onnx.load(path).graph.initializer}
    assert set(arg) | set(aux) <= names           # parameters keep their MXNet names


@pytest.mark.parametrize('case', sorted(CASES))
def test_import_model_round_trip(exported, case):
    import mxtorch.contrib.onnx as mxonnx
    sym, arg, aux, path = exported[case]
    isym, iarg, iaux = mxonnx.import_model(path)
    assert set(iarg) == set(arg) and set(iaux) == set(aux)
    assert isym.list_outputs() == sym.list_outputs()
    for name, value in list(iarg.items()) + list(iaux.items()):
        np.testing.assert_array_equal(value.asnumpy(), dict(arg, **aux)[name].asnumpy())
    x = np.random.RandomState(2).uniform(-1, 1, (4,) + CASES[case][1][1:]).astype(np.float32)
    np.testing.assert_allclose(mxtorch_forward(isym, iarg, iaux, x),
                               mxtorch_forward(sym, arg, aux, x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('case', sorted(CASES))
def test_import_to_gluon(exported, case):
    # MXNet's mx.contrib.onnx.import_to_gluon: a SymbolBlock over the graph's data inputs,
    # the initializers as its parameters
    import mxtorch.contrib.onnx as mxonnx
    sym, arg, aux, path = exported[case]
    net = mxonnx.import_to_gluon(path, mx.cpu())
    assert isinstance(net, mx.gluon.SymbolBlock)
    params = net.collect_params()
    assert set(params) == set(arg) | set(aux)
    for name, value in dict(arg, **aux).items():
        np.testing.assert_array_equal(params[name].data().asnumpy(), value.asnumpy())
    x = np.random.RandomState(3).uniform(-1, 1, (2,) + CASES[case][1][1:]).astype(np.float32)
    np.testing.assert_allclose(net(mx.nd.array(x)).asnumpy(),
                               mxtorch_forward(sym, arg, aux, x), rtol=1e-5, atol=1e-6)


def test_get_model_metadata(exported):
    import mxtorch.contrib.onnx as mxonnx
    meta = mxonnx.get_model_metadata(exported['lenet'][3])
    assert meta['input_tensor_data'] == [('data', (0, 0, 0, 0), onnx.TensorProto.FLOAT)]
    assert meta['output_tensor_data'] == [('softmax_output', (0, 10))]


def test_export_from_checkpoint_files_and_static_shape(tmp_path):
    sym = mlp.get_symbol(num_classes=10)
    arg, aux = random_params(sym, (2, 64))
    prefix = str(tmp_path / 'net')
    mx.model.save_checkpoint(prefix, 3, sym, arg, aux)
    path = mx.onnx.export_model(prefix + '-symbol.json', prefix + '-0003.params', [(2, 64)],
                                onnx_file_path=str(tmp_path / 'net.onnx'),
                                run_shape_inference=True)
    model = onnx.load(path)
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [2, 64]                         # dynamic=False: the shape as given
    x = np.random.RandomState(3).rand(2, 64).astype(np.float32)
    got = ort.InferenceSession(path, providers=['CPUExecutionProvider']).run(None, {'data': x})[0]
    np.testing.assert_allclose(got, mxtorch_forward(sym, arg, aux, x), rtol=1e-5, atol=1e-6)
    # [arg_params, aux_params] and the old keyword names are accepted as in MXNet
    again = mx.onnx.export_model(sym, [arg, aux], input_shape=[(2, 64)], input_type=np.float32,
                                 onnx_file_path=str(tmp_path / 'again.onnx'))
    assert os.path.getsize(again) > 0


def test_export_errors(tmp_path):
    sym = mlp.get_symbol(num_classes=10)
    arg, aux = random_params(sym, (2, 64))
    with pytest.raises(mx.MXNetError, match='one shape per input'):
        mx.onnx.export_model(sym, arg, [(2, 64), (2, 3)], onnx_file_path=str(tmp_path / 'a'))
    with pytest.raises(mx.MXNetError, match='params must be'):
        mx.onnx.export_model(sym, 5, [(2, 64)], onnx_file_path=str(tmp_path / 'b'))
    partial = {k: v for k, v in arg.items() if k != 'fc2_weight'}
    with pytest.raises(mx.MXNetError, match='one shape per input'):   # fc2_weight is an input
        mx.onnx.export_model(sym, partial, [(2, 64)], onnx_file_path=str(tmp_path / 'c'))


def _graph_model(nodes, inputs, outputs, initializers=(), opset=17):
    h = onnx.helper
    graph = h.make_graph(nodes, 'g', inputs, outputs, list(initializers))
    return h.make_model(graph, opset_imports=[h.make_operatorsetid('', opset)])


def test_import_handmade_graph(tmp_path):
    """Gemm without transB, MatMul by a constant, scalar arithmetic, Transpose, Clip."""
    h, nh = onnx.helper, onnx.numpy_helper
    rng = np.random.RandomState(4)
    w1, b1, w2 = (rng.randn(3, 4).astype(np.float32), rng.randn(4).astype(np.float32),
                  rng.randn(4, 2).astype(np.float32))
    nodes = [h.make_node('Gemm', ['x', 'w1', 'b1'], ['g']),
             h.make_node('Constant', [], ['two'], value=nh.from_array(np.float32(2.0))),
             h.make_node('Mul', ['g', 'two'], ['m']),
             h.make_node('Sub', ['two', 'm'], ['s']),
             h.make_node('Constant', [], ['lo'], value=nh.from_array(np.float32(-1.0))),
             h.make_node('Clip', ['s', 'lo'], ['c']),
             h.make_node('MatMul', ['c', 'w2'], ['y0']),
             h.make_node('Transpose', ['y0'], ['y'], perm=[1, 0])]
    model = _graph_model(nodes, [h.make_tensor_value_info('x', onnx.TensorProto.FLOAT, [5, 3])],
                         [h.make_tensor_value_info('y', onnx.TensorProto.FLOAT, [2, 5])],
                         [nh.from_array(w1, 'w1'), nh.from_array(b1, 'b1'),
                          nh.from_array(w2, 'w2')])
    path = str(tmp_path / 'hand.onnx')
    onnx.save(model, path)
    import mxtorch.contrib.onnx as mxonnx
    sym, arg, aux = mxonnx.import_model(path)
    x = rng.randn(5, 3).astype(np.float32)
    ex = sym.bind(mx.cpu(), dict(arg, x=mx.nd.array(x)))
    got = ex.forward()[0].asnumpy()
    want = (np.maximum(2 - 2 * (x @ w1 + b1), -1) @ w2).T
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    expected = ort.InferenceSession(path, providers=['CPUExecutionProvider']).run(None, {'x': x})
    np.testing.assert_allclose(got, expected[0], rtol=1e-5, atol=1e-5)


def test_import_rejects_unsupported_operator_and_bad_file(tmp_path):
    h = onnx.helper
    nodes = [h.make_node('Einsum', ['x', 'x'], ['y'], equation='ij,ij->i')]
    model = _graph_model(nodes, [h.make_tensor_value_info('x', onnx.TensorProto.FLOAT, [2, 2])],
                         [h.make_tensor_value_info('y', onnx.TensorProto.FLOAT, [2])])
    path = str(tmp_path / 'einsum.onnx')
    onnx.save(model, path)
    import mxtorch.contrib.onnx as mxonnx
    with pytest.raises(mx.MXNetError, match='Einsum'):
        mxonnx.import_model(path)
    bad = tmp_path / 'bad.onnx'
    bad.write_bytes(b'\xff\x00not a protobuf' * 3)
    with pytest.raises(mx.MXNetError, match='bad.onnx'):
        mxonnx.import_model(str(bad))


# ---- to_torch and torch.export ----------------------------------------------------------------------
def test_to_torch_module_holds_parameters_and_matches():
    sym = resnet_block()
    arg, aux = random_params(sym, (2, 3, 6, 6))
    net = mx.contrib.torch.to_torch(sym, arg, aux, [('data', (2, 3, 6, 6))])
    assert isinstance(net, torch.nn.Module) and not net.training
    assert {n for n, _ in net.named_parameters()} == set(arg)
    assert {n for n, _ in net.named_buffers()} == set(aux)
    np.testing.assert_array_equal(net.conv1_weight.detach().numpy(), arg['conv1_weight'].asnumpy())
    x = np.random.RandomState(5).randn(2, 3, 6, 6).astype(np.float32)
    got = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(got, mxtorch_forward(sym, arg, aux, x), rtol=1e-5, atol=1e-6)
    # the parameters are the module's own: changing one changes the output, autograd reaches it
    out = net(torch.from_numpy(x))
    (out[:, 0] * 0 + net.fc_bias.sum()).sum().backward()
    assert net.fc_bias.grad is not None


def test_torch_export_round_trip(tmp_path):
    sym = lenet.get_symbol(num_classes=10, small_input=True)
    arg, aux = random_params(sym, (2, 1, 8, 8))
    net = mx.contrib.torch.to_torch(sym, arg, aux, {'data': (2, 1, 8, 8)})
    x = torch.from_numpy(np.random.RandomState(6).randn(2, 1, 8, 8).astype(np.float32))
    program = torch.export.export(net, (x,))
    path = str(tmp_path / 'lenet.pt2')
    torch.export.save(program, path)
    loaded = torch.export.load(path)
    want = mxtorch_forward(sym, arg, aux, x.numpy())
    np.testing.assert_allclose(loaded.module()(x).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    assert {'fc1_weight', 'conv1_bias'} <= set(loaded.state_dict)


def test_to_torch_errors():
    sym = mlp.get_symbol(num_classes=10)
    arg, aux = random_params(sym, (2, 64))
    with pytest.raises(mx.MXNetError, match='not an argument'):
        mx.contrib.torch.to_torch(sym, arg, aux, [('x', (2, 64))])
    with pytest.raises(mx.MXNetError, match='fc1_weight'):
        bad = dict(arg, fc1_weight=mx.nd.zeros((3, 3)))
        mx.contrib.torch.to_torch(sym, bad, aux, [('data', (2, 64))])
    with pytest.raises(mx.MXNetError, match='fc3_bias'):
        mx.contrib.torch.to_torch(sym, {k: v for k, v in arg.items() if k != 'fc3_bias'}, aux,
                                  [('data', (2, 64))])
