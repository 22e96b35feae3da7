"""HybridBlock.export() as MXNet 1.9.1 reads it: the files in tests/fixtures/gluon_export were
written by mxtorch and loaded by the real MXNet (SymbolBlock.imports and Module), whose outputs
are in reference.npz (tests/fixtures/gen_gluon_export.py made both). mxtorch must still write
the same files and compute the outputs MXNet computed from them."""
import importlib.util
import json

import numpy as np
import pytest

import mxtorch as mx
from conftest import FIXTURES

_SPEC = importlib.util.spec_from_file_location('gen_gluon_export',
                                               FIXTURES / 'gen_gluon_export.py')
gen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gen)
EXPORTS = FIXTURES / 'gluon_export'


@pytest.fixture(scope='module')
def reference():
    return dict(np.load(EXPORTS / 'reference.npz'))


def _outputs(ref, name, how):
    keys = sorted(k for k in ref if k.startswith('%s.%s.' % (name, how)))
    return [ref[k] for k in keys]


@pytest.mark.parametrize('name', gen.NETS)
def test_export_writes_the_files_mxnet_loaded(name, tmp_path, reference):
    net = gen.build(mx, name)
    x = gen.inputs(name)
    gen.fill(mx, net, x[0])
    net.hybridize()
    ys = net(*[mx.nd.array(a) for a in x])
    ys = ys if isinstance(ys, (list, tuple)) else [ys]
    expected = _outputs(reference, name, 'symbolblock')
    assert len(ys) == len(expected)
    for y, want in zip(ys, expected):
        np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-6)
    net.export(str(tmp_path / name))
    written = json.loads((tmp_path / ('%s-symbol.json' % name)).read_text())
    committed = json.loads((EXPORTS / ('%s-symbol.json' % name)).read_text())
    assert written['nodes'] == committed['nodes']
    assert written['heads'] == committed['heads']
    assert (tmp_path / ('%s-0000.params' % name)).read_bytes() == \
        (EXPORTS / ('%s-0000.params' % name)).read_bytes()


@pytest.mark.parametrize('name', gen.NETS)
def test_exported_files_give_mxnet_outputs(name, reference):
    prefix = str(EXPORTS / name)
    x = [mx.nd.array(a) for a in gen.inputs(name)]
    block = mx.gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data'],
                                         prefix + '-0000.params')
    ys = block(*x)
    ys = ys if isinstance(ys, (list, tuple)) else [ys]
    for y, want in zip(ys, _outputs(reference, name, 'symbolblock')):
        np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-6)
    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    mod = mx.mod.Module(sym, data_names=['data'], label_names=None)
    mod.bind(data_shapes=[('data', x[0].shape)], for_training=False)
    mod.set_params(args, auxs)
    mod.forward(mx.io.DataBatch(x), is_train=False)
    got = mod.get_outputs()
    expected = _outputs(reference, name, 'module')
    assert len(got) == len(expected)
    for y, want in zip(got, expected):
        np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_saved_files_take_the_umask_mode(tmp_path):
    import os
    mx.nd.save(str(tmp_path / 'a.params'), {'x': mx.nd.ones(2)})
    umask = os.umask(0)
    os.umask(umask)
    assert os.stat(tmp_path / 'a.params').st_mode & 0o777 == 0o666 & ~umask
