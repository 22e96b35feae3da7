"""mx.contrib.amp: the graph conversion (node names and casts as MXNet 1.9.1 writes them),
params cast by convert_model, the operator lists, init's casting wrappers (in a subprocess:
init patches mx.sym / mx.nd for the whole process) and dynamic loss scaling."""
import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.contrib import amp
from mxtorch.contrib.amp import LossScaler


def _nodes(sym):
    return [(n['op'], n['name'], n['inputs'])
            for n in json.loads(sym.tojson(remove_amp_cast=False))['nodes']]


def _net():
    fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=4, name='fc')
    sm = mx.sym.softmax(mx.sym.exp(fc, name='e'), name='sm')
    return mx.sym.broadcast_add(sm, fc, name='add')


def test_convert_symbol_matches_mxnet():
    # MXNet 1.9.1's converted graph of the same net
    assert _nodes(amp.convert_symbol(_net())) == [
        ('null', 'data', []), ('amp_cast', 'data_amp_cast_float16', [[0, 0, 0]]),
        ('null', 'fc_weight', []), ('amp_cast', 'fc_weight_amp_cast_float16', [[2, 0, 0]]),
        ('null', 'fc_bias', []), ('amp_cast', 'fc_bias_amp_cast_float16', [[4, 0, 0]]),
        ('FullyConnected', 'fc', [[1, 0, 0], [3, 0, 0], [5, 0, 0]]),
        ('amp_cast', 'fc_output_amp_cast_float32', [[6, 0, 0]]),
        ('exp', 'e', [[7, 0, 0]]), ('softmax', 'sm', [[8, 0, 0]]),
        ('broadcast_add', 'add', [[9, 0, 0], [7, 0, 0]])]
    # tojson drops the casts by default, as MXNet
    assert 'amp_cast' not in amp.convert_symbol(_net()).tojson()


def test_widest_and_conditional_and_excluded():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    w = mx.sym.broadcast_add(mx.sym.FullyConnected(x, num_hidden=2, name='f'), mx.sym.exp(y),
                             name='w')
    names = [n[1] for n in _nodes(amp.convert_symbol(w))]
    assert 'f_output_amp_cast_float32' in names and 'y_amp_cast_float32' not in names
    act = mx.sym.Activation(x, act_type='softrelu', name='act')
    assert [n[1] for n in _nodes(amp.convert_symbol(act))] == ['x', 'x_amp_cast_float32', 'act']
    assert [n[0] for n in _nodes(amp.convert_symbol(w, excluded_sym_names=['f']))].count(
        'amp_cast') == 0
    with pytest.raises(ValueError, match='excluded_sym_names'):
        amp.convert_symbol(w, excluded_sym_names='f')


def test_convert_model_casts_optional_params_and_runs():
    net = _net()
    params = {'fc_weight': mx.nd.ones((4, 3)), 'fc_bias': mx.nd.ones((4,))}
    sym, args, aux = amp.convert_model(net, params, {}, cast_optional_params=True)
    assert {k: v.dtype for k, v in args.items()} == {'fc_weight': np.float16,
                                                     'fc_bias': np.float16}
    sym, args, _ = amp.convert_model(net, params, {})
    assert {v.dtype for v in args.values()} == {np.float32}
    assert 'amp_cast' not in [n['op'] for n in json.loads(net.tojson())['nodes']]
    exe = sym.bind(mx.cpu(), dict(args, data=mx.nd.ones((2, 3))))
    out = exe.forward()[0]
    fc = np.full((2, 4), 4.0)
    np.testing.assert_allclose(out.asnumpy(), np.full((2, 4), 0.25) + fc, rtol=1e-3)


def test_lists():
    assert amp.list_lp16_ops('float16') == ['Convolution', 'Deconvolution', 'FullyConnected',
                                            'RNN']
    assert amp.list_lp16_ops(mx.base.bfloat16) == ['Convolution', 'FullyConnected']
    assert 'exp' in amp.list_fp32_ops('float16') and 'softmax' in amp.list_fp32_ops('float16')
    assert 'broadcast_add' in amp.list_widest_type_cast('float16')
    assert amp.list_conditional_fp32_ops('float16')[0] == ('Activation', 'act_type',
                                                           ['softrelu'])
    assert amp.list_loss_output_functions('float16')[0] == 'SoftmaxOutput'
    assert 'BatchNorm' in amp.list_lp16_use_fp32_params('bfloat16')
    lp16 = set(amp.list_lp16_fp32_ops('float16'))
    assert 'Activation' not in lp16 and 'FullyConnected' not in lp16 and 'relu' in lp16
    with pytest.raises(AssertionError):
        amp.list_lp16_ops('float64')


def test_init_wraps_the_operator_functions():
    code = textwrap.dedent('''
        import mxtorch as mx
        from mxtorch.contrib import amp
        amp.init()
        x = mx.nd.ones((2, 3))
        y = mx.nd.FullyConnected(x, mx.nd.ones((4, 3)), mx.nd.ones((4,)), num_hidden=4)
        z = mx.nd.exp(y)
        w = mx.nd.broadcast_add(y, z)
        s = mx.sym.FullyConnected(mx.sym.var('d'), num_hidden=2, name='fc')
        print(y.dtype.__name__, z.dtype.__name__, w.dtype.__name__,
              'amp_cast' in s.tojson(remove_amp_cast=False))
    ''')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ['float16', 'float32', 'float32', 'True']


class _Param:
    grad_req = 'write'

    def __init__(self, grad):
        self._g = grad

    def list_grad(self):
        return [self._g]


def test_loss_scaler_halves_on_overflow_and_doubles_after_clean_steps():
    s = LossScaler()
    assert s.loss_scale == 2. ** 16
    assert s.has_overflow([_Param(mx.nd.array([1.0, np.inf]))])
    assert not s.has_overflow([_Param(mx.nd.ones((2,)))])
    assert s.loss_scale == 2. ** 15           # the halving takes effect on the next step
    s._scale_seq_len = 3
    for _ in range(3):
        s.has_overflow([_Param(mx.nd.ones((2,)))])
    assert s.has_overflow([_Param(mx.nd.ones((2,)))]) is False and s.loss_scale == 2. ** 16


def test_init_trainer_refuses_a_bare_optimizer(monkeypatch):
    monkeypatch.setattr(amp.amp, '_amp_initialized', True)
    with pytest.raises(TypeError, match='Gluon Trainer'):
        amp.init_trainer(mx.optimizer.SGD())
