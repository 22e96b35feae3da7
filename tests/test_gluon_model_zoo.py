"""gluon.model_zoo.vision: parameter names, order and shapes equal MXNet 1.9.1's (fixture made
with the reference), get_model errors, pretrained weights offline."""
import json
import os

import pytest

import mxtorch as mx
from mxtorch.gluon.model_zoo import model_store
from mxtorch.gluon.model_zoo.vision import get_model

FIXTURE = os.path.join(os.path.dirname(__file__), 'fixtures', 'gluon_model_zoo_params.json')
with open(FIXTURE) as _f:
    REFERENCE = json.load(_f)


@pytest.mark.parametrize('name', sorted(REFERENCE))
def test_parameter_names_and_shapes_as_mxnet(name):
    with mx.name.NameManager():          # fresh counters: 'resnetv10_', as in a new process
        net = get_model(name)
    net.initialize()
    size = 299 if 'inception' in name else 224
    net.hybridize()
    out = net(mx.nd.zeros((1, 3, size, size)))
    assert out.shape == (1, 1000)
    # the reference was made in one process: its top-level counters ('resnetv21_') differ
    ref_prefix = REFERENCE[name][0][0].split('_')[0] + '_'
    assert ref_prefix.rstrip('0123456789_') == net.prefix.rstrip('0123456789_')
    got = [[k[len(net.prefix):], list(v.shape)] for k, v in net.collect_params().items()]
    assert got == [[k[len(ref_prefix):], shape] for k, shape in REFERENCE[name]]


def test_get_model_rejects_unknown_names():
    with pytest.raises(ValueError, match='Model foo is not supported'):
        get_model('foo')
    net = get_model('ResNet18_V1', classes=10)
    assert net.output._units == 10


def test_pretrained_offline_names_the_file(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise OSError('no network')
    monkeypatch.setattr(model_store, 'download', no_network)
    with pytest.raises(RuntimeError, match=r'squeezenet1\.1-33ba0f93\.params'):
        get_model('squeezenet1.1', pretrained=True, root=str(tmp_path))
    assert not os.listdir(str(tmp_path))
