"""Python operators (mx.operator.CustomOp/CustomOpProp through mx.sym.Custom and mx.nd.Custom)
against MXNet 1.9.1 (tests/fixtures/custom_op.npz, made by gen_custom_op.py), plus auxiliary
states, mx.autograd, Module training and the errors."""
import json

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError

from conftest import FIXTURES
from custom_op_defs import define, networks

define(mx)
FIXTURE = np.load(FIXTURES / 'custom_op.npz')
META = json.loads(str(FIXTURE['meta']))


def _entries(prefix):
    return {k[len(prefix):]: FIXTURE[k] for k in FIXTURE.files if k.startswith(prefix)}


@pytest.mark.parametrize('name', sorted(META['networks']))
def test_network_matches_mxnet(name):
    sym = networks(mx)[name]
    want = META['networks'][name]
    assert sym.list_arguments() == want['arguments']
    assert sym.list_outputs() == want['outputs']
    arg_shapes, out_shapes, _ = sym.infer_shape(data=(4, 5))
    assert [[list(s) for s in arg_shapes], [list(s) for s in out_shapes]] == want['infer_shape']
    args = _entries('%s.in.' % name)
    grads = {k: mx.nd.zeros(v.shape) for k, v in args.items() if not k.endswith('label')}
    exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()}, args_grad=grads,
                   grad_req={k: 'write' if k in grads else 'null' for k in args})
    outputs = exe.forward(is_train=True)
    heads = _entries('%s.head.' % name)
    exe.backward([mx.nd.array(heads[str(k)]) for k in range(len(heads))] if heads else None)
    for k, out in enumerate(outputs):
        np.testing.assert_allclose(out.asnumpy(), FIXTURE['%s.out.%d' % (name, k)],
                                   rtol=1e-5, atol=1e-6)
    for k, want_grad in _entries('%s.grad.' % name).items():
        np.testing.assert_allclose(grads[k].asnumpy(), want_grad, rtol=1e-5, atol=1e-6,
                                   err_msg='gradient of %s' % k)


class _Counter(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * 3)
        if is_train:
            aux[0][:] = aux[0] + 1

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 3)


@mx.operator.register('test_counter')
class _CounterProp(mx.operator.CustomOpProp):
    def list_auxiliary_states(self):
        return ['count']

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]], [(1,)]

    def create_operator(self, ctx, shapes, dtypes):
        return _Counter()


def test_auxiliary_states_and_imperative_autograd():
    sym = mx.sym.Custom(mx.sym.Variable('x'), op_type='test_counter', name='c')
    assert sym.list_auxiliary_states() == ['c_count']
    x = np.arange(6.0).reshape(2, 3)
    exe = sym.bind(mx.cpu(), {'x': mx.nd.array(x)}, args_grad={'x': mx.nd.zeros((2, 3))},
                   aux_states={'c_count': mx.nd.zeros(1)})
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)) * 2)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), 3 * x)
    np.testing.assert_array_equal(exe.grad_dict['x'].asnumpy(), np.full((2, 3), 6.0))
    exe.forward(is_train=False)
    np.testing.assert_array_equal(exe.aux_dict['c_count'].asnumpy(), [1])

    a = mx.nd.array(x)
    a.attach_grad()
    with mx.autograd.record():
        two = mx.nd.Custom(a, op_type='test_scale_square', factor=0.5)
        total = two[0] + two[1]
    total.backward()
    np.testing.assert_allclose(two[1].asnumpy(), x * x)
    np.testing.assert_allclose(a.grad.asnumpy(), 0.5 + 2 * x)


def test_module_trains_with_a_custom_loss():
    np.random.seed(1)
    x = np.random.randn(60, 4).astype('float32')
    y = (x[:, 0] > 0).astype('float32')
    fc = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')
    net = mx.sym.Custom(fc, mx.sym.Variable('softmax_label'), op_type='test_softmax',
                        name='softmax')
    it = mx.io.NDArrayIter(x, y, batch_size=20)
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.fit(it, num_epoch=15, optimizer='sgd', optimizer_params={'learning_rate': 0.1},
            initializer=mx.init.Xavier())
    assert mod.score(it, 'acc')[0][1] > 0.9


def test_errors_name_the_problem():
    with pytest.raises(MXNetError, match="op_type='no_such_op' is not registered"):
        mx.sym.Custom(mx.sym.Variable('x'), op_type='no_such_op')
    with pytest.raises(MXNetError, match='CustomOpProp subclass'):
        mx.operator.register('bad')(object)
    with pytest.raises(MXNetError, match='op_type'):
        mx.sym.Custom(mx.sym.Variable('x'))
