"""mx.visualization (mx.viz): a Keras-style text summary of a Symbol and a drawing of its graph.

`plot_network` needs the optional `graphviz` Python package. `network_dot` (an mxtorch extension)
returns the same drawing as DOT source text without any dependency: save it as `net.gv` and run
`dot -Tpdf net.gv -o net.pdf`, or paste it into any Graphviz viewer.
"""
import re
import warnings

from .symbol import Symbol
from .symbol.graph import topo_order

_WEIGHT_SUFFIXES = ('_weight', '_bias', '_beta', '_gamma',
                    '_moving_var', '_moving_mean', '_running_var', '_running_mean')
_VARIABLE_COLOR = '#8dd3c7'
_OP_COLORS = {'Convolution': '#fb8072', 'FullyConnected': '#fb8072',
              'Activation': '#ffffb3', 'LeakyReLU': '#ffffb3',
              'BatchNorm': '#bebada', 'Pooling': '#80b1d3',
              'Concat': '#fdb462', 'Flatten': '#fdb462', 'Reshape': '#fdb462'}
_OTHER_OP_COLOR = '#fccde5'
_NODE_ATTRS = {'shape': 'box', 'fixedsize': 'true', 'width': '1.3', 'height': '0.8034',
               'style': 'filled'}


def _check_symbol(symbol):
    if not isinstance(symbol, Symbol):
        raise TypeError('symbol must be a Symbol, got %s' % type(symbol).__name__)


def _output_table(symbol, infer, given, what):
    """{(id(node), output index): inferred value} over every visible output in the graph."""
    internals = symbol.get_internals()
    _, outputs, _ = infer(internals, **given)
    if outputs is None:
        raise ValueError('Input %s is incomplete' % what)
    return {(id(node), index): value for (node, index), value in zip(internals._entries, outputs)}


def _op_name(node):
    return 'null' if node.op is None else node.op.name


# ---- print_summary ------------------------------------------------------------------------------
def print_summary(symbol, shape=None, line_length=120, positions=[.44, .64, .74, 1.]):
    """Print one row per operator: `name(op)`, output shape (without the batch axis), parameter
    count and the previous layers, then the total parameter count.

    shape: {input name: shape}, needed for output shapes and for the input channels that the
    Convolution, FullyConnected and BatchNorm counts use. positions: right edges of the four
    columns, as fractions of line_length (or absolute columns when the last one exceeds 1).

    As in MXNet, a layer's input channels are the first non-batch dimension of its listed inputs,
    and variables are listed as inputs (and printed as rows) only when they are the first node
    of the graph, such as `data`.
    """
    _check_symbol(symbol)
    shapes = None if shape is None else _output_table(symbol, Symbol.infer_shape, shape, 'shape')
    nodes = topo_order(symbol._entries)
    position = {id(node): i for i, node in enumerate(nodes)}
    head, head_index = symbol._entries[0]
    # MXNet tests membership in the first head's (node id, output index, version) triple.
    listed_variables = {position[id(head)], head_index, 0}
    if positions[-1] <= 1:
        positions = [int(line_length * p) for p in positions]

    def print_row(fields):
        line = ''
        for field, end in zip(fields, positions):
            line = (line + str(field))[:end].ljust(end)
        print(line)

    def short_shape(node, index=0):
        return shapes[(id(node), index)][1:] if shapes is not None else ()

    print('_' * line_length)
    print_row(['Layer (type)', 'Output Shape', 'Param #', 'Previous Layer'])
    print('=' * line_length)
    total = 0
    for i, node in enumerate(nodes):
        if node.op is None and i > 0:
            continue
        previous, channels = [], 0
        for child, index in node.inputs:
            if child.op is not None or position[id(child)] in listed_variables:
                previous.append(child.name)
                in_shape = short_shape(child, index)
                channels += in_shape[0] if in_shape else 0
        params = _param_count(node, channels, shapes)
        total += params
        print_row(['%s(%s)' % (node.name, _op_name(node)),
                   'x'.join(str(d) for d in short_shape(node)),
                   params,
                   previous[0] if previous else ''])
        for name in previous[1:]:
            print_row(['', '', '', name])
        print(('=' if i == len(nodes) - 1 else '_') * line_length)
    print('Total params: %d' % total)
    print('_' * line_length)


def _param_count(node, channels, shapes):
    """Learnable parameters of one layer given its input channels (0 for other operators)."""
    op = _op_name(node)
    if op == 'Convolution':
        p = node.params
        count = channels * p['num_filter'] // p['num_group']
        for k in p['kernel']:
            count *= k
        return count if p['no_bias'] else count + p['num_filter']
    if op == 'FullyConnected':
        p = node.params
        return (channels if p['no_bias'] else channels + 1) * p['num_hidden']
    if op == 'BatchNorm':
        return 2 * shapes[(id(node), 0)][1] if shapes is not None else 0
    if op == 'Embedding':
        return node.params['input_dim'] * node.params['output_dim']
    return 0


# ---- plot_network / network_dot -----------------------------------------------------------------
def plot_network(symbol, title='plot', save_format='pdf', shape=None, dtype=None, node_attrs={},
                 hide_weights=True):
    """Draw the graph as a `graphviz.Digraph` (call `.render()` or `.view()` on it).

    One box per operator (labels like `Convolution\\n3x3/1, 64`, `FullyConnected\\n10`,
    `Activation\\nrelu`), an oval per input variable; weight-like variables (`*_weight`,
    `*_bias`, `*_gamma`, ...) are hidden when hide_weights. shape / dtype: {input name: value}
    to label each edge with the shape (without the batch axis) and dtype flowing along it.
    node_attrs: Graphviz attributes overriding the defaults of every node.
    Needs the `graphviz` package; `network_dot` gives the same drawing as DOT text without it.
    """
    try:
        from graphviz import Digraph
    except ImportError:
        raise ImportError('Draw network requires graphviz library (mx.viz.network_dot returns '
                          'the DOT source without it)') from None
    nodes, edges = _drawing(symbol, shape, dtype, node_attrs, hide_weights)
    dot = Digraph(name=title, format=save_format)
    for name, label, attrs in nodes:
        dot.node(name=name, label=label, **attrs)
    for tail, head, label, attrs in edges:
        dot.edge(tail_name=tail, head_name=head, label=label, **attrs)
    return dot


def network_dot(symbol, title='plot', shape=None, dtype=None, node_attrs={}, hide_weights=True):
    """mxtorch extension: the drawing of `plot_network` as DOT source text (what
    `plot_network(...).source` holds), without needing the graphviz package."""
    nodes, edges = _drawing(symbol, shape, dtype, node_attrs, hide_weights)
    lines = ['digraph %s{' % (_quote(title) + ' ' if title else '')]
    for name, label, attrs in nodes:
        lines.append('\t%s [%s]' % (_quote(name), _attr_list(label, attrs)))
    for tail, head, label, attrs in edges:
        lines.append('\t%s -> %s [%s]' % (_quote(tail), _quote(head), _attr_list(label, attrs)))
    lines.append('}')
    return '\n'.join(lines) + '\n'


def _drawing(symbol, shape, dtype, node_attrs, hide_weights):
    """Nodes [(name, label, attrs)] and edges [(consumer, input, label, attrs)] of the drawing."""
    _check_symbol(symbol)
    shapes = None if shape is None else _output_table(symbol, Symbol.infer_shape, shape, 'shape')
    dtypes = None if dtype is None else _output_table(symbol, Symbol.infer_type, dtype, 'type')
    graph = topo_order(symbol._entries)
    seen, repeated = set(), []
    for node in graph:
        if node.name in seen and node.name not in repeated:
            repeated.append(node.name)
        seen.add(node.name)
    if repeated:
        warnings.warn('There are multiple variables with the same name in your graph, this may '
                      'result in cyclic graph. Repeated names: ' + ','.join(repeated),
                      RuntimeWarning)

    nodes, hidden = [], set()
    for node in graph:
        attrs = dict(_NODE_ATTRS, **node_attrs)
        if node.op is None:
            if node.name.endswith(_WEIGHT_SUFFIXES):
                # Not drawn; when shown, Graphviz draws it as a plain node from its edges.
                if hide_weights:
                    hidden.add(node.name)
                continue
            attrs.update(shape='oval', fillcolor=_VARIABLE_COLOR)
            label = node.name
        else:
            attrs['fillcolor'] = _OP_COLORS.get(node.op.name, _OTHER_OP_COLOR)
            label = _op_label(node)
        nodes.append((node.name, label, attrs))

    edges = []
    for node in graph:
        for child, index in node.inputs:
            if child.name in hidden:
                continue
            label = ''
            if shapes is not None:
                label = 'x'.join(str(d) for d in shapes[(id(child), index)][1:])
            if dtypes is not None:
                label += '(%s)' % dtypes[(id(child), index)].__name__
            edges.append((node.name, child.name, label, {'dir': 'back', 'arrowtail': 'open'}))
    return nodes, edges


def _op_label(node):
    op, attrs = node.op.name, node.attrs
    if op == 'Convolution':
        return 'Convolution\n%s/%s, %s' % (_dims(attrs['kernel']), _dims(attrs.get('stride', '1')),
                                           attrs['num_filter'])
    if op == 'FullyConnected':
        return 'FullyConnected\n%s' % attrs['num_hidden']
    if op == 'Activation':
        return 'Activation\n%s' % attrs['act_type']
    if op == 'LeakyReLU':
        return 'LeakyReLU\n%s' % attrs.get('act_type', 'Leaky')
    if op == 'Pooling':
        return 'Pooling\n%s, %s/%s' % (attrs.get('pool_type', 'max'),
                                       _dims(attrs['kernel']) if 'kernel' in attrs else '[]',
                                       _dims(attrs.get('stride', '1')))
    if op == 'Custom':
        return attrs['op_type']
    return node.name


def _dims(text):
    """'(3, 3)' -> '3x3', as the attribute was written."""
    return 'x'.join(re.findall(r'\d+', text))


# ---- DOT text, quoted as the graphviz package quotes it -----------------------------------------
_DOT_ID = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*|-?(\.[0-9]+|[0-9]+(\.[0-9]*)?))$')
_DOT_KEYWORDS = {'node', 'edge', 'graph', 'digraph', 'subgraph', 'strict'}


def _quote(text):
    if _DOT_ID.match(text) and text.lower() not in _DOT_KEYWORDS:
        return text
    return '"%s"' % re.sub(r'(?<!\\)"', r'\"', text)


def _attr_list(label, attrs):
    return ' '.join(['label=%s' % _quote(label)]
                    + ['%s=%s' % (_quote(k), _quote(str(v))) for k, v in sorted(attrs.items())])
