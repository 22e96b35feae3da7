"""Symbol: naming, attributes, introspection, inference and MXNet's JSON format."""
import copy
import json
import pickle

import numpy as np
import pytest

import mxtorch as mx

GOLDEN_MODELS = ['mlp', 'lenet_bn', 'resnet_tiny', 'lstm_lm', 'mixed_ops', 'mixed_ops_nodrop']


def _fc(data, name=None, **kw):
    return mx.sym.FullyConnected(data, num_hidden=kw.pop('num_hidden', 3), name=name, **kw)


def test_automatic_names_follow_the_function_name():
    d = mx.sym.Variable('data')
    with mx.name.NameManager():
        a = mx.sym.FullyConnected(d, num_hidden=3)
        b = mx.sym.FullyConnected(a, num_hidden=3)
        names = [a.name, b.name, mx.sym.split(d, num_outputs=2).name, (a + 1).name,
                 (a * b).name, (2 ** a).name, (a ** 2).name, (-a).name, (a > 1).name]
    assert names == ['fullyconnected0', 'fullyconnected1', 'split0', '_plusscalar0', '_mul0',
                     '_rpower_scalar0', '_powerscalar0', '_mulscalar0', '_greater_scalar0']
    with mx.name.Prefix('p_'):
        assert _fc(d, name='x').name == 'p_x'
        assert mx.sym.Variable('v').name == 'v'


def test_missing_inputs_become_named_variables():
    f = mx.sym.FullyConnected(num_hidden=3, name='f')
    assert f.list_arguments() == ['f_data', 'f_weight', 'f_bias']
    assert _fc(mx.sym.Variable('x'), name='g', no_bias=True).list_arguments() == ['x', 'g_weight']
    bn = mx.sym.BatchNorm(mx.sym.Variable('x'), name='bn')
    assert bn.list_arguments() == ['x', 'bn_gamma', 'bn_beta']
    assert bn.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    assert bn.list_inputs() == ['x', 'bn_gamma', 'bn_beta', 'bn_moving_mean', 'bn_moving_var']
    attrs = bn.attr_dict()
    assert attrs['bn_moving_mean'] == {'__init__': '["zero", {}]'}
    assert attrs['bn_moving_var'] == {'__init__': '["one", {}]'}


def test_attributes_hidden_keys_and_scopes():
    d = mx.sym.Variable('data')
    fc = _fc(d, name='fc1', num_hidden=10, attr={'lr_mult': '2'})
    expect = {'num_hidden': '10', '__lr_mult__': '2', 'lr_mult': '2'}
    assert fc.attr_dict() == {'fc1_weight': expect, 'fc1_bias': expect, 'fc1': expect}
    assert fc.list_attr() == expect and fc.attr('lr_mult') == '2' and fc.attr('name') == 'fc1'
    with mx.AttrScope(ctx_group='dev1'):
        v = mx.sym.Variable('w')
        e = mx.sym.exp(v, name='e')
    both = {'__ctx_group__': 'dev1', 'ctx_group': 'dev1'}
    assert e.attr_dict() == {'w': both, 'e': both}
    n = mx.sym.Variable('n', shape=(1, 2), lr_mult=2, dtype='float16', init=mx.init.Xavier())
    assert n.attr_dict()['n'] == {
        '__init__': '["xavier", {"rnd_type": "uniform", "factor_type": "avg", "magnitude": 3}]',
        '__dtype__': '2', '__lr_mult__': '2', 'lr_mult': '2', '__shape__': '(1, 2)'}
    with pytest.raises(ValueError):
        mx.sym.Variable('x', foo='bar')
    with pytest.raises(ValueError):
        mx.AttrScope(x=1)
    fc._set_attr(num_hidden='4')
    assert fc.infer_shape(data=(2, 5))[1] == [(2, 4)]
    with pytest.raises(mx.MXNetError, match='Cannot find argument'):
        fc._set_attr(bogus='1')


def test_introspection():
    d = mx.sym.Variable('data')
    fc = _fc(d, name='fc1', num_hidden=10)
    e = mx.sym.exp(fc, name='e')
    g = mx.sym.Group([fc, e])
    assert (g.list_outputs(), g.name, repr(g), len(g)) == (
        ['fc1_output', 'e_output'], None, '<Symbol group [fc1, e]>', 2)
    assert fc.get_internals().list_outputs() == ['data', 'fc1_weight', 'fc1_bias', 'fc1_output']
    assert fc.get_children().list_outputs() == ['data', 'fc1_weight', 'fc1_bias']
    assert d.get_children() is None
    assert e.get_internals()['fc1_output'].list_outputs() == ['fc1_output']
    assert g[1].name == 'e' and g['e_output'].name == 'e' and len(g[0:1]) == 1
    with pytest.raises(ValueError, match='Cannot find output'):
        g['nope']
    with pytest.raises(IndexError):
        g[2]
    assert mx.sym.BatchNorm(d, name='bn', output_mean_var=True).list_outputs() == \
        ['bn_output', 'bn_mean', 'bn_var']
    assert mx.sym.Dropout(d, name='dp').list_outputs() == ['dp_output']
    assert mx.sym.make_loss(d, name='l').list_outputs() == ['l_loss']
    with pytest.raises(TypeError):
        mx.sym.Group([])
    with pytest.raises(mx.NotImplementedForSymbol):
        bool(d)
    with pytest.raises(TypeError):
        hash(d)
    with pytest.raises(TypeError):
        d + np.ones(2)


def test_composition_replaces_arguments():
    fc = _fc(mx.sym.Variable('data'), name='fc1')
    other = mx.sym.exp(mx.sym.Variable('other'), name='ex')
    composed = fc(data=other)
    assert composed.list_arguments() == ['other', 'fc1_weight', 'fc1_bias']
    assert fc.list_arguments() == ['data', 'fc1_weight', 'fc1_bias']     # unchanged
    positional = fc(other)
    assert positional.list_arguments() == ['other', 'fc1_weight', 'fc1_bias']
    assert copy.deepcopy(fc).tojson() == fc.tojson()
    assert pickle.loads(pickle.dumps(fc)).tojson() == fc.tojson()
    # as in MXNet, a keyword that names no argument is an error, and nothing changes
    with pytest.raises(mx.MXNetError, match='keyword argument name weight not found'):
        fc(weight=other)
    assert fc.list_arguments() == ['data', 'fc1_weight', 'fc1_bias']


def test_group_attributes_follow_mxnet():
    # MXNet 1.9.1: a group lists its first output's node attributes, attr() gives None
    x = mx.sym.var('x', lr_mult=2)
    fc = mx.sym.FullyConnected(x, num_hidden=3, name='fc')
    assert mx.sym.Group([fc, x]).list_attr() == {'num_hidden': '3'}
    assert mx.sym.Group([x, fc]).list_attr() == {'__lr_mult__': '2', 'lr_mult': '2'}
    assert mx.sym.Group([fc, x]).attr('num_hidden') is None


def test_given_shapes_and_types_override_variable_hints():
    # MXNet 1.9.1: a shape/dtype passed to inference wins over the __shape__/__dtype__ attrs
    h = mx.sym.var('h', shape=(2, 3), dtype='float16')
    y = mx.sym.var('y')
    assert (h + y).infer_shape(h=(3, 3)) == ([(3, 3), (3, 3)], [(3, 3)], [])
    assert (h + y).infer_shape() == ([(2, 3), (2, 3)], [(2, 3)], [])
    assert mx.sym.exp(h).infer_type(h='float32')[0] == [np.float32]
    assert mx.sym.var('p', shape=(0, 3)).infer_shape_partial(p=(4, 0))[0] == [(0, 3)]
    exe = mx.sym.exp(h).simple_bind(mx.cpu(), h=(4, 4))
    assert exe.arg_arrays[0].shape == (4, 4) and exe.arg_arrays[0].dtype == np.float16


def test_module_level_helpers_name_nodes_like_mxnet():
    # names checked against MXNet 1.9.1: the hint is the internal function's name, lowercased
    x = mx.sym.var('x')
    nodes = lambda s: [(n['op'], n['name']) for n in json.loads(s.tojson())['nodes'][1:]]  # noqa
    with mx.name.NameManager():
        assert nodes(mx.sym.pow(2, x)) == [('_rpower_scalar', '_rpowerscalar0')]
        assert nodes(mx.sym.power(x, 2)) == [('_power_scalar', '_powerscalar0')]
        assert nodes(2 ** x) == [('_rpower_scalar', '_rpower_scalar0')]
        assert nodes(mx.sym.maximum(1, x)) == [('_maximum_scalar', '_maximumscalar0')]


def test_shape_inference_partial_and_errors(capsys):
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    assert (a + b).infer_shape(a=(0, 3), b=(2, 0)) == ([(2, 3), (2, 3)], [(2, 3)], [])
    assert (a + b).infer_shape_partial(a=(0, 3)) == ([(0, 3), (0, 3)], [(0, 3)], [])
    fc = _fc(mx.sym.Variable('data'), name='fc', num_hidden=5)
    assert fc.infer_shape_partial() == ([(), (), ()], [()], [])
    with pytest.warns(UserWarning, match='Cannot decide shape.*\n\tdata: \\(\\)'):
        assert fc.infer_shape(fc_weight=(5, 3)) == (None, None, None)
    assert fc.infer_shape((4, 3)) == ([(4, 3), (5, 3), (5,)], [(4, 5)], [])
    with pytest.raises(mx.MXNetError, match=r'Error in operator fc: Shape inconsistent, '
                                            r'Provided = \[3,3\], inferred shape=\(5,3\)'):
        fc.infer_shape(data=(2, 3), fc_weight=(3, 3))
    assert 'infer_shape error. Arguments:\n  data: (2, 3)' in capsys.readouterr().out
    with pytest.raises(mx.MXNetError, match='Keyword argument name foo not found'):
        fc.infer_shape(foo=(1,))
    with pytest.raises(TypeError, match='need to be shapes'):
        fc.infer_shape(data=[2, 3])
    hinted = _fc(mx.sym.Variable('data', shape=(7, 2)), name='h')
    assert hinted.infer_shape()[1] == [(7, 3)]


def test_type_inference():
    fc = _fc(mx.sym.Variable('data'), name='fc')
    assert fc.infer_type(data='float16') == ([np.float16] * 3, [np.float16], [])
    bn = mx.sym.BatchNorm(mx.sym.Variable('x'), name='bn')
    args, outs, aux = bn.infer_type(x=np.float16)
    assert args == [np.float16, np.float32, np.float32] and aux == [np.float32] * 2
    with pytest.warns(UserWarning, match='Cannot decide type'):
        assert fc.infer_type() == (None, None, None)
    cast = mx.sym.Cast(mx.sym.Variable('x'), dtype='int32')
    assert cast.infer_type(x='float32')[1] == [np.int32]


def test_operator_parameter_errors_at_creation():
    d = mx.sym.Variable('data')
    with pytest.raises(mx.MXNetError, match="Required parameter num_hidden"):
        mx.sym.FullyConnected(d)
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'bogus'"):
        mx.sym.FullyConnected(d, num_hidden=2, bogus=1)
    with pytest.raises(mx.MXNetError, match='num_hidden'):
        mx.sym.FullyConnected(d, num_hidden='ten')
    with pytest.raises(ValueError, match='Variable'):
        mx.sym.FullyConnected(d, num_hidden=2, weight_lr_mult=2)


def test_json_of_two_a_plus_sin_a_is_byte_exact(golden):
    a = mx.sym.Variable('a')
    with mx.name.NameManager():
        c = 2 * a + mx.sym.sin(a)
    assert c.tojson() == (golden / 'seed_examples' / 'symbol_2a_plus_sin_a.json').read_text()
    lines = (golden / 'seed_examples' / 'debug_str_2a_plus_sin_a.txt').read_text().split('\n')
    forward_part = '\n'.join(lines[:2] + lines[3:19]) + '\n'      # the forward nodes
    assert c.debug_str() == forward_part


@pytest.mark.parametrize('model', GOLDEN_MODELS)
def test_golden_symbols_round_trip_byte_exact(golden, model):
    path = golden / 'checkpoints' / ('%s-symbol.json' % model)
    sym = mx.sym.load(str(path))
    assert sym.tojson() == path.read_text()
    manifest = json.loads((golden / 'checkpoints' / 'manifest.json').read_text())
    info = manifest['models'].get(model)
    if info is None:
        return
    assert sym.list_arguments() == info['arguments']
    assert sym.list_outputs() == info['outputs']
    assert sym.list_auxiliary_states() == info['aux_states']


def test_save_and_load(tmp_path):
    net = mx.sym.SoftmaxOutput(_fc(mx.sym.Variable('data'), name='fc'), name='sm')
    net.save(str(tmp_path / 'n.json'))
    back = mx.sym.load(str(tmp_path / 'n.json'))
    assert back.tojson() == net.tojson()
    with pytest.raises(TypeError):
        mx.sym.load_json(b'{}')


LEGACY_JSON = """{
  "nodes": [
    {"op": "null", "param": {}, "name": "data", "inputs": [], "backward_source_id": -1},
    {"op": "null", "param": {}, "name": "fc1_weight", "inputs": [], "backward_source_id": -1,
     "attr": {"ctx_group": "stage1"}},
    {"op": "FullyConnected", "param": {"no_bias": "False", "num_hidden": "4"},
     "name": "fc1", "inputs": [[0, 0], [1, 0]], "backward_source_id": -1,
     "attr": {"weight_lr_mult": "0.5", "ctx_group": "stage1"}},
    {"op": "BatchNorm", "param": {"eps": "0.001", "fix_gamma": "True"}, "name": "bn",
     "inputs": [[2, 0]], "backward_source_id": -1}
  ],
  "arg_nodes": [0, 1],
  "heads": [[3, 0]]
}"""


def test_legacy_json_is_upgraded():
    sym = mx.sym.load_json(LEGACY_JSON)
    assert sym.list_arguments() == ['data', 'fc1_weight', 'fc1_bias', 'bn_gamma', 'bn_beta']
    assert sym.list_auxiliary_states() == ['bn_moving_mean', 'bn_moving_var']
    attrs = sym.attr_dict()
    assert attrs['fc1']['__ctx_group__'] == 'stage1'
    assert attrs['fc1_weight']['__lr_mult__'] == '0.5'
    assert attrs['bn_moving_var']['__init__'] == '["one", {}]'
    assert sym.infer_shape(data=(2, 3))[1] == [(2, 4)]


@pytest.mark.parametrize('text, message', [
    ('{"nodes": [], "arg_nodes": [], "heads": [], "extra": 1}', 'Unknown field extra'),
    ('{"nodes": [{"op": "NoSuchOp", "name": "x", "inputs": []}], "arg_nodes": [], '
     '"heads": [[0, 0, 0]]}', 'Operator NoSuchOp is not registered'),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "exp", "name": "e", '
     '"inputs": [[5, 0, 0]]}], "arg_nodes": [0], "heads": [[1, 0, 0]]}', 'refers to node 5'),
    ('{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "FullyConnected", '
     '"name": "f", "attrs": {"num_hidden": "2", "nope": "1"}, "inputs": [[0, 0, 0]]}], '
     '"arg_nodes": [0], "heads": [[1, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}}',
     "Cannot find argument 'nope'"),
    ('not json', 'Invalid symbol JSON'),
])
def test_bad_json_is_rejected_clearly(text, message):
    with pytest.raises(mx.MXNetError, match=message):
        mx.sym.load_json(text)
