"""Bind-time graph passes and symbol introspection, with MXNet 1.9.1's results as constants:
common-subexpression elimination, non-differentiable operators, debug_str's memory line,
get_children of groups, atomic symbols, and the JSON flag of NumPy-shape semantics."""
import json
import re

import numpy as np
import pytest

import mxtorch as mx


def _internals(sym, env, monkeypatch, **shapes):
    monkeypatch.setenv('MXNET_ELIMINATE_COMMON_EXPR', env)
    exe = sym.simple_bind(mx.cpu(), **shapes)
    opt = exe.get_optimized_symbol()
    return opt.get_internals().list_outputs(), opt.list_outputs(), exe


def test_cse_merges_repeated_subexpressions(monkeypatch):
    a, b = mx.sym.var('a'), mx.sym.var('b')
    d = a + 1
    sym = mx.sym.Group([a * d + b, a * d + b])
    names, outs, _ = _internals(sym, '0', monkeypatch, a=(2, 2), b=(2, 2))
    assert len(names) == 7
    names, outs, exe = _internals(sym, '1', monkeypatch, a=(2, 2), b=(2, 2))
    assert len(names) == 6 and outs[1] == outs[0].replace('_output', '_0_copy_output')
    x, y = np.random.rand(2, 2).astype('float32'), np.random.rand(2, 2).astype('float32')
    res = exe.forward(is_train=True, a=x, b=y)
    exe.backward([mx.nd.ones((2, 2)), mx.nd.ones((2, 2))])
    for r in res:
        np.testing.assert_allclose(r.asnumpy(), x * (x + 1) + y, rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict['a'].asnumpy(), 2 * (2 * x + 1), rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict['b'].asnumpy(), 2 * np.ones((2, 2)))


def test_cse_keeps_random_and_creation_ops(monkeypatch):
    a = mx.sym.var('a')
    for sym, shapes in ((mx.sym.Dropout(a) + mx.sym.Dropout(a), {'a': (2, 2)}),
                        (mx.sym.uniform(shape=(2, 2)) + mx.sym.uniform(shape=(2, 2)), {}),
                        (mx.sym.zeros(shape=(2, 2)) + mx.sym.zeros(shape=(2, 2)), {})):
        assert len(_internals(sym, '1', monkeypatch, **shapes)[0]) == \
            len(sym.get_internals().list_outputs())
    # three equal heads: each later one becomes a copy of the one before (MXNet's names)
    group = mx.sym.Group([mx.sym.sin(a, name='s%d' % i) for i in range(3)])
    assert _internals(group, '1', monkeypatch, a=(2, 2))[1] == \
        ['s0_output', 's0_0_copy_output', 's0_0_copy_0_copy_output']
    # outputs that were one value already stay one
    x = a * 2
    outs = _internals(mx.sym.Group([x, x]), '1', monkeypatch, a=(2, 2))[1]
    assert outs == [x.list_outputs()[0]] * 2


def test_non_differentiable_op_fails_at_bind_when_a_gradient_is_needed():
    x, idx = mx.sym.var('x'), mx.sym.var('idx')
    y = mx.sym.batch_take(x, idx)
    types = {'x': np.float32, 'idx': np.int32}
    with pytest.raises(mx.MXNetError, match='batch_take is non-differentiable'):
        y.simple_bind(mx.cpu(), x=(10, 10), idx=(10,), type_dict=types)
    exe = mx.sym.stop_gradient(y).simple_bind(mx.cpu(), x=(10, 10), idx=(10,), type_dict=types)
    exe.forward()
    exe.backward()
    assert (exe.grad_dict['x'].asnumpy() == 0).all()
    y.simple_bind(mx.cpu(), x=(10, 10), idx=(10,), type_dict=types, grad_req='null')


def test_debug_str_memory_counts_what_backward_keeps():
    data = mx.sym.var('data')
    for _ in range(10):
        data = data * data

    def total(sym, **kw):
        exe = sym.simple_bind(mx.cpu(), data=(10, 3, 256, 256), **kw)
        return int(re.search(r'Total (\d+) MB allocated', exe.debug_str()).group(1))
    big, small1 = total(data), total(data, grad_req='null')
    small2 = total(mx.sym.stop_gradient(data))
    assert small1 == small2 == 15 and big > 80     # MXNet 1.9.1: 90, 15, 15


def test_get_children_lists_each_node_once():
    a, b = mx.sym.var('a'), mx.sym.var('b')
    s = mx.sym.SliceChannel(a, num_outputs=2)
    assert mx.sym.Group([s[1], s[0]]).get_children().list_outputs() == ['a']
    assert mx.sym.Group([s[1], a + b]).get_children().list_outputs() == ['a', 'a', 'b']
    assert mx.sym.Group([a + b, a + b]).get_children().list_outputs() == ['a', 'b', 'a', 'b']


def test_gen_atomic_symbol():
    fc = mx.sym.FullyConnected(mx.sym.var('a'), num_hidden=3, name='fc', lr_mult=2)
    atom = fc._gen_atomic_symbol()
    assert (atom.name, atom.list_arguments(), atom.list_outputs()) == ('', [], ['output'])
    assert atom.list_attr() == {'num_hidden': '3'}
    rnn = mx.sym.RNN(mx.sym.var('d'), mx.sym.var('p'), mx.sym.var('h0'), mx.sym.var('h1'),
                     state_size=10, num_layers=2, bidirectional=True, state_outputs=True,
                     mode='lstm')
    assert len(rnn._gen_atomic_symbol().list_outputs()) == 3


def test_json_marks_numpy_shape_semantics():
    net = mx.sym.FullyConnected(mx.sym.var('data'), mx.sym.var('weight', shape=(128, 0)),
                                num_hidden=128)
    assert json.loads(net.tojson())['attrs'] == {'mxnet_version': ['int', 10901]}
    with mx.np_shape(True):
        assert json.loads(net.tojson())['attrs'] == {'is_np_shape': ['int', 1],
                                                    'mxnet_version': ['int', 10901]}
        args, outs, _ = mx.sym.load_json(net.tojson()).infer_shape(data=(10, 5))
    assert args[1] == (128, 5) and outs == [(10, 128)]
