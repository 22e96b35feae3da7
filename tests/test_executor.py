"""Executor: the seed-page examples, MXNet's golden checkpoints and the whole bind API."""
import json

import numpy as np
import pytest

import mxtorch as mx

CHECKPOINTS = ['mlp', 'lenet_bn', 'resnet_tiny', 'lstm_lm', 'mixed_ops']


def _nd(x, dtype=None):
    return mx.nd.array(x, dtype=dtype if dtype is not None else np.asarray(x).dtype)


def _doc_net(with_relu=True):
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), name='fc', num_hidden=6)
    if with_relu:
        net = mx.sym.Activation(net, name='relu', act_type='relu')
    return mx.sym.SoftmaxOutput(net, name='softmax')


# ---- the examples of the Executor reference page ------------------------------------------------
@pytest.mark.parametrize('case, relu', [('fc_relu_softmax', True), ('fc_softmax', False)])
def test_softmax_example_reproduces_mxnet(golden, case, relu):
    g = np.load(golden / 'seed_examples' / 'executor_examples.npz')
    args = {k: _nd(g['%s/arg/%s' % (case, k)])
            for k in ('data', 'fc_weight', 'fc_bias', 'softmax_label')}
    args_grad = {'fc_weight': mx.nd.zeros((6, 4)), 'fc_bias': mx.nd.zeros((6,))}
    texec = _doc_net(relu).bind(ctx=mx.cpu(), args=args, args_grad=args_grad)
    out = texec.forward(is_train=True)[0].copy()
    np.testing.assert_allclose(out.asnumpy(), g[case + '/out'], rtol=1e-6)
    texec.backward()
    np.testing.assert_allclose(texec.grad_arrays[1].asnumpy(), g[case + '/grad/fc_weight'],
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(texec.grad_arrays[2].asnumpy(), g[case + '/grad/fc_bias'],
                               rtol=1e-6, atol=1e-7)
    assert [a is None for a in texec.grad_arrays] == list(g[case + '/grad_arrays_is_none'])
    np.testing.assert_allclose(texec.forward()[0].asnumpy(), g[case + '/out_eval'], rtol=1e-6)


def test_two_a_plus_b_example(golden):
    g = np.load(golden / 'seed_examples' / 'executor_examples.npz')
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    c = 2 * a + b
    args = {'a': _nd(g['two_a_plus_b/arg/a']), 'b': _nd(g['two_a_plus_b/arg/b'])}
    texec = c.bind(ctx=mx.cpu(), args=args,
                   args_grad={'a': mx.nd.zeros((2,)), 'b': mx.nd.zeros((2,))})
    out = texec.forward(is_train=True)[0].copy()
    np.testing.assert_array_equal(out.asnumpy(), g['two_a_plus_b/out'])
    texec.backward(out)
    np.testing.assert_array_equal(texec.grad_arrays[0].asnumpy(), g['two_a_plus_b/grad/a'])
    np.testing.assert_array_equal(texec.grad_arrays[1].asnumpy(), g['two_a_plus_b/grad/b'])


def test_grad_req_add_accumulates_mathematically(golden):
    g = np.load(golden / 'seed_examples' / 'executor_examples.npz')
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    texec = (2 * a + b).bind(mx.cpu(), {'a': mx.nd.array([1, 2]), 'b': mx.nd.array([2, 3])},
                             args_grad={'a': mx.nd.zeros((2,)), 'b': mx.nd.zeros((2,))},
                             grad_req='add')
    for _ in range(2):
        out = texec.forward(is_train=True)[0].copy()
        texec.backward(out)
    for k in 'ab':
        np.testing.assert_array_equal(texec.grad_dict[k].asnumpy(),
                                      g['two_a_plus_b/grad_req_add_twice/mathematical/' + k])


# ---- the golden checkpoints -----------------------------------------------------------------------
def _golden_case(golden, model):
    folder = golden / 'checkpoints'
    manifest = json.loads((folder / 'manifest.json').read_text())['models'][model]
    exp = np.load(folder / ('%s-expected.npz' % model))
    params = mx.nd.load(str(folder / ('%s-0003.params' % model)))
    arg = {k[4:]: v for k, v in params.items() if k.startswith('arg:')}
    aux = {k[4:]: v for k, v in params.items() if k.startswith('aux:')}
    return folder, manifest, exp, arg, aux


def _bind_golden(sym, exp, arg, aux):
    shapes = {k[len('input/'):]: exp[k].shape for k in exp.keys() if k.startswith('input/')}
    exe = sym.simple_bind(mx.cpu(), grad_req='write', **shapes)
    exe.copy_params_from(arg, aux)
    for name, shape in shapes.items():
        exe.arg_dict[name][:] = exp['input/' + name]
    return exe


def _assert_close(got, want, what):
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=what)


@pytest.mark.parametrize('model', CHECKPOINTS)
def test_golden_checkpoint_forward_backward(golden, model):
    folder, manifest, exp, arg, aux = _golden_case(golden, model)
    sym = mx.sym.load(str(folder / ('%s-symbol.json' % model)))
    assert sym.list_arguments() == manifest['arguments']
    assert sym.list_auxiliary_states() == manifest['aux_states']
    assert sym.list_outputs() == manifest['outputs']
    exe = _bind_golden(sym, exp, arg, aux)
    outputs = exe.forward(is_train=False)
    for name, out in zip(sym.list_outputs(), outputs):
        _assert_close(out.asnumpy(), exp['eval_out/' + name], 'eval ' + name)
    if model == 'mixed_ops':       # training numbers come from the graph without Dropout
        sym = mx.sym.load(str(folder / 'mixed_ops_nodrop-symbol.json'))
        exe = _bind_golden(sym, exp, arg, aux)
    outputs = exe.forward(is_train=True)
    for name, out in zip(sym.list_outputs(), outputs):
        _assert_close(out.asnumpy(), exp['train_out/' + name], 'train ' + name)
    for name in sym.list_auxiliary_states():      # MXNet's CPU kernels update in backward
        _assert_close(exe.aux_dict[name].asnumpy(), exp['aux_after_train_forward/' + name], name)
    head_grads = [_nd(exp['head_grad/' + n]) if 'head_grad/' + n in exp else None
                  for n in sym.list_outputs()]
    exe.backward(head_grads)
    for key in exp.keys():
        if key.startswith('grad/'):
            _assert_close(exe.grad_dict[key[5:]].asnumpy(), exp[key], key)
        if key.startswith('aux_after_backward/'):
            _assert_close(exe.aux_dict[key[19:]].asnumpy(), exp[key], key)


# ---- bind forms and errors -------------------------------------------------------------------------
def _mlp():
    net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4, name='fc1')
    net = mx.sym.Activation(net, act_type='relu', name='relu1')
    net = mx.sym.FullyConnected(net, num_hidden=3, name='fc2')
    return mx.sym.SoftmaxOutput(net, name='softmax')


def test_simple_bind_allocates_zeros_and_gradients_for_every_argument():
    exe = _mlp().simple_bind(mx.cpu(), data=(5, 6))
    assert [a.shape for a in exe.arg_arrays] == [(5, 6), (4, 6), (4,), (3, 4), (3,), (5,)]
    assert all(a.asnumpy().sum() == 0 for a in exe.arg_arrays)
    assert all(g is not None for g in exe.grad_arrays)
    null = _mlp().simple_bind(mx.cpu(), grad_req='null', data=(5, 6))
    assert null.grad_arrays == [None] * 6
    some = _mlp().simple_bind(mx.cpu(), grad_req={'fc1_weight': 'write'}, data=(5, 6))
    assert [g is not None for g in some.grad_arrays] == [False, True, False, False, False, False]
    typed = _mlp().simple_bind(mx.cpu(), type_dict={'data': 'float64'}, data=(5, 6))
    assert typed.arg_dict['fc1_weight'].dtype == np.float64
    with pytest.raises(RuntimeError, match='simple_bind error'):
        _mlp().simple_bind(mx.cpu(), data=(5, 6), softmax_label=(3,))
    for empty, kind in (([], 'list'), ({}, 'dict')):       # MXNet's words
        with pytest.raises(RuntimeError, match='grad_req in simple_bind cannot be an empty '
                                               + kind):
            _mlp().simple_bind(mx.cpu(), grad_req=empty, data=(5, 6))


def test_bind_uses_the_given_arrays_and_checks_them():
    sym = _mlp()
    args = [mx.nd.array(np.random.rand(*s)) for s in [(2, 6), (4, 6), (4,), (3, 4), (3,), (2,)]]
    exe = sym.bind(mx.cpu(), args)
    # bound without args_grad: grad_arrays is None (as in MXNet); backward computes nothing
    assert exe.arg_arrays[0] is args[0] and exe.grad_arrays is None
    assert exe.grad_dict == dict.fromkeys(sym.list_arguments())
    args[0][:] = 0                       # writing into the input changes the next forward
    out = exe.forward()[0].asnumpy()
    args[0][:] = 1
    assert not np.allclose(out, exe.forward()[0].asnumpy())
    with pytest.raises(TypeError, match='Context'):
        sym.bind('cpu', args)
    with pytest.raises(ValueError, match='Length of args'):
        sym.bind(mx.cpu(), args[:3])
    with pytest.raises(ValueError, match='key `fc1_bias` is missing'):
        sym.bind(mx.cpu(), {'data': args[0], 'fc1_weight': args[1]})
    with pytest.raises(ValueError, match='grad_req'):
        sym.bind(mx.cpu(), args, grad_req='sometimes')
    bad = list(args)
    bad[1] = mx.nd.zeros((5, 6))
    with pytest.raises(mx.MXNetError, match='fc1'):
        sym.bind(mx.cpu(), bad)
    bn = mx.sym.BatchNorm(mx.sym.Variable('x'), name='bn')
    with pytest.raises(ValueError, match='aux_states'):
        bn.bind(mx.cpu(), {'x': mx.nd.ones((2, 3)), 'bn_gamma': mx.nd.ones(3),
                           'bn_beta': mx.nd.ones(3)})


def test_forward_kwargs_and_output_storage_reuse():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    out = exe.outputs[0]
    exe.forward(data=np.ones((2, 6), dtype=np.float32))
    first = out.asnumpy().copy()
    exe.arg_dict['fc2_bias'][:] = np.array([5, 0, 0])
    exe.forward(data=mx.nd.ones((2, 6)))
    assert out is exe.outputs[0] and not np.allclose(first, out.asnumpy())
    with pytest.raises(TypeError, match='Unknown argument nope'):
        exe.forward(nope=mx.nd.ones((2, 6)))
    with pytest.raises(ValueError, match=r'Shape not match! Argument data, need: \(2, 6\), '
                                         r'received: \(3, 6\)'):
        exe.forward(data=mx.nd.ones((3, 6)))
    with pytest.raises(ValueError, match='only accept'):
        exe.forward(data=[1, 2])
    before = exe.arg_dict['data'].asnumpy().copy()
    with pytest.raises(ValueError):
        exe.forward(data=mx.nd.zeros((2, 6)), fc1_bias=mx.nd.zeros((7,)))
    np.testing.assert_array_equal(exe.arg_dict['data'].asnumpy(), before)   # nothing half-done


def test_backward_errors_and_head_gradients():
    a = mx.sym.Variable('a')
    times3 = mx.sym._internal._mul_scalar(a, scalar=3, name='m')
    exe = times3.bind(mx.cpu(), {'a': mx.nd.ones((2,))}, args_grad={'a': mx.nd.zeros((2,))})
    exe.backward(mx.nd.ones((2,)))        # before any forward: MXNet 1.9.1 runs one itself
    np.testing.assert_array_equal(exe.grad_dict['a'].asnumpy(), [3, 3])
    exe.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match='head_gradient is required'):
        exe.backward()
    with pytest.raises(mx.MXNetError, match=r'shape \(3,\)'):
        exe.backward(mx.nd.ones((3,)))
    with pytest.raises(TypeError, match='NDArray'):
        exe.backward([np.ones(2)])
    exe.backward({'m_output': mx.nd.array([1, 2])})
    np.testing.assert_array_equal(exe.grad_dict['a'].asnumpy(), [3, 6])
    exe.backward([mx.nd.array([1, 1])])         # a second backward re-uses the last forward
    np.testing.assert_array_equal(exe.grad_dict['a'].asnumpy(), [3, 3])


def test_blockgrad_and_loss_heads_need_no_head_gradient():
    x = mx.sym.Variable('x')
    g = mx.sym.Group([mx.sym.MakeLoss(x * 1, name='l'), mx.sym.BlockGrad(x * 2, name='b')])
    exe = g.bind(mx.cpu(), {'x': mx.nd.array([[1, 2]])}, args_grad={'x': mx.nd.zeros((1, 2))})
    exe.forward(is_train=True)
    exe.backward()
    np.testing.assert_array_equal(exe.grad_dict['x'].asnumpy(), [[1, 1]])


def test_backward_after_inference_forward():
    exe = _mlp().simple_bind(mx.cpu(), data=(3, 6))
    for arr in exe.arg_arrays[1:5]:
        arr[:] = np.random.rand(*arr.shape)
    exe.arg_dict['data'][:] = np.random.rand(3, 6)
    exe.forward(is_train=True)
    exe.backward()
    expected = exe.grad_dict['fc1_weight'].asnumpy().copy()
    exe.grad_dict['fc1_weight'][:] = 0
    exe.forward(is_train=False)
    exe.backward()
    np.testing.assert_allclose(exe.grad_dict['fc1_weight'].asnumpy(), expected, rtol=1e-6)


def test_batchnorm_statistics_move_only_in_training_backward():
    bn = mx.sym.BatchNorm(mx.sym.Variable('x'), name='bn', fix_gamma=False)
    exe = bn.simple_bind(mx.cpu(), x=(8, 3))
    exe.aux_dict['bn_moving_var'][:] = 1
    exe.arg_dict['bn_gamma'][:] = 1
    data = np.random.rand(8, 3).astype(np.float32) * 4
    exe.arg_dict['x'][:] = data
    exe.forward(is_train=False)
    exe.forward(is_train=True)
    assert exe.aux_dict['bn_moving_mean'].asnumpy().sum() == 0          # not yet
    exe.backward(mx.nd.ones((8, 3)))
    np.testing.assert_allclose(exe.aux_dict['bn_moving_mean'].asnumpy(), 0.1 * data.mean(0),
                               rtol=1e-5)
    np.testing.assert_allclose(exe.aux_dict['bn_moving_var'].asnumpy(),
                               0.9 + 0.1 * data.var(0), rtol=1e-5)


def test_dict_views_and_duplicates():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    assert list(exe.arg_dict) == _mlp().list_arguments()
    assert list(exe.output_dict) == ['softmax_output']
    assert exe.grad_dict['fc1_weight'] is exe.grad_arrays[1]
    dup = mx.sym.Variable('x') + mx.sym.Variable('x')
    exe = dup.bind(mx.cpu(), [mx.nd.ones(2), mx.nd.ones(2)])
    with pytest.raises(ValueError, match='Duplicate names'):
        exe.arg_dict


def test_copy_params_from_checks_names_and_leaves_arrays_on_error():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    w = mx.nd.ones((4, 6), dtype='float64')
    exe.copy_params_from({'fc1_weight': w})
    assert exe.arg_dict['fc1_weight'].dtype == np.float32
    assert exe.arg_dict['fc1_weight'].asnumpy().sum() == 24
    with pytest.raises(ValueError, match='Find name "zzz" that is not in the arguments'):
        exe.copy_params_from({'fc1_bias': mx.nd.ones(4), 'zzz': mx.nd.ones(1)})
    assert exe.arg_dict['fc1_bias'].asnumpy().sum() == 0
    exe.copy_params_from({'zzz': mx.nd.ones(1)}, allow_extra_params=True)
    with pytest.raises(ValueError, match='auxiliary states'):
        exe.copy_params_from({}, {'m': mx.nd.ones(1)})


def test_reshape_shares_parameters_and_memory():
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    texec = (2 * a + b).bind(mx.cpu(), {'a': mx.nd.zeros((2, 1)), 'b': mx.nd.ones((2, 1))})
    big = texec.reshape(allow_up_sizing=True, a=(4, 2), b=(4, 2))
    assert big.arg_dict['a'].shape == (4, 2)
    with pytest.raises(mx.MXNetError, match='larger than original'):
        texec.reshape(a=(4, 2), b=(4, 2))

    exe = _mlp().simple_bind(mx.cpu(), data=(4, 6))
    small = exe.reshape(data=(2, 6), softmax_label=(2,))
    assert small.arg_dict['fc1_weight'] is not exe.arg_dict['fc1_weight']
    small.arg_dict['fc1_weight'][:] = 1
    assert exe.arg_dict['fc1_weight'].asnumpy().sum() == 24          # shared memory
    small.arg_dict['data'][:] = np.random.rand(2, 6)
    small.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy()[:2], small.outputs[0].asnumpy())
    with pytest.raises(mx.MXNetError, match='unspecifie arg: softmax_label'):
        exe.reshape(data=(2, 6))
    assert exe.reshape(partial_shaping=True, data=(2, 6)).arg_dict['softmax_label'].shape == (2,)


def test_monitor_callback_and_partial_forward():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    for arr in exe.arg_arrays[:5]:
        arr[:] = np.random.rand(*arr.shape)
    seen = []
    exe.set_monitor_callback(lambda name, arr: seen.append((name, arr.shape)))
    exe.forward()
    assert [n for n, _ in seen] == ['fc1_output', 'relu1_output', 'fc2_output', 'softmax_output']
    seen.clear()
    exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    exe.forward()
    # MXNet 1.9.1's order: a variable input is also reported under its own name; inputs of ops
    # without named inputs (Activation) are input<i>
    assert seen == ['data', 'fc1_data', 'fc1_weight', 'fc1_weight', 'fc1_bias', 'fc1_bias',
                    'fc1_output', 'relu1_input0', 'relu1_output', 'fc2_data', 'fc2_weight',
                    'fc2_weight', 'fc2_bias', 'fc2_bias', 'fc2_output', 'softmax_data',
                    'softmax_label', 'softmax_label', 'softmax_output']
    expected = exe.outputs[0].asnumpy().copy()
    exe.outputs[0][:] = 0
    exe.set_monitor_callback(None)
    steps_left = [exe.partial_forward(False, step) for step in range(4)]
    assert steps_left == [3, 2, 1, 0]
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), expected, rtol=1e-6)


def test_monitor_all_names_inputs_like_mxnet():
    # sequences recorded with MXNet 1.9.1: variadic inputs are arg<i>, inputs of ops without
    # named inputs are input<i>, and a variable input is first reported under its own name
    x, y = mx.sym.var('x'), mx.sym.var('y')
    cases = [(mx.sym.Concat(x, y, dim=1, name='c'), ['x', 'c_arg0', 'y', 'c_arg1', 'c_output']),
             (mx.sym.where(x, y, y, name='w'),
              ['x', 'w_condition', 'y', 'w_x', 'y', 'w_y', 'w_output']),
             (mx.sym._internal._plus_scalar(mx.sym.sin(x, name='s'), scalar=1, name='p'),
              ['x', 's_input0', 's_output', 'p_input0', 'p_output'])]
    for sym, expected in cases:
        exe = sym.bind(mx.cpu(), {n: mx.nd.ones((2, 2)) for n in sym.list_arguments()})
        seen = []
        exe.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
        exe.forward()
        assert seen == expected


def test_debug_str_ends_with_memory_lines():
    exe = _mlp().simple_bind(mx.cpu(), data=(1000, 600))
    text = exe.debug_str()
    assert text.startswith('Symbol Outputs:\n\toutput[0]=softmax(0)\n')
    assert int(text.split('\n')[-3].split()[1]) == 4      # MB, as Module parses it
    assert text.endswith('TempSpace resource requested\n')
    assert exe.get_optimized_symbol().tojson() == _mlp().tojson()


def test_generated_code_is_readable():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    assert 'fc1_output = FullyConnected_fc1(data, fc1_weight, fc1_bias)' in exe.code


def test_softmax_output_labels_outside_the_classes_take_nothing_off():
    # MXNet 1.9.1 gives these rows' gradient as prob alone (its kernel never matches the label)
    data = np.array([[1., 2, 3], [0, 0, 1], [2, 1, 0], [1, 1, 1]], 'float32')
    labels = np.array([2, -1, 3, 0], 'float32')
    net = mx.sym.SoftmaxOutput(mx.sym.Variable('x'), mx.sym.Variable('l'),
                               normalization='batch', grad_scale=2.0)
    exe = net.bind(mx.cpu(), {'x': mx.nd.array(data), 'l': mx.nd.array(labels)},
                   args_grad={'x': mx.nd.zeros((4, 3))})
    exe.forward(is_train=True)
    exe.backward()
    prob = np.exp(data) / np.exp(data).sum(axis=1, keepdims=True)
    expected = prob.copy()
    expected[0, 2] -= 1
    expected[3, 0] -= 1
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), expected * 2.0 / 4, rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy()[:2],
                               [[0.045015, 0.122364, -0.16738], [0.105971, 0.105971, 0.288058]],
                               atol=2e-6)


@pytest.mark.parametrize('classes', [10, 1000])      # the one-hot and the scatter_add forms
def test_softmax_output_gradient_small_and_large(classes):
    rng = np.random.RandomState(0)
    data = rng.randn(70, classes).astype('float32')
    labels = rng.randint(-2, classes + 2, 70).astype('float32')
    net = mx.sym.SoftmaxOutput(mx.sym.Variable('x'), mx.sym.Variable('l'), normalization='batch')
    exe = net.bind(mx.cpu(), {'x': mx.nd.array(data), 'l': mx.nd.array(labels)},
                   args_grad={'x': mx.nd.zeros(data.shape)})
    exe.forward(is_train=True)
    exe.backward()
    prob = np.exp(data - data.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    inside = (labels >= 0) & (labels < classes)
    prob[np.arange(70)[inside], labels[inside].astype(int)] -= 1
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), prob / 70, rtol=1e-4, atol=1e-7)


def test_an_output_listed_twice_gets_the_sum_of_its_head_gradients():
    """Deliberate difference (README, Compatibility): MXNet 1.9.1 keeps only the last head
    gradient of an output that appears twice in a Group; mxtorch sums them."""
    x = mx.sym.Variable('x')
    y = x * 3
    exe = mx.sym.Group([y, y]).simple_bind(mx.cpu(), x=(2,))
    exe.forward(is_train=True, x=mx.nd.array([1, 2]))
    exe.backward([mx.nd.array([1, 1]), mx.nd.array([10, 100])])
    np.testing.assert_allclose(exe.grad_dict['x'].asnumpy(), [33, 303])
