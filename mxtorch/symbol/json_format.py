"""Symbol JSON in MXNet's format (written byte-for-byte as MXNet 1.9.1 writes it) and the
upgrades MXNet applies when loading files from older versions."""
import json
import logging

from .._safety import PARSE_ERRORS, json_depth, limits
from ..attribute import HIDDEN_KEYS
from ..base import MXNetError
from ..ops.registry import find_op
from ..util import is_np_shape
from .graph import Node, topo_order, mutated_variables

MXNET_VERSION = 10901
_NODE_KEYS = {'op', 'name', 'inputs', 'attrs', 'attr', 'param', 'control_deps',
              'backward_source_id', 'subgraphs'}
_TOP_KEYS = {'nodes', 'arg_nodes', 'heads', 'node_row_ptr', 'attrs'}


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------
def _q(text):
    return json.dumps(text, ensure_ascii=False)


def _lines(items, indent):
    """A multi-line container body: items joined by ', \\n' at `indent`."""
    pad = ' ' * indent
    return ', \n'.join(pad + item for item in items)


def _int_list(values, indent):
    if len(values) <= 10:
        return '[%s]' % ', '.join(str(v) for v in values)
    return '[\n%s\n%s]' % (_lines([str(v) for v in values], indent + 2), ' ' * indent)


def _entry_list(entries, indent):
    items = ['[%d, %d, %d]' % e for e in entries]
    if len(items) <= 10:
        return '[%s]' % ', '.join(items)
    return '[\n%s\n%s]' % (_lines(items, indent + 2), ' ' * indent)


def _attrs(attrs, indent):
    items = ['%s: %s' % (_q(k), _q(attrs[k])) for k in sorted(attrs)]
    if len(items) == 1:
        return '{%s}' % items[0]
    return '{\n%s\n%s}' % (_lines(items, indent + 2), ' ' * indent)


def _is_amp_cast(node):
    return node.op is not None and node.op.amp_cast_input is not None


def _strip_amp_casts(heads):
    """Rewire consumers of AMP cast nodes (ops with an `amp_cast_input` rule) to their inputs
    (a copy); as in MXNet 1.9.1, an amp node that is itself a head of the symbol stays."""
    from .graph import copy_graph
    entries = copy_graph(heads)

    def resolve(entry):
        node, index = entry
        while _is_amp_cast(node):
            node, index = node.inputs[node.op.amp_cast_input(index)]
        return (node, index)
    for node in topo_order(entries):
        node.inputs = [resolve(e) for e in node.inputs]
    return entries


def to_json(symbol, remove_amp_cast=True):
    heads = symbol._entries
    if remove_amp_cast and any(_is_amp_cast(n) for n in topo_order(heads)):
        heads = _strip_amp_casts(heads)
    return _graph_json(heads, 0)


def _graph_json(heads, d):
    """A graph's JSON at indentation d: the top level (d=0) carries the graph's attrs, a
    subgraph (a control-flow node's, nested in its "subgraphs") does not."""
    order = topo_order(heads)
    index = {id(n): i for i, n in enumerate(order)}
    mutated = mutated_variables(order)
    nodes, row_ptr, arg_nodes = [], [0], []
    for i, node in enumerate(order):
        fields = ['"op": %s' % _q(node.op.name if node.op else 'null'),
                  '"name": %s' % _q(node.name)]
        if node.attrs:
            fields.append('"attrs": %s' % _attrs(node.attrs, d + 6))
        inputs = []
        if node.op is not None:
            aux = node.op.aux_positions(node.params, len(node.inputs))
            for k, (child, out) in enumerate(node.inputs):
                version = 1 if k in aux and id(child) in mutated else 0
                inputs.append((index[id(child)], out, version))
        fields.append('"inputs": %s' % _entry_list(inputs, d + 6))
        if node.subgraphs:
            graphs = [_graph_json(g._entries, d + 8) for g in node.subgraphs]
            fields.append('"subgraphs": [\n%s\n%s]' % (_lines(graphs, d + 8), ' ' * (d + 6)))
        nodes.append('{\n%s\n%s}' % (_lines(fields, d + 6), ' ' * (d + 4)))
        row_ptr.append(row_ptr[-1] + node.num_outputs())
        if node.op is None:
            arg_nodes.append(i)
    head_entries = [(index[id(n)], k, 0) for n, k in heads]
    top = ['"nodes": [\n%s\n%s]' % (_lines(nodes, d + 4), ' ' * (d + 2)),
           '"arg_nodes": %s' % _int_list(arg_nodes, d + 2),
           '"node_row_ptr": %s' % _int_list(row_ptr, d + 2),
           '"heads": %s' % _entry_list(head_entries, d + 2)]
    if d == 0:
        top.append(_graph_attrs())
    return '{\n%s\n%s}' % (_lines(top, d + 2), ' ' * d)


def _graph_attrs():
    """The graph's attrs: MXNet's version, and whether NumPy-shape semantics were on."""
    if not is_np_shape():
        return '"attrs": {"mxnet_version": ["int", %d]}' % MXNET_VERSION
    return ('"attrs": {\n    "is_np_shape": ["int", 1], \n    "mxnet_version": ["int", %d]\n  }'
            % MXNET_VERSION)


# ---------------------------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------------------------
def _bad(message):
    return MXNetError('Invalid symbol JSON: %s' % message)


def _entry(raw, n_nodes, what):
    if not isinstance(raw, list) or len(raw) not in (2, 3) or \
            not all(isinstance(v, int) for v in raw):
        raise _bad('%s must be [node_id, output_index(, version)], got %r' % (what, raw))
    if not 0 <= raw[0] < n_nodes:
        raise _bad('%s refers to node %d of %d' % (what, raw[0], n_nodes))
    return raw[0], raw[1]


def _version_of(graph):
    attrs = graph.get('attrs') or {}
    if not isinstance(attrs, dict):
        raise _bad('attrs must be an object')
    version = attrs.get('mxnet_version')
    if isinstance(version, list) and len(version) == 2:
        if not isinstance(version[1], int) or isinstance(version[1], bool) \
                or not 0 <= version[1] < 10 ** 8:
            raise _bad('mxnet_version must be ["int", version], got %r' % (version,))
        return version[1]
    return 800


def _list(graph, key):
    value = graph[key]
    if not isinstance(value, list):
        raise _bad('%s must be a list, got %s' % (key, type(value).__name__))
    return value


def _check_variadic(node, raw_inputs):
    """The input count of a variadic operator (add_n, Concat, ...) is checked against the inputs
    the file gives (it can be no more: an operator may add inputs of its own, such as
    UpSampling's weight) before anything is sized by it."""
    key = node.op.variadic
    if not key or key not in node.attrs:
        return
    text = node.attrs[key].strip()
    count = int(text) if text.lstrip('+-').isdigit() and len(text) < 20 else None
    if count is None or not 0 <= count <= min(len(raw_inputs), limits.MAX_GRAPH_COUNT):
        raise MXNetError('Error in operator %s: %s=%r but the JSON gives %d inputs'
                         % (node.name, key, node.attrs[key], len(raw_inputs)))


def from_json(text):
    """A Symbol from MXNet's JSON (any version back to 0.8; older formats are upgraded).

    Malformed files raise MXNetError: nesting, counts and every operator's parameters are
    checked before anything is built from them."""
    try:
        return _from_json(text)
    except PARSE_ERRORS as err:        # a check missed: still the file's fault, never a crash
        raise _bad('%s: %s' % (type(err).__name__, err)) from None


def _from_json(text):
    if json_depth(text) > limits.MAX_NESTING:
        raise _bad('nested more than %d levels deep' % limits.MAX_NESTING)
    try:
        graph = json.loads(text)
    except ValueError as err:
        raise _bad(str(err)) from None
    if not isinstance(graph, dict):
        raise _bad('top level must be an object')
    for key in graph:
        if key not in _TOP_KEYS:
            raise _bad('JSONReader: Unknown field %s' % key)
    version = _version_of(graph)
    if version > MXNET_VERSION:
        logging.warning('Symbol was saved by a newer MXNet (v%d.%d.%d); loading it anyway',
                        *_split_version(version))
    elif version < MXNET_VERSION:
        logging.info('Loading symbol saved by previous version v%d.%d.%d. Attempting to '
                     'upgrade...', *_split_version(version))
    return _build_graph(graph, version)


def _build_graph(graph, version):
    """The Symbol of a parsed graph object (the file's, or a control-flow node's subgraph)."""
    from .symbol import Symbol
    for key in ('nodes', 'arg_nodes', 'heads'):
        if key not in graph:
            raise _bad('missing field %s' % key)
    raw_nodes = _list(graph, 'nodes')
    nodes = []
    for i, raw in enumerate(raw_nodes):
        if not isinstance(raw, dict):
            raise _bad('node %d is not an object' % i)
        for key in raw:
            if key not in _NODE_KEYS:
                raise _bad('JSONReader: Unknown field %s' % key)
        name, op_name = raw.get('name'), raw.get('op')
        if not isinstance(name, str) or not isinstance(op_name, str) or \
                not isinstance(raw.get('inputs'), list):
            raise _bad('node %d needs string "op", "name" and a list "inputs"' % i)
        attrs = {}
        for key in ('param', 'attr', 'attrs'):
            part = raw.get(key) or {}
            if not isinstance(part, dict):
                raise _bad('node %s: %s must be an object' % (name, key))
            attrs.update({str(k): str(v) for k, v in part.items()})
        if op_name == 'null':
            op = None
        else:
            op = find_op(op_name)
            if op is None:
                raise MXNetError('Failed loading Op %s of type %s: Operator %s is not registered'
                                 % (name, op_name, op_name))
        inputs = [_entry(e, i, 'input of node %s' % name) for e in raw['inputs']]
        subgraphs = raw.get('subgraphs') or []
        if not isinstance(subgraphs, list) or not all(isinstance(g, dict) for g in subgraphs):
            raise _bad('node %s: subgraphs must be a list of graph objects' % name)
        for g in subgraphs:
            for key in g:
                if key not in _TOP_KEYS:
                    raise _bad('JSONReader: Unknown field %s' % key)
        node = Node(op, name, attrs, [(nodes[j], k) for j, k in inputs],
                    [_build_graph(g, version) for g in subgraphs])
        if op is not None:
            _check_variadic(node, inputs)
        nodes.append(node)
    for nid in _list(graph, 'arg_nodes'):
        if not isinstance(nid, int) or not 0 <= nid < len(nodes) or nodes[nid].op is not None:
            raise _bad('arg_nodes entry %r is not a variable node' % (nid,))
    heads = [_entry(e, len(nodes), 'head') for e in _list(graph, 'heads')]
    _upgrade(nodes, version)
    for node in nodes:
        if node.op is not None:
            node.params            # validates every operator's parameters now
            if len(node.inputs) != len(node.input_names()):
                raise MXNetError('Error in operator %s: %s expects %d inputs (%s), the JSON gives '
                                 '%d' % (node.name, node.op.name, len(node.input_names()),
                                         ', '.join(node.input_names()), len(node.inputs)))
    for node in nodes:
        for child, k in node.inputs:
            if not 0 <= k < child.num_outputs():
                raise _bad('node %s takes output %d of node %s, which has %d'
                           % (node.name, k, child.name, child.num_outputs()))
    for nid, k in heads:
        if not 0 <= k < nodes[nid].num_outputs():
            raise _bad('head refers to output %d of node %s' % (k, nodes[nid].name))
    return Symbol([(nodes[nid], k) for nid, k in heads])


def _split_version(v):
    return v // 10000, v // 100 % 100, v % 100


def _upgrade(nodes, version):
    """Apply MXNet's load-time upgrades for files older than 1.9.1, in MXNet's order."""
    if version < MXNET_VERSION:
        for node in nodes:
            if node.op is not None:
                _fix_hidden_keys(node)
    if version < 900:
        for node in nodes:
            if node.op is not None:
                _add_missing_inputs(node)
    if version < 904:
        for node in nodes:
            if node.op is not None:
                _apply_init_hints(node)
    for node in nodes:              # the operators' own upgrades (their upgrade_attrs)
        if node.op is not None and node.op.upgrade_attrs is not None:
            node.op.upgrade_attrs(node.attrs, version)


def _fix_hidden_keys(node):
    for key in HIDDEN_KEYS:
        if key in node.attrs:
            node.attrs['__%s__' % key] = node.attrs.pop(key)
    names = None
    for key in list(node.attrs):
        for hidden in HIDDEN_KEYS:
            suffix = '_' + hidden
            if key.endswith(suffix) and key not in node.op.params:
                value = node.attrs.pop(key)
                arg = key[:-len(suffix)]
                if names is None:
                    names = _input_names_lenient(node)
                if arg in names and names.index(arg) < len(node.inputs):
                    child = node.inputs[names.index(arg)][0]
                    if child.op is None:
                        child.attrs['__%s__' % hidden] = value
                break


def _input_names_lenient(node):
    try:
        return node.input_names()
    except MXNetError:
        return []


def _add_missing_inputs(node):
    names = node.input_names()
    for name in names[len(node.inputs):]:
        node.inputs.append((Node(None, '%s_%s' % (node.name, name), dict(node.attrs)), 0))


def _apply_init_hints(node):
    for name, (child, _) in zip(node.input_names(), node.inputs):
        hint = node.op.init_hints.get(name)
        if hint is not None and child.op is None and '__init__' not in child.attrs:
            child.attrs['__init__'] = hint


# ---------------------------------------------------------------------------------------------
# debug_str
# ---------------------------------------------------------------------------------------------
def debug_str(symbol):
    """MXNet's text dump of a graph: outputs, then every node with its inputs and attrs."""
    order = topo_order(symbol._entries)
    if len(order) == 1 and order[0].op is None:
        return 'Variable:%s\n' % order[0].name
    lines = ['Symbol Outputs:']
    for i, (node, k) in enumerate(symbol._entries):
        lines.append('\toutput[%d]=%s(%d)' % (i, node.name, k))
    for node in order:
        if node.op is None:
            lines.append('Variable:%s' % node.name)
            continue
        lines.append('--------------------')
        lines.append('Op:%s, Name=%s' % (node.op.name, node.name))
        lines.append('Inputs:')
        for i, (child, k) in enumerate(node.inputs):
            suffix = ' version=0' if child.op is None else ''
            lines.append('\targ[%d]=%s(%d)%s' % (i, child.name, k, suffix))
        if node.attrs:
            lines.append('Attrs:')
            lines.extend('\t%s=%s' % (key, node.attrs[key]) for key in sorted(node.attrs))
    return '\n'.join(lines) + '\n'
