"""Symbol: a list of output entries into a graph of Nodes (symbol/graph.py).

Everything here is generic over the operator registry; operator-specific knowledge lives in
the OpDefs (ops/).
"""
import copy as _copy
import json
import warnings

import numpy as np

from ..attribute import AttrScope, HIDDEN_KEYS, hide_key
from ..base import MXNetError, NotImplementedForSymbol, DTYPE_CODES, np_dtype, numeric_types
from ..context import Context
from ..ops.registry import get_op
from .graph import Node, topo_order, mutated_variables, copy_graph


class Symbol:
    """A symbolic expression: the outputs of a computation graph."""
    __slots__ = ('_entries',)

    def __init__(self, entries):
        self._entries = list(entries)

    # ---- identity and display ------------------------------------------------------------------
    @property
    def name(self):
        nodes = {id(n) for n, _ in self._entries}
        return self._entries[0][0].name if len(nodes) == 1 else None

    def __repr__(self):
        if len(self._entries) == 1 or self.name is not None:
            return '<Symbol %s>' % self.name
        return '<Symbol group [%s]>' % ', '.join(n.name for n, _ in self._entries)

    __str__ = __repr__

    def __len__(self):
        return len(self._entries)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        raise NotImplementedForSymbol(self.__bool__, 'bool')

    __hash__ = None

    def __copy__(self):
        return Symbol(copy_graph(self._entries))

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __getstate__(self):
        return {'handle': self.tojson()}

    def __setstate__(self, state):
        self._entries = load_json(state['handle'])._entries

    # ---- indexing --------------------------------------------------------------------------------
    def __getitem__(self, index):
        if isinstance(index, slice):
            return Symbol(self._entries[index])
        if isinstance(index, str):
            names = self.list_outputs()
            hits = [i for i, n in enumerate(names) if n == index]
            if not hits:
                raise ValueError('Cannot find output that matches name "%s"' % index)
            if len(hits) > 1:
                raise ValueError('There are multiple outputs with name "%s"' % index)
            index = hits[0]
        if not isinstance(index, (int, np.integer)):
            raise TypeError('Symbol only supports integer, str or slice index, got %s'
                            % type(index).__name__)
        if not -len(self._entries) <= index < len(self._entries):
            raise IndexError('Symbol index %d out of range (%d outputs)'
                             % (index, len(self._entries)))
        return Symbol([self._entries[index]])

    # ---- walking ---------------------------------------------------------------------------------
    def _nodes(self):
        return topo_order(self._entries)

    def _variables(self):
        """(arguments, auxiliary states): variable nodes in DFS order."""
        order = self._nodes()
        mutated = mutated_variables(order)
        variables = [n for n in order if n.op is None]
        return ([n for n in variables if id(n) not in mutated],
                [n for n in variables if id(n) in mutated])

    def list_arguments(self):
        return [n.name for n in self._variables()[0]]

    def list_auxiliary_states(self):
        return [n.name for n in self._variables()[1]]

    def list_inputs(self):
        return [n.name for n in self._nodes() if n.op is None]

    def list_outputs(self):
        names = []
        for node, index in self._entries:
            names.append(node.output_names()[index] if node.op is not None else node.name)
        return names

    def get_internals(self):
        entries = []
        for node in self._nodes():
            entries.extend((node, i) for i in range(node.num_visible_outputs()))
        return Symbol(entries)

    def _gen_atomic_symbol(self):
        """The operator of this symbol's first output on its own: same parameters, no inputs,
        no name (as MXNet's atomic symbols, from which composed ones are built)."""
        node = self._entries[0][0]
        if node.op is None:
            raise MXNetError('_gen_atomic_symbol: %s is a variable, not an operator' % node.name)
        attrs = {k: v for k, v in node.attrs.items() if not (k.startswith('__') and
                                                             k.endswith('__'))}
        atom = Node(node.op, '', attrs)
        return Symbol([(atom, i) for i in range(atom.num_visible_outputs())])

    def get_children(self):
        nodes = {id(node): node for node, _ in self._entries}     # each node once, in order
        inputs = [e for node in nodes.values() for e in node.inputs]
        return Symbol(inputs) if inputs else None

    # ---- attributes ------------------------------------------------------------------------------
    def attr(self, key):
        if self.name is None:
            return None
        node = self._entries[0][0]
        if key == 'name':
            return node.name
        value = node.attrs.get(key)
        if value is None and key in HIDDEN_KEYS:
            value = node.attrs.get('__%s__' % key)
        return value

    def list_attr(self, recursive=False):
        if recursive:
            raise DeprecationWarning('Symbol.list_attr with recursive=True has been deprecated. '
                                     'Please use attr_dict instead.')
        # as MXNet's shallow listing: a group shows its first output's node
        return _with_hidden_aliases(self._entries[0][0].attrs)

    def attr_dict(self):
        result = {}
        for node in self._nodes():
            if node.attrs:
                result[node.name] = _with_hidden_aliases(node.attrs)
        return result

    def _set_attr(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError('Set Attr only accepts string values')
        for node, _ in self._entries:
            for key, value in kwargs.items():
                if key == 'name':
                    node.name = value
                    continue
                key = hide_key(key)
                if node.op is not None and not (key.startswith('__') and key.endswith('__')) \
                        and key not in node.op.params:
                    raise MXNetError("Cannot find argument '%s' of operator %s, Possible "
                                     "Arguments: %s" % (key, node.op.name,
                                                        ', '.join(node.op.params)))
                node.attrs[key] = value
            if node.op is not None:
                node.params     # re-parse now so a bad value fails here

    # ---- composition -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """A copy with arguments replaced: `net(data=other)` or positionally in argument order."""
        result = self.__copy__()
        result._compose(*args, **kwargs)
        return result

    def _compose(self, *args, **kwargs):
        name = kwargs.pop('name', None)
        if args and kwargs:
            raise TypeError('compose only accepts input Symbols either as positional or '
                            'keyword arguments, not both')
        for value in list(args) + list(kwargs.values()):
            if not isinstance(value, Symbol):
                raise TypeError('Compose expect `Symbol` as arguments, got %s'
                                % type(value).__name__)
            if len(value) != 1:
                raise MXNetError('Compose: argument %s is a group of %d outputs, a single output '
                                 'is required' % (value.name, len(value)))
        arguments = self._variables()[0]
        replace = {}
        if args:
            if len(args) > len(arguments):
                raise MXNetError('Compose: %d positional arguments given, the symbol has %d'
                                 % (len(args), len(arguments)))
            for node, value in zip(arguments, args):
                replace[id(node)] = value._entries[0]
        else:
            by_name = {}
            for node in arguments:
                by_name.setdefault(node.name, []).append(node)
            unknown = [key for key in kwargs if key not in by_name]
            if unknown:
                raise MXNetError('Compose: keyword argument name %s not found; the arguments '
                                 'are %s' % (', '.join(unknown), list(by_name)))
            for key, value in kwargs.items():
                for node in by_name[key]:
                    replace[id(node)] = value._entries[0]
        if replace:
            self._entries = copy_graph(self._entries, replace)
        if name is not None and len(self._entries) == 1:
            self._entries[0][0].name = name

    # ---- operator overloading -----------------------------------------------------------------------
    def _binary(self, other, array_op, scalar_op, reverse=False):
        from . import register
        if isinstance(other, Symbol):
            lhs, rhs = (other, self) if reverse else (self, other)
            return register.create(array_op, [lhs, rhs], {})
        if isinstance(other, numeric_types):
            return register.create(scalar_op, [self], {'scalar': other})
        raise TypeError('type %s not supported' % type(other))

    def __add__(self, o): return self._binary(o, '_Plus', '_PlusScalar')
    def __radd__(self, o): return self._binary(o, '_Plus', '_PlusScalar', True)
    def __sub__(self, o): return self._binary(o, '_Minus', '_MinusScalar')
    def __rsub__(self, o): return self._binary(o, '_Minus', '_RMinusScalar', True)
    def __mul__(self, o): return self._binary(o, '_Mul', '_MulScalar')
    def __rmul__(self, o): return self._binary(o, '_Mul', '_MulScalar', True)
    def __truediv__(self, o): return self._binary(o, '_Div', '_DivScalar')
    def __rtruediv__(self, o): return self._binary(o, '_Div', '_RDivScalar', True)
    def __mod__(self, o): return self._binary(o, '_Mod', '_ModScalar')
    def __rmod__(self, o): return self._binary(o, '_Mod', '_RModScalar', True)
    def __pow__(self, o): return self._binary(o, '_Power', '_PowerScalar')
    def __rpow__(self, o): return self._binary(o, '_Power', '_rpower_scalar', True)
    def __eq__(self, o): return self._binary(o, '_equal', '_equal_scalar')
    def __ne__(self, o): return self._binary(o, '_not_equal', '_not_equal_scalar')
    def __gt__(self, o): return self._binary(o, '_greater', '_greater_scalar')
    def __ge__(self, o): return self._binary(o, '_greater_equal', '_greater_equal_scalar')
    def __lt__(self, o): return self._binary(o, '_lesser', '_lesser_scalar')
    def __le__(self, o): return self._binary(o, '_lesser_equal', '_lesser_equal_scalar')
    __div__ = __truediv__
    __rdiv__ = __rtruediv__

    def __neg__(self):
        return self._binary(-1.0, None, '_MulScalar')

    def __abs__(self):
        from . import register
        return register.create('abs', [self], {})

    def _no_inplace(self, other):
        raise NotImplementedForSymbol(self._no_inplace, 'in-place operator')

    __iadd__ = __isub__ = __imul__ = __itruediv__ = __idiv__ = __imod__ = _no_inplace

    def __getattr__(self, name):
        if name in _NDARRAY_ONLY:
            raise NotImplementedForSymbol(name)
        raise AttributeError("'Symbol' object has no attribute '%s'" % name)

    def astype(self, dtype):
        from . import register
        return register.create('Cast', [self], {'dtype': dtype}, func_name='cast')

    def reshape(self, *args, **kwargs):
        from . import register
        if args and not kwargs.get('shape'):
            kwargs['shape'] = args[0] if len(args) == 1 else tuple(args)
        return register.create('Reshape', [self], kwargs, func_name='reshape')

    def gradient(self, wrt):
        raise MXNetError('Symbol.gradient is not implemented in MXNet 1.x; bind the symbol and '
                         'call Executor.backward instead')

    # ---- inference -----------------------------------------------------------------------------------
    def infer_shape(self, *args, **kwargs):
        from .infer import infer_shape
        return infer_shape(self, args, kwargs, partial=False)

    def infer_shape_partial(self, *args, **kwargs):
        from .infer import infer_shape
        return infer_shape(self, args, kwargs, partial=True)

    def infer_type(self, *args, **kwargs):
        from .infer import infer_type
        return infer_type(self, args, kwargs, partial=False)

    def infer_type_partial(self, *args, **kwargs):
        from .infer import infer_type
        return infer_type(self, args, kwargs, partial=True)

    # ---- serialization -------------------------------------------------------------------------------
    def tojson(self, remove_amp_cast=True):
        from .json_format import to_json
        return to_json(self, remove_amp_cast)

    def save(self, fname, remove_amp_cast=True):
        if not isinstance(fname, str):
            raise TypeError('fname needs to be a string')
        from ..ndarray.serialization import atomic_write
        atomic_write(fname, self.tojson(remove_amp_cast).encode('utf-8'))

    def debug_str(self):
        from .json_format import debug_str
        return debug_str(self)

    # ---- execution -----------------------------------------------------------------------------------
    def bind(self, ctx, args, args_grad=None, grad_req='write', aux_states=None, group2ctx=None,
             shared_exec=None):
        from ..executor import bind
        return bind(self, ctx, args, args_grad, grad_req, aux_states, group2ctx, shared_exec)

    def simple_bind(self, ctx, grad_req='write', type_dict=None, stype_dict=None, group2ctx=None,
                    shared_arg_names=None, shared_exec=None, shared_buffer=None, **kwargs):
        from ..executor import simple_bind
        return simple_bind(self, ctx, grad_req, type_dict, group2ctx, shared_arg_names,
                           shared_exec, shared_buffer, stype_dict=stype_dict, **kwargs)

    def eval(self, ctx=None, **kwargs):
        from ..context import current_context
        return self.bind(ctx or current_context(), kwargs).forward()

    def get_backend_symbol(self, backend):
        return self

    def optimize_for(self, backend, *args, **kwargs):
        return self


_NDARRAY_ONLY = frozenset(['asnumpy', 'asscalar', 'wait_to_read', 'backward', 'attach_grad',
                           'copyto', 'as_in_context', 'context', 'shape', 'dtype', 'size',
                           'ndim', 'handle_', 'grad', 'detach'])


def _with_hidden_aliases(attrs):
    """attrs with each hidden key reported twice (`__lr_mult__` and `lr_mult`)."""
    result = dict(attrs)
    for key in HIDDEN_KEYS:
        hidden = '__%s__' % key
        if hidden in attrs:
            result[key] = attrs[hidden]
    return result


# ---------------------------------------------------------------------------------------------
# Variables and groups
# ---------------------------------------------------------------------------------------------
def var(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None,
        stype=None, **kwargs):
    """A placeholder variable: a graph input (data, label or parameter)."""
    if not isinstance(name, str):
        raise TypeError('Expect a string for variable `name`')
    attrs = AttrScope._active().get({hide_key(k): v for k, v in (attr or {}).items()})
    if shape is not None:
        attrs['__shape__'] = str(tuple(shape) if isinstance(shape, list) else shape)
    if lr_mult is not None:
        attrs['__lr_mult__'] = str(lr_mult)
    if wd_mult is not None:
        attrs['__wd_mult__'] = str(wd_mult)
    if dtype is not None:
        attrs['__dtype__'] = str(DTYPE_CODES[np_dtype(dtype)])
    if init is not None:
        attrs['__init__'] = init if isinstance(init, str) else init.dumps()
    if stype is not None:
        attrs['__storage_type__'] = str({'default': 0, 'row_sparse': 1, 'csr': 2}[stype])
    for key, value in kwargs.items():
        if not (key.startswith('__') and key.endswith('__')):
            raise ValueError('Attribute name=%s is not supported. Additional attributes must '
                             'start and end with double underscores, e.g, __yourattr__' % key)
        attrs[key] = str(value)
    return Symbol([(Node(None, name, attrs), 0)])


Variable = var


def Group(symbols):
    """One symbol whose outputs are those of `symbols`, in order (nested groups flatten)."""
    if not symbols or not all(isinstance(s, Symbol) for s in symbols):
        raise TypeError('Expected a list of symbols as input')
    return Symbol([e for s in symbols for e in s._entries])


def load_json(json_str):
    if not isinstance(json_str, str):
        raise TypeError('fname required to be string')
    from .json_format import from_json
    return from_json(json_str)


def load(fname):
    if not isinstance(fname, str):
        raise TypeError('fname required to be string')
    from .._safety import reading
    with open(fname, 'rb') as f:
        raw = f.read()
    with reading(fname, 'symbol file'):
        try:
            text = raw.decode('utf-8')
        except UnicodeDecodeError as err:
            raise MXNetError('Invalid symbol JSON: not UTF-8 (%s)' % err) from None
        return load_json(text)


# ---------------------------------------------------------------------------------------------
# Module-level functions of MXNet's symbol.py: creation, splitting, binary helpers, histogram
# ---------------------------------------------------------------------------------------------
def _create(op_name, inputs, params, func_name=None):
    from .register import create
    return create(op_name, inputs, params, func_name=func_name)


def _creation(op_name, shape, dtype, kwargs, **params):
    return _create(op_name, [], dict(kwargs, shape=shape, dtype=dtype or 'float32', **params),
                   func_name=op_name)


def zeros(shape, dtype=None, **kwargs):
    return _creation('_zeros', shape, dtype, kwargs)


def ones(shape, dtype=None, **kwargs):
    return _creation('_ones', shape, dtype, kwargs)


def full(shape, val, dtype=None, **kwargs):
    return _creation('_full', shape, dtype, kwargs, value=val)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    return _create('_arange', [], dict(start=start, stop=stop, step=step, repeat=repeat,
                                       infer_range=infer_range, dtype=dtype or 'float32',
                                       name=name), func_name='_arange')


def eye(N, M=0, k=0, dtype=None, **kwargs):
    return _create('_eye', [], dict(kwargs, N=N, M=M, k=k, dtype=dtype or 'float32'),
                   func_name='_eye')


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """`num` evenly spaced values from start to stop (included when endpoint)."""
    return _create('_linspace', [], dict(start=start, stop=stop, num=num, endpoint=endpoint,
                                         dtype=dtype or 'float32', name=name),
                   func_name='_linspace')


def _split_v2_params(indices_or_sections):
    """MXNet's split_v2 arguments as _split_v2's params: an int is a number of equal sections,
    a tuple the split points (0 is prepended)."""
    if isinstance(indices_or_sections, int):
        return {'indices': (), 'sections': indices_or_sections}
    if isinstance(indices_or_sections, (tuple, list)):
        # a list, as MXNet's helper passes it (the JSON attr reads "[0, 2]")
        return {'indices': [0] + list(indices_or_sections), 'sections': 0}
    raise ValueError('split_v2: indices_or_sections must be an int or a tuple, got %r'
                     % (indices_or_sections,))


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split `ary` along `axis` into equal sections (an int) or at the given indices."""
    return _create('_split_v2', [ary], dict(_split_v2_params(indices_or_sections), axis=axis,
                                            squeeze_axis=squeeze_axis), func_name='_split_v2')


def _binary_helper(array_op, scalar_op, python_fn, rscalar_op=None):
    def helper(left, right):
        if isinstance(left, Symbol) and isinstance(right, Symbol):
            return _create(array_op, [left, right], {})
        if isinstance(left, Symbol) and isinstance(right, numeric_types):
            return _create(scalar_op, [left], {'scalar': right})
        if isinstance(left, numeric_types) and isinstance(right, Symbol):
            return _create(rscalar_op or scalar_op, [right], {'scalar': left})
        if isinstance(left, numeric_types) and isinstance(right, numeric_types):
            return python_fn(left, right)
        raise TypeError('types (%s, %s) not supported' % (type(left), type(right)))
    return helper


maximum = _binary_helper('_Maximum', '_MaximumScalar', max)
minimum = _binary_helper('_Minimum', '_MinimumScalar', min)
hypot = _binary_helper('_Hypot', '_HypotScalar', lambda a, b: (a * a + b * b) ** 0.5)
power = _binary_helper('_Power', '_PowerScalar', pow, '_RPowerScalar')
pow = power  # noqa: A001  (MXNet's name)


Symbol.split_v2 = lambda self, *args, **kwargs: split_v2(self, *args, **kwargs)


def histogram(a, bins=10, range=None, **kwargs):
    """(counts, bin edges) of a's values: `bins` equal bins over `range` (both required for an
    int), or the bins whose edges the Symbol `bins` holds."""
    if isinstance(bins, Symbol):
        return _create('_histogram', [], dict(kwargs, data=a, bins=bins), func_name='_histogram')
    if isinstance(bins, int) and not isinstance(bins, bool):
        if range is None:
            raise ValueError('histogram: range is required in symbol mode')
        return _create('_histogram', [], dict(kwargs, data=a, bin_cnt=bins, range=range),
                       func_name='_histogram')
    raise ValueError('histogram: bins must be an integer or a Symbol, got %s'
                     % type(bins).__name__)
