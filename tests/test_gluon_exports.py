"""Models exported by GluonCV / GluonNLP with the real MXNet 1.9.1 (HybridBlock.export) load with
mx.model.load_checkpoint, bind in a Module and give MXNet's outputs.

tests/fixtures/gluon_exports/ holds, per model, the exported -symbol.json and MXNet's inputs and
outputs for parameters filled by gen_gluoncv_exports.fill_params (made again here, so that no
.params file need be committed): tiny BERT (with pooler), a Transformer encoder, a 2-layer LSTM
language model, CIFAR ResNet-20, and the YOLOv3 and SSD MobileNet-0.25 VOC detectors."""
import os
import sys

import numpy as np
import pytest

import mxtorch as mx

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, 'fixtures', 'gluon_exports')
sys.path.insert(0, os.path.join(HERE, 'fixtures'))
import gen_gluoncv_exports as gen  # noqa: E402

MODELS = sorted(f[:-len('-symbol.json')] for f in os.listdir(FIXTURES)
                if f.endswith('-symbol.json'))


def test_fixtures_present():
    assert len(MODELS) == 6


@pytest.mark.parametrize('name', MODELS)
def test_export_loads_and_matches_mxnet(name, tmp_path):
    io = np.load(os.path.join(FIXTURES, name + '-io.npz'))
    inputs = [io['in%d' % i] for i in range(sum(k.startswith('in') for k in io.files))]
    expected = [io['out%d' % i] for i in range(sum(k.startswith('out') for k in io.files))]

    symbol = mx.sym.load(os.path.join(FIXTURES, name + '-symbol.json'))
    data_names = ['data'] if len(inputs) == 1 else ['data%d' % i for i in range(len(inputs))]
    arg_shapes, _, aux_shapes = symbol.infer_shape(
        **{n: x.shape for n, x in zip(data_names, inputs)})
    shapes = dict(zip(symbol.list_arguments(), arg_shapes))
    shapes.update(zip(symbol.list_auxiliary_states(), aux_shapes))
    for n in data_names:
        del shapes[n]
    filled = gen.fill_params(shapes)
    aux_names = set(symbol.list_auxiliary_states())
    prefix = str(tmp_path / name)
    symbol.save(prefix + '-symbol.json')
    mx.nd.save(prefix + '-0000.params',
               {('aux:' if k in aux_names else 'arg:') + k: mx.nd.array(v)
                for k, v in filled.items()})

    sym, args, auxs = mx.model.load_checkpoint(prefix, 0)
    assert sorted(n for n in sym.list_arguments() if n not in args) == sorted(data_names)
    mod = mx.mod.Module(sym, data_names=data_names, label_names=None)
    mod.bind([(n, x.shape) for n, x in zip(data_names, inputs)], for_training=False)
    mod.set_params(args, auxs)
    mod.forward(mx.io.DataBatch([mx.nd.array(x) for x in inputs]), is_train=False)
    got = [o.asnumpy() for o in mod.get_outputs()]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g.shape == e.shape
        scale = max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * scale)
