"""What MXNet-era toolkits (GluonCV, GluonNLP, InsightFace, d2l) need from mxnet beyond the
core API: a 1.x version string, mx.registry, DataLoader's worker-pool protocol, and imports
that do not take mxtorch's own PyTorch for a PyTorch front end."""
import os
import subprocess
import sys
import warnings
from multiprocessing.pool import ThreadPool

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import registry
from mxtorch.gluon.data import dataloader as dl

from conftest import ROOT


def test_version_is_the_mxnet_release_implemented():
    major, minor = (int(v) for v in mx.__version__.split('.')[:2])
    assert (major, minor) == (1, 9)


class _Base:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def test_registry_register_alias_create():
    class Base(_Base):
        pass

    class Thing(Base):
        pass
    register = registry.get_register_func(Base, 'thing')
    create = registry.get_create_func(Base, 'thing')
    alias = registry.get_alias_func(Base, 'thing')
    assert register(Thing) is Thing
    alias('x', 'Y')(Thing)
    assert registry.get_registry(Base) == {'thing': Thing, 'x': Thing, 'y': Thing}
    registry.get_registry(Base).clear()                     # a copy
    assert 'x' in registry.get_registry(Base)
    with pytest.warns(UserWarning, match='overriding'):
        register(Thing, 'x')
    made = create('THING', 1, k=2)
    assert isinstance(made, Thing) and made.args == (1,) and made.kwargs == {'k': 2}
    assert create(thing='y', k=3).kwargs == {'k': 3}
    assert create('["x", {"k": 4}]').kwargs == {'k': 4}
    assert create('{"thing": "x", "k": 5}').kwargs == {'k': 5}
    assert create(made) is made


@pytest.mark.parametrize('call, message', [
    (lambda reg, create: create('zz'), 'zz is not registered. Please register with '
                                       'thing.register first'),
    (lambda reg, create: create(5), 'thing must be of string type'),
    (lambda reg, create: reg(int), 'Can only register subclass of'),
    (lambda reg, create: create(create('t'), 1), 'already an instance'),
])
def test_registry_errors(call, message):
    class Base2(_Base):
        pass

    class T(Base2):
        pass
    reg = registry.get_register_func(Base2, 'thing')
    create = registry.get_create_func(Base2, 'thing')
    reg(T)
    with pytest.raises(AssertionError, match=message):
        call(reg, create)


def _batches(pool, worker_fn, dataset, prefetch):
    sampler = mx.gluon.data.BatchSampler(mx.gluon.data.SequentialSampler(7), 3, 'keep')
    it = dl._MultiWorkerIter(pool, dl.default_batchify_fn, sampler, worker_fn=worker_fn,
                             prefetch=prefetch, dataset=dataset)
    assert len(it) == 3 and iter(it) is it
    return [b.asnumpy().tolist() for b in it]


def test_multi_worker_iter_thread_and_pickled_results():
    data = np.arange(14, dtype='float32').reshape(7, 2)
    expected = [data[:3].tolist(), data[3:6].tolist(), data[6:].tolist()]
    with ThreadPool(2) as pool:
        assert _batches(pool, dl._thread_worker_fn, data, 2) == expected
    # a process pool's protocol: the dataset set by the initializer, batches come back pickled
    with ThreadPool(2, initializer=dl._worker_initializer, initargs=[data]) as pool:
        assert _batches(pool, dl._worker_fn, None, 0) == expected


class _SubclassedIter(dl._MultiWorkerIter):
    """As toolkits subclass it: _push_next overridden on the inherited fields."""

    def _push_next(self):
        r = next(self._iter, None)
        if r is not None:
            self._data_buffer[self._sent_idx] = self._worker_pool.apply_async(
                self._worker_fn, (r, self._batchify_fn, self._dataset))
            self._sent_idx += 1


def test_multi_worker_iter_subclass():
    with ThreadPool(1) as pool:
        sampler = mx.gluon.data.BatchSampler(mx.gluon.data.SequentialSampler(4), 2, 'keep')
        it = _SubclassedIter(pool, dl.default_batchify_fn, sampler,
                             worker_fn=dl._thread_worker_fn, dataset=np.arange(4))
        assert [b.asnumpy().tolist() for b in it] == [[0, 1], [2, 3]]


def test_toolkit_probing_for_a_pytorch_front_end_gets_mxnet_alone(tmp_path):
    # a package laid out as GluonCV 0.10 is: check.py refuses torch 2.x with a RuntimeError
    pkg = tmp_path / 'gluoncv'
    pkg.mkdir()
    (pkg / 'check.py').write_text(
        'def _require_pytorch_version(lo, hi):\n'
        '    raise RuntimeError("Legacy torch detected")\n')
    (pkg / '__init__.py').write_text(
        'from .check import _require_pytorch_version\n'
        'try:\n'
        '    _require_pytorch_version("1.4.0", "2.0.0")\n'
        '    FRONT = "torch"\n'
        'except ImportError:\n'
        '    FRONT = "mxnet"\n')
    script = tmp_path / 'use.py'
    script.write_text('import mxnet\nimport gluoncv\nprint(gluoncv.FRONT)\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    proc = subprocess.run([sys.executable, '-m', 'mxtorch', 'run', str(script)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == 'mxnet'
    # without the alias nothing is patched
    proc = subprocess.run([sys.executable, '-c', 'import gluoncv.check as c\n'
                           'c._require_pytorch_version(1, 2)'], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert 'RuntimeError: Legacy torch' in proc.stderr


def test_operator_attr_values_become_strings():
    # GluonCV's FeatureExpander: attr={'__init__': mx.init.Xavier(...)} on an operator symbol
    init = mx.init.Xavier(magnitude=2)
    y = mx.sym.Convolution(mx.sym.var('data'), num_filter=4, kernel=(1, 1), no_bias=True,
                           name='c', attr={'__init__': init})
    attrs = y.attr_dict()
    assert attrs['c']['__init__'] == str(init)
    assert attrs['c_weight']['__init__'] == str(init)
    block = mx.gluon.SymbolBlock(mx.sym.Activation(y, act_type='relu'), [mx.sym.var('data')])
    block.initialize()
    assert block(mx.nd.ones((1, 3, 2, 2))).shape == (1, 4, 2, 2)


def test_one_element_asnumpy_converts_to_a_scalar_under_the_alias():
    # d2l's MXNet chapters: print('loss %f' % train_l.mean().asnumpy()), a (1,)-shaped array
    from mxtorch import compat
    loss = mx.nd.array([0.25, 0.75]).mean()
    assert isinstance(loss.asnumpy(), np.ndarray)
    compat.install()
    try:
        with pytest.warns(FutureWarning, match='one-element array'):
            assert '%.3f' % loss.asnumpy() == '0.500'
        assert float(loss.asnumpy()) == 0.5 and int(mx.nd.array([3.0]).asnumpy()) == 3
        assert '%d' % mx.nd.array([7]).asnumpy() == '7'
        arr = mx.nd.array([[1.0, 2.0]]).asnumpy()
        assert type(arr) is np.ndarray                     # larger results stay plain ndarrays
        import pickle
        assert type(pickle.loads(pickle.dumps(loss.asnumpy()))) is np.ndarray
        np.testing.assert_array_equal(loss.asnumpy(), [0.5])
    finally:
        compat.uninstall()
    assert type(loss.asnumpy()) is np.ndarray


@pytest.mark.parametrize('hybrid', [False, True])
def test_fix_gamma_batchnorm_writes_a_zero_gamma_gradient(hybrid):
    # GluonCV's SSD FeatureExpander: mx.sym.BatchNorm (fix_gamma=True) inside a SymbolBlock;
    # MXNet writes gamma's zero gradient, so Trainer.step finds it fresh
    data = mx.sym.var('data')
    net = mx.sym.BatchNorm(mx.sym.Convolution(data, num_filter=2, kernel=(1, 1), name='c'),
                           name='bn')
    block = mx.gluon.SymbolBlock(net, [data])
    block.initialize()
    if hybrid:
        block.hybridize()
    with mx.autograd.record():
        loss = (block(mx.nd.ones((2, 3, 2, 2))) ** 2).sum()
    loss.backward()
    gamma = block.collect_params()['bn_gamma']
    assert gamma.grad().asnumpy().tolist() == [0.0, 0.0]
    mx.gluon.Trainer(block.collect_params(), 'sgd', {'learning_rate': 0.1}).step(1)
    # imperative: the same
    g = mx.nd.array([3.0, 3.0])
    g.attach_grad()
    with mx.autograd.record():
        y = mx.nd.BatchNorm(mx.nd.ones((2, 2, 1, 1)), g, mx.nd.zeros(2), mx.nd.zeros(2),
                            mx.nd.ones(2), fix_gamma=True)
    y.backward()
    assert g._fresh_grad and g.grad.asnumpy().tolist() == [0.0, 0.0]
    np.testing.assert_allclose(y.asnumpy().ravel(), 0.0, atol=1e-6)
