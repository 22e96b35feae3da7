"""Generate `mx.sym.<op>` functions from the operator registry, and create operator nodes."""
from ..attribute import AttrScope, HIDDEN_KEYS, hide_key
from ..base import MXNetError
from ..name import NameManager
from ..ops.calling import split_call, assign_inputs
from ..ops.params import format_attr_value
from ..ops.signature import describe
from ..ops.registry import all_ops, get_op
from .graph import Node
from .symbol import Symbol


def _is_symbol(x):
    return isinstance(x, Symbol)


def _split_attributes(op, raw):
    """Move hidden keys (lr_mult -> __lr_mult__) and `__x__` attributes out of the params."""
    attrs = {}
    for key in list(raw):
        if key in HIDDEN_KEYS or (key.startswith('__') and key.endswith('__')):
            attrs[hide_key(key)] = str(raw.pop(key))
        elif key not in op.params and any(key.endswith('_' + h) for h in HIDDEN_KEYS):
            raise ValueError('Attribute %s is not supported on operator %s. Set it on the '
                             'Variable instead, e.g. mx.sym.Variable(name, lr_mult=...)'
                             % (key, op.name))
    return attrs


def create(op_name, args, kwargs, func_name=None):
    """A Symbol for operator `op_name` applied to `args` (Symbols, then params) and kwargs."""
    op = get_op(op_name)
    kwargs = dict(kwargs)
    name = kwargs.pop('name', None)
    attr = kwargs.pop('attr', None)
    kwargs.pop('out', None)       # MXNet's symbol functions accept and ignore out=
    raw, symbols, symbol_kw = split_call(op, args, kwargs, _is_symbol)
    extra = _split_attributes(op, raw)
    # an operator's attr values become strings, as MXNet passes them on (str() of an object)
    scope = AttrScope._active().get({hide_key(k): str(v) for k, v in (attr or {}).items()})
    attrs = dict(scope)
    attrs.update(extra)
    attrs.update((k, format_attr_value(v)) for k, v in raw.items())
    params = op.parse_params(attrs)
    name = NameManager.current.get(name, (func_name or op_name).lower())
    slots, input_names = assign_inputs(op, params, symbols, symbol_kw, 'Symbols')
    entries = []
    for input_name, value in zip(input_names, slots):
        hint = op.init_hints.get(input_name)
        if value is None:
            var_attrs = dict(attrs)
            if hint is not None:
                var_attrs.setdefault('__init__', hint)
            entries.append((Node(None, '%s_%s' % (name, input_name), var_attrs), 0))
            continue
        if len(value._entries) != 1:
            raise MXNetError('Argument %s of operator %s is a group of %d outputs; a single '
                             'output is required' % (input_name, name, len(value._entries)))
        entry = value._entries[0]
        if hint is not None and entry[0].op is None and '__init__' not in entry[0].attrs:
            entry[0].attrs['__init__'] = hint
        entries.append(entry)
    node = Node(op, name, attrs, entries)
    return Symbol([(node, i) for i in range(op.num_visible_outputs(params))])


def make_function(op_name, func_name):
    op = get_op(op_name)

    def function(*args, **kwargs):
        return create(op_name, args, kwargs, func_name=func_name)
    function.__name__ = func_name
    function.__qualname__ = func_name
    return describe(function, op, 'sym')


def generated_functions():
    return {name: make_function(name, name) for name in all_ops()}
