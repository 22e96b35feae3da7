"""group2ctx placement (MXNet's PlaceDevice): arrays of a ctx_group live on the group's
context; ungrouped operators follow their first placed input, ungrouped variables their first
placed consumer; values cross contexts by copies."""
import numpy as np
import pytest

import mxtorch as mx


def _net():
    with mx.AttrScope(ctx_group='s1'):
        a = mx.sym.var('a')
        b = mx.sym.sin(a)
    with mx.AttrScope(ctx_group='s2'):
        c = mx.sym.cos(b, name='c')
    return c + mx.sym.var('z')


def test_simple_bind_places_arrays_by_group():
    g2c = {'s1': mx.cpu(1), 's2': mx.cpu(2)}
    exe = _net().simple_bind(mx.cpu(0), group2ctx=g2c, a=(2, 2))
    assert [x.context for x in exe.arg_arrays] == [mx.cpu(1), mx.cpu(2)]
    assert [x.context for x in exe.grad_arrays] == [mx.cpu(1), mx.cpu(2)]
    assert exe.outputs[0].context == mx.cpu(2)          # the '+' follows cos
    x = np.random.rand(2, 2).astype('float32')
    out = exe.forward(is_train=True, a=x, z=np.ones((2, 2), 'float32'))[0]
    np.testing.assert_allclose(out.asnumpy(), np.cos(np.sin(x)) + 1, rtol=1e-6)
    exe.backward(mx.nd.ones((2, 2)))
    np.testing.assert_allclose(exe.grad_dict['a'].asnumpy(),
                               -np.sin(np.sin(x)) * np.cos(x), rtol=1e-5)


def test_without_group2ctx_everything_uses_the_executor_context():
    exe = _net().simple_bind(mx.cpu(3), a=(2, 2))
    assert {x.context for x in exe.arg_arrays + exe.outputs} == {mx.cpu(3)}


def test_unknown_group_is_an_error():
    with pytest.raises(Exception, match='device assignment not found for group s2'):
        _net().simple_bind(mx.cpu(0), group2ctx={'s1': mx.cpu(1)}, a=(2, 2))


@pytest.mark.skipif(not mx.context.num_gpus(), reason='needs a CUDA device')
def test_head_gradient_given_on_another_device_than_its_output():
    """A group2ctx graph whose output lives on the GPU takes a head gradient made on the CPU
    (MXNet copies it across), and the CPU-placed argument gets the right gradient."""
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    with mx.AttrScope(ctx_group='dev1'):
        x = a * 3
    with mx.AttrScope(ctx_group='dev2'):
        y = x + b
    exe = y.simple_bind(mx.cpu(), group2ctx={'dev1': mx.cpu(), 'dev2': mx.gpu(0)},
                        a=(2, 3), b=(2, 3))
    exe.arg_dict['a'][:] = 1
    exe.forward(is_train=True)
    assert exe.outputs[0].context == mx.gpu(0)
    exe.backward(mx.nd.full((2, 3), 2, ctx=mx.cpu()))
    np.testing.assert_allclose(exe.grad_dict['a'].asnumpy(), np.full((2, 3), 6.0))
    np.testing.assert_allclose(exe.grad_dict['b'].asnumpy(), np.full((2, 3), 2.0))
