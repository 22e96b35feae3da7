"""The inference rewrites: folded BatchNorm, in-place ReLU and channels-last convolutions give
the unfused graph's numbers, and follow parameter changes."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import fusion


def _net():
    data = mx.sym.Variable('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c1')
    x = mx.sym.BatchNorm(x, fix_gamma=False, name='bn1')
    x = mx.sym.Activation(x, act_type='relu', name='r1')
    y = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8, no_bias=True, name='c2')
    y = mx.sym.BatchNorm(y, name='bn2')                       # fix_gamma=True
    z = mx.sym.Activation(y + x, act_type='relu', name='r2')   # residual add + relu
    shared = mx.sym.Convolution(z, kernel=(1, 1), num_filter=4, name='c3')
    branch = mx.sym.Activation(shared, act_type='relu', name='r3')
    out = mx.sym.Pooling(branch + shared, global_pool=True, kernel=(1, 1), pool_type='avg')
    return mx.sym.FullyConnected(mx.sym.Flatten(out), num_hidden=3, name='fc')


def _bound():
    exe = _net().simple_bind(mx.cpu(), grad_req='null', data=(2, 3, 6, 6))
    rng = np.random.RandomState(0)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if 'var' in name else rng.randn(*arr.shape)
    return exe


def _unfused(exe, monkeypatch):
    monkeypatch.setenv('MXTORCH_FUSE', '0')
    exe._fast_infer = None
    out = exe.forward()[0].asnumpy().copy()
    monkeypatch.delenv('MXTORCH_FUSE')
    exe._fast_infer = None
    return out


def test_rewrites_fold_fuse_and_keep_shared_values():
    plan = fusion.optimize_for_inference(_bound()._plan)
    names = [s.fn_name for s in plan.steps]
    # conv-bn-relu; conv-bn, + the first chain's output, relu; c3 alone (two readers)
    assert names[:3] == ['Convolution_c1_bn_relu', 'Convolution_c2_bn_sum_relu',
                         'Convolution_c3']
    assert not any(s.kind == 'BatchNorm' for s in plan.steps)
    assert 'r3_output = Activation_r3(c3_output)' in plan.source    # c3 feeds two readers


def test_fused_inference_equals_unfused_and_follows_parameter_changes(monkeypatch):
    exe = _bound()
    fused = exe.forward()[0].asnumpy().copy()
    np.testing.assert_allclose(fused, _unfused(exe, monkeypatch), rtol=1e-4, atol=1e-5)
    exe.arg_dict['c1_weight'][:] *= 2                 # in place: the folded weights must follow
    exe.aux_dict['bn2_moving_var'][:] = 4.0
    changed = exe.forward()[0].asnumpy().copy()
    assert not np.allclose(changed, fused)
    np.testing.assert_allclose(changed, _unfused(exe, monkeypatch), rtol=1e-4, atol=1e-5)


def test_three_d_convolution_chains_fuse_and_match(monkeypatch):
    data = mx.sym.Variable('data')
    x = mx.sym.Convolution(data, kernel=(3, 3, 3), pad=(1, 1, 1), num_filter=6, name='c1')
    x = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, name='bn1'), act_type='relu')
    y = mx.sym.Convolution(x, kernel=(1, 3, 3), stride=(1, 2, 2), pad=(0, 1, 1),
                           num_filter=6, no_bias=True, name='c2')
    skip = mx.sym.Convolution(x, kernel=(1, 1, 1), stride=(1, 2, 2), num_filter=6, name='c3')
    z = mx.sym.Activation(mx.sym.BatchNorm(y, name='bn2') + skip, act_type='relu')
    out = mx.sym.Pooling(z, global_pool=True, kernel=(1, 1, 1), pool_type='avg')
    exe = out.simple_bind(mx.cpu(), grad_req='null', data=(2, 3, 4, 6, 6))
    rng = np.random.RandomState(1)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if 'var' in name else rng.randn(*arr.shape)
    names = [s.fn_name for s in fusion.optimize_for_inference(exe._plan).steps]
    assert 'Convolution_c1_bn_relu' in names and not any('BatchNorm' in n for n in names)
    fused = exe.forward()[0].asnumpy().copy()
    np.testing.assert_allclose(fused, _unfused(exe, monkeypatch), rtol=1e-4, atol=1e-4)


def test_clip_after_a_convolution_is_its_post_operation(monkeypatch):
    data = mx.sym.Variable('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name='c1')
    x = mx.sym.clip(mx.sym.BatchNorm(x, name='bn1'), 0, 6)           # ReLU6
    y = mx.sym.Convolution(x, kernel=(1, 1), num_filter=4, name='c2') + x
    out = mx.sym.clip(y, -0.5, 0.25)                                    # after a sum
    exe = out.simple_bind(mx.cpu(), grad_req='null', data=(2, 3, 5, 5))
    rng = np.random.RandomState(2)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if 'var' in name else rng.randn(*arr.shape)
    names = [s.fn_name for s in fusion.optimize_for_inference(exe._plan).steps]
    assert names == ['Convolution_c1_bn_clip', 'Convolution_c2_sum_clip']
    fused = exe.forward()[0].asnumpy().copy()
    assert fused.min() == -0.5 and fused.max() == 0.25
    np.testing.assert_allclose(fused, _unfused(exe, monkeypatch), rtol=1e-5, atol=1e-5)


def test_values_of_parameters_alone_are_kept_while_they_do_not_change():
    data, w1, w2 = (mx.sym.Variable(n) for n in ('data', 'w1', 'w2'))
    weight = mx.sym.Concat(mx.sym.transpose(w1), w2, dim=0, name='cat')   # parameters only
    out = mx.sym.FullyConnected(data * 2, weight, no_bias=True, num_hidden=5, name='fc')
    exe = out.simple_bind(mx.cpu(), grad_req='null', data=(2, 3), w1=(3, 2), w2=(3, 3))
    rng = np.random.RandomState(3)
    values = {n: rng.randn(*a.shape) for n, a in exe.arg_dict.items()}
    for n, arr in exe.arg_dict.items():
        arr[:] = values[n]

    def expected():
        w = np.concatenate([values['w1'].T, values['w2']])
        return (values['data'] * 2) @ w.T
    for _ in range(3):
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), expected(), rtol=1e-5)
    plan = fusion.optimize_for_inference(exe._plan)
    assert [s.fn_name for s in plan.steps if s.inputs[-2:] == ['w1', 'w2']] == ['Concat_cat']
    scaled = [s.fn_name for s in plan.steps if s.inputs == ['data', 'data']]
    forward, namespace = plan.compile(False, 'cpu')
    tensors = [a._tensor for a in exe.arg_arrays]
    for k in range(2):
        tensors[0].add_(k)                        # new data each call
        forward(*tensors)
    assert namespace['Concat_cat'].state == 'kept'
    assert [namespace[n].state for n in scaled] == ['volatile']
    values['w2'][1, 2] = 7.0                         # in place: the kept value follows
    exe.arg_dict['w2'][1, 2] = 7.0
    values['data'] = rng.randn(2, 3)
    exe.arg_dict['data'][:] = values['data']
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), expected(), rtol=1e-5)


def test_training_and_gradients_use_the_unfused_graph():
    exe = _net().simple_bind(mx.cpu(), data=(2, 3, 6, 6))
    for arr in exe.arg_arrays:
        arr[:] = np.random.rand(*arr.shape)
    exe.aux_dict['bn1_moving_var'][:] = 1
    exe.aux_dict['bn2_moving_var'][:] = 1
    exe.forward(is_train=False)
    exe.backward(mx.nd.ones((2, 3)))
    assert np.abs(exe.grad_dict['bn1_gamma'].asnumpy()).sum() > 0


@pytest.mark.parametrize('model', ['lenet_bn', 'resnet_tiny'])
def test_golden_inference_with_fusion(golden, model):
    folder = golden / 'checkpoints'
    exp = np.load(folder / ('%s-expected.npz' % model))
    sym, arg, aux = mx.model.load_checkpoint(str(folder / model), 3)
    exe = sym.simple_bind(mx.cpu(), grad_req='null', data=exp['input/data'].shape)
    exe.copy_params_from(arg, aux)
    exe.arg_dict['data'][:] = exp['input/data']
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), exp['eval_out/softmax_output'],
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('pool_type', ['avg', 'max', 'sum'])
def test_global_pooling_after_a_fused_convolution(monkeypatch, pool_type):
    data = mx.sym.Variable('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=6, name='c1')
    out = mx.sym.Pooling(x, global_pool=True, kernel=(1, 1), pool_type=pool_type)
    exe = out.simple_bind(mx.cpu(), grad_req='null', data=(2, 3, 5, 4))
    rng = np.random.RandomState(4)
    for arr in exe.arg_arrays:
        arr[:] = rng.randn(*arr.shape)
    got = exe.forward()[0].asnumpy().copy()
    conv = _unfused(exe, monkeypatch)       # the pooled values of the unfused graph
    assert got.shape == (2, 6, 1, 1)
    np.testing.assert_allclose(got, conv, rtol=1e-5, atol=1e-5)


def test_batch_norm_without_a_convolution_is_one_affine_step(monkeypatch):
    data = mx.sym.Variable('data')
    x = mx.sym.Activation(mx.sym.BatchNorm(data, fix_gamma=False, name='bn1'), act_type='relu')
    x = mx.sym.clip(mx.sym.BatchNorm(x, name='bn2'), 0, 0.5)
    out = mx.sym.BatchNorm(x, fix_gamma=False, name='bn3') + x
    exe = out.simple_bind(mx.cpu(), grad_req='null', data=(2, 3, 4, 4))
    rng = np.random.RandomState(5)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if 'var' in name else rng.randn(*arr.shape)
    names = [s.fn_name for s in fusion.optimize_for_inference(exe._plan).steps]
    assert names[:3] == ['BatchNorm_bn1_relu', 'BatchNorm_bn2_clip', 'BatchNorm_bn3']
    fused = exe.forward()[0].asnumpy().copy()
    np.testing.assert_allclose(fused, _unfused(exe, monkeypatch), rtol=1e-5, atol=1e-5)
    exe.aux_dict['bn2_moving_mean'][:] = 0.25         # in place: scale and shift follow
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), _unfused(exe, monkeypatch),
                               rtol=1e-5, atol=1e-5)


def test_transposed_convolutions_run_on_onednn_and_follow_weight_changes(monkeypatch):
    data = mx.sym.Variable('data')
    x = mx.sym.Deconvolution(data, kernel=(4, 4), stride=(2, 2), pad=(1, 1), adj=(1, 0),
                             num_filter=5, no_bias=False, name='d1')
    x = mx.sym.Activation(mx.sym.BatchNorm(x, name='bn'), act_type='relu')
    out = mx.sym.Deconvolution(x, kernel=(3, 3), stride=(2, 2), num_filter=3, name='d2')
    exe = out.simple_bind(mx.cpu(), grad_req='null', data=(2, 4, 5, 6))
    rng = np.random.RandomState(3)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if 'var' in name else rng.randn(*arr.shape)
    calls = []
    eager = fusion._EAGER
    monkeypatch.setattr(fusion, '_EAGER', eager[:2] + (
        lambda *args: calls.append(args[0].shape) or eager[2](*args),))
    fused = exe.forward()[0].asnumpy().copy()
    assert fused.shape == (2, 3, 23, 25)
    if fusion._onednn_transposed_available():
        assert calls == [(2, 4, 5, 6), (2, 5, 11, 12)]
    # an independent reference: torch's transposed convolution on the unfused graph's pieces
    import torch
    import torch.nn.functional as F
    args = {k: torch.tensor(v.asnumpy()) for k, v in exe.arg_dict.items()}
    aux = {k: torch.tensor(v.asnumpy()) for k, v in exe.aux_dict.items()}
    y = F.conv_transpose2d(args['data'], args['d1_weight'], args['d1_bias'], 2, 1, (1, 0))
    y = F.batch_norm(y, aux['bn_moving_mean'], aux['bn_moving_var'], None, args['bn_beta'],
                     eps=1e-3).relu()                                       # fix_gamma
    y = F.conv_transpose2d(y, args['d2_weight'], None, 2)          # no_bias by default
    np.testing.assert_allclose(fused, y.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(fused, _unfused(exe, monkeypatch), rtol=1e-5, atol=1e-5)
    exe.arg_dict['d2_weight'][:] *= -1                 # the packed weight must follow
    changed = exe.forward()[0].asnumpy()
    np.testing.assert_allclose(changed, _unfused(exe, monkeypatch), rtol=1e-5, atol=1e-5)
    assert not np.allclose(changed, fused)
