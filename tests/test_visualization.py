"""mx.viz: print_summary and the network drawing against MXNet 1.9.1 (fixture made by
fixtures/gen_visualization.py), hand-computed parameter counts, errors, and network_dot, the
dependency-free DOT source. The graphviz package is optional: its test is skipped without it."""
import json
import re
import sys

import pytest

import mxtorch as mx
from mxtorch import visualization as viz

from conftest import FIXTURES

REFERENCE = json.loads((FIXTURES / 'visualization_reference.json').read_text())
CASES = [(case['name'], kind, i) for case in REFERENCE
         for kind in ('summaries', 'plots') for i in range(len(case[kind]))]


def with_tuples(kwargs):
    kwargs = dict(kwargs)
    for key in ('shape',):
        if key in kwargs:
            kwargs[key] = {name: tuple(dims) for name, dims in kwargs[key].items()}
    return kwargs


def summary(symbol, capsys, **kwargs):
    viz.print_summary(symbol, **kwargs)
    return capsys.readouterr().out


@pytest.mark.parametrize('name,kind,index', CASES)
def test_matches_mxnet(name, kind, index, capsys):
    case = next(c for c in REFERENCE if c['name'] == name)
    symbol = mx.sym.load_json(case['json'])
    expected = case[kind][index]
    kwargs = with_tuples(expected['kwargs'])
    if kind == 'summaries':
        assert summary(symbol, capsys, **kwargs) == expected['text']
    else:
        # graphviz 0.8.4 (the reference's) leaves out the final newline that later versions write
        assert viz.network_dot(symbol, **kwargs) == expected['source'] + '\n'


def convnet():
    data = mx.sym.var('data')
    x = mx.sym.Convolution(data, kernel=(5, 5), num_filter=6, name='c1')
    x = mx.sym.BatchNorm(x, name='bn')
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max', name='p1')
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=12, num_group=3, no_bias=True, name='c2')
    x = mx.sym.FullyConnected(x, num_hidden=7, name='fc')
    x = mx.sym.FullyConnected(x, num_hidden=5, no_bias=True, name='fc_nb')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def rows(text):
    """{layer: (output shape, params, previous)} from the printed table."""
    table = {}
    for line in text.splitlines():
        match = re.match(r'(\w+)\((\w+)\)\s+(\S*)\s+(\d+)\s*(\S*)', line)
        if match:
            layer, _, shape, params, previous = match.groups()
            table[layer] = (shape, int(params), previous)
    return table


def test_summary_param_counts_by_hand(capsys):
    text = summary(convnet(), capsys, shape={'data': (8, 3, 20, 20)})
    conv1 = 3 * 6 * 5 * 5 + 6              # C_in * F * kh * kw + bias
    bn = 2 * 6                             # gamma and beta per channel
    conv2 = 6 * 12 // 3 * 3 * 3            # grouped, no bias
    fc = (12 + 1) * 7                      # MXNet counts the first input axis (12 channels) only
    fc_nb = 7 * 5
    assert rows(text) == {'data': ('3x20x20', 0, ''), 'c1': ('6x16x16', conv1, 'data'),
                          'bn': ('6x16x16', bn, 'c1'), 'p1': ('6x8x8', 0, 'bn'),
                          'c2': ('12x6x6', conv2, 'p1'), 'fc': ('7', fc, 'c2'),
                          'fc_nb': ('5', fc_nb, 'fc'), 'softmax': ('5', 0, 'fc_nb')}
    assert 'Total params: %d\n' % (conv1 + bn + conv2 + fc + fc_nb) in text


def test_summary_layout(capsys):
    lines = summary(convnet(), capsys, shape={'data': (1, 3, 20, 20)}, line_length=60).splitlines()
    assert lines[0] == '_' * 60
    # column ends at int(60 * [.44, .64, .74, 1.]) = 26, 38, 44, 60: 'Param #' is cut to 6 chars
    assert lines[1] == 'Layer (type)'.ljust(26) + 'Output Shape' + 'Param ' + 'Previous Layer  '
    assert lines[2] == '=' * 60
    assert lines[3] == 'data(null)'.ljust(26) + '3x20x20'.ljust(12) + '0'.ljust(6) + ' ' * 16
    assert lines[-4].startswith('softmax(SoftmaxOutput)') and lines[-3] == '=' * 60
    assert lines[-2:] == ['Total params: 810', '_' * 60]
    assert all(len(line) == 60 for line in lines if not line.startswith('Total'))


def test_summary_without_shape_counts_channels_as_zero(capsys):
    table = rows(summary(convnet(), capsys))
    assert {k: v[:2] for k, v in table.items()} == {
        'data': ('', 0), 'c1': ('', 6), 'bn': ('', 0), 'p1': ('', 0), 'c2': ('', 0),
        'fc': ('', 7), 'fc_nb': ('', 0), 'softmax': ('', 0)}


def test_summary_embedding_and_several_previous_layers(capsys):
    data = mx.sym.var('data')
    emb = mx.sym.Embedding(data, input_dim=100, output_dim=16, name='emb')
    total = mx.sym.elemwise_add(emb, mx.sym.Activation(emb, act_type='tanh', name='t'), name='sum')
    text = summary(total, capsys, shape={'data': (2, 9)})
    assert 'emb(Embedding)' in text and rows(text)['emb'] == ('9x16', 1600, 'data')
    add_row = text.splitlines().index(next(l for l in text.splitlines() if l.startswith('sum(')))
    assert text.splitlines()[add_row + 1].strip() == 't'
    assert 'Total params: 1600' in text


def test_summary_errors(capsys):
    symbol = convnet()
    with pytest.warns(UserWarning, match='Cannot decide shape'):
        with pytest.raises(ValueError, match='^Input shape is incomplete$'):
            viz.print_summary(symbol, shape={})
    with pytest.raises(TypeError, match='symbol must be a Symbol'):
        viz.print_summary(symbol.tojson())


def test_network_dot_labels_and_edges():
    source = viz.network_dot(convnet(), shape={'data': (8, 3, 20, 20)}, dtype={'data': 'float16'})
    assert source.startswith('digraph plot {\n\tdata [label=data fillcolor="#8dd3c7" ')
    assert source.endswith('\n}\n')
    assert '\tc1 [label="Convolution\n5x5/1, 6" fillcolor="#fb8072" fixedsize=true ' \
           'height=0.8034 shape=box style=filled width=1.3]\n' in source
    assert '\tc2 [label="Convolution\n3x3/1, 12" ' in source
    assert '\tp1 [label="Pooling\nmax, 2x2/2x2" ' in source
    assert '\tfc [label="FullyConnected\n7" ' in source
    assert '\tbn [label=bn fillcolor="#bebada" ' in source
    assert '\tc1 -> data [label="3x20x20(float16)" arrowtail=open dir=back]\n' in source
    assert '\tfc_nb -> fc [label="7(float16)" arrowtail=open dir=back]\n' in source
    assert '\tsoftmax -> softmax_label [label="(float16)" arrowtail=open dir=back]\n' in source
    assert 'weight' not in source and 'moving' not in source and 'gamma' not in source


def test_network_dot_shows_weights_and_takes_node_attrs():
    symbol = mx.sym.FullyConnected(mx.sym.var('x'), num_hidden=2, name='fc')
    assert viz.network_dot(symbol, title='tiny', hide_weights=False,
                           node_attrs={'fontsize': '8', 'shape': 'hexagon'}) == (
        'digraph tiny {\n'
        '\tx [label=x fillcolor="#8dd3c7" fixedsize=true fontsize=8 height=0.8034 shape=oval '
        'style=filled width=1.3]\n'
        '\tfc [label="FullyConnected\n2" fillcolor="#fb8072" fixedsize=true fontsize=8 '
        'height=0.8034 shape=hexagon style=filled width=1.3]\n'
        '\tfc -> x [label="" arrowtail=open dir=back]\n'
        '\tfc -> fc_weight [label="" arrowtail=open dir=back]\n'
        '\tfc -> fc_bias [label="" arrowtail=open dir=back]\n'
        '}\n')


def test_network_dot_quotes_names_like_graphviz():
    a = mx.sym.var('node')
    b = mx.sym.var('in-put"s')
    symbol = mx.sym.elemwise_add(a, b, name='2nd sum')
    source = viz.network_dot(symbol, title=None)
    assert source.splitlines()[0] == 'digraph {'
    assert '\t"node" [label="node" ' in source
    assert '\t"in-put\\"s" [label="in-put\\"s" ' in source
    assert '\t"2nd sum" -> "node" [label=""' in source


def test_network_dot_warns_on_repeated_names():
    symbol = mx.sym.elemwise_add(mx.sym.var('x'), mx.sym.var('x'), name='twice')
    with pytest.warns(RuntimeWarning, match='Repeated names: x$'):
        viz.network_dot(symbol)


def test_network_dot_incomplete_inputs():
    symbol = convnet()
    with pytest.warns(UserWarning):
        with pytest.raises(ValueError, match='^Input shape is incomplete$'):
            viz.network_dot(symbol, shape={'softmax_label': (8,)})
    with pytest.warns(UserWarning, match='Cannot decide type'):
        with pytest.raises(ValueError, match='^Input type is incomplete$'):
            viz.network_dot(symbol, dtype={})


def test_plot_network_without_graphviz(monkeypatch):
    monkeypatch.setitem(sys.modules, 'graphviz', None)
    with pytest.raises(ImportError, match='^Draw network requires graphviz library'):
        viz.plot_network(convnet())


def test_plot_network_with_graphviz():
    graphviz = pytest.importorskip('graphviz')
    symbol = convnet()
    shape = {'data': (8, 3, 20, 20)}
    dot = viz.plot_network(symbol, title='net', save_format='png', shape=shape,
                           node_attrs={'fixedsize': 'false'})
    assert isinstance(dot, graphviz.Digraph)
    assert dot.name == 'net' and dot.format == 'png'
    assert dot.source == viz.network_dot(symbol, title='net', shape=shape,
                                         node_attrs={'fixedsize': 'false'})
