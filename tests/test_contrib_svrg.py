"""mx.contrib.svrg_optimization against numbers from MXNet 1.9.1."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.contrib.svrg_optimization import SVRGModule
from mxtorch.contrib.svrg_optimization.svrg_optimizer import _SVRGOptimizer


def _regression(rows, batch_size, **kwargs):
    x = (np.arange(2 * rows).reshape(rows, 2) % 7 + 1).astype(np.float32)
    it = mx.io.NDArrayIter(x, x.dot([1.0, 2.0]), batch_size=batch_size, shuffle=False,
                           label_name='lin_reg_label')
    fc = mx.sym.FullyConnected(mx.sym.var('data'), name='fc1', num_hidden=1)
    lro = mx.sym.LinearRegressionOutput(fc, mx.sym.var('lin_reg_label'), name='lro')
    mod = SVRGModule(lro, data_names=['data'], label_names=['lin_reg_label'], update_freq=2,
                     **kwargs)
    return it, mod


def test_svrg_steps_match_mxnet():
    it, mod = _regression(10, 5)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert mod._mod_aux.binded
    mod.init_params(initializer=mx.init.One())
    mod.init_optimizer(kvstore='local', optimizer='sgd', optimizer_params=(('learning_rate', 0.01),))
    assert type(mod._optimizer).__name__ == '_SVRGOptimizer'
    assert mod._optimizer.idx2name == {0: 'fc1_weight', 1: 'fc1_bias', 2: 'fc1_weight_full',
                                       3: 'fc1_bias_full'}
    for epoch in range(3):
        if epoch % mod.update_freq == 0:
            mod.update_full_grads(it)
            if epoch == 0:
                np.testing.assert_allclose(mod._param_dict[0]['fc1_weight'].asnumpy(),
                                           [[-81.5, -98.0]])
                np.testing.assert_allclose(mod._param_dict[0]['fc1_bias'].asnumpy(), [-20.0])
        it.reset()
        for batch in it:
            mod.forward_backward(batch)
            mod.update()
    args, _ = mod.get_params()
    np.testing.assert_allclose(args['fc1_weight'].asnumpy(), [[1.5128887, 1.6715221]], rtol=1e-5)
    np.testing.assert_allclose(args['fc1_bias'].asnumpy(), [0.13620675], rtol=1e-5)


def test_svrg_fit_on_two_devices_matches_mxnet():
    it, mod = _regression(20, 4, context=[mx.cpu(0), mx.cpu(1)])
    mse = mx.metric.create('mse')
    mod.fit(it, eval_metric=mse, optimizer='sgd', optimizer_params=(('learning_rate', 0.005),),
            num_epoch=3, kvstore='local', initializer=mx.init.One())
    args, _ = mod.get_params()
    np.testing.assert_allclose(args['fc1_weight'].asnumpy(), [[1.4309125, 1.6158783]], rtol=1e-5)
    np.testing.assert_allclose(args['fc1_bias'].asnumpy(), [0.1202944], rtol=1e-5)
    assert mse.get()[1] == pytest.approx(1.1974084, rel=1e-5)


def test_svrg_optimizer_routes_full_keys_to_assignment():
    opt = _SVRGOptimizer(default_optimizer='sgd', param_idx2name={0: 'w', 1: 'w_full'},
                         learning_rate=1.0)
    assert opt.default_opt.lr == 1.0
    kv = mx.kv.create('local')
    kv.set_optimizer(opt)
    kv.init(0, mx.nd.zeros(3))
    kv.push(0, mx.nd.ones(3))
    kv.init(1, mx.nd.ones(3))
    kv.push(1, mx.nd.full((3,), 2))
    out0, out1 = mx.nd.zeros(3), mx.nd.zeros(3)
    kv.pull(0, out0)
    kv.pull(1, out1)
    np.testing.assert_array_equal(out0.asnumpy(), [-1, -1, -1])     # sgd step
    np.testing.assert_array_equal(out1.asnumpy(), [2, 2, 2])        # assigned


def test_svrg_module_argument_errors():
    sym = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=1)
    with pytest.raises(TypeError, match='update_freq'):
        SVRGModule(sym, label_names=None, update_freq=None)
    with pytest.raises(ValueError, match='positive'):
        SVRGModule(sym, label_names=None, update_freq=0)
