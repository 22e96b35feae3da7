"""Typed operator parameters.

MXNet stores every operator parameter as a string (what `str(value)` gave, or what a JSON file
holds). Each operator declares a schema of `Param`s; `Param.parse` turns either the string or the
original Python value into a typed value, once, with an error that names the operator, the key,
what was expected and what was given.
"""
import abc
import ast
import re

import numpy as np

from ..base import MXNetError, dtype_name

REQUIRED = object()   # default of a parameter that must be given


class Params(dict):
    """Parsed parameters of one operator instance; read them as attributes (`p.num_hidden`)."""
    __slots__ = ()

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __hash__(self):
        return hash(tuple(sorted((k, _hashable(v)) for k, v in self.items())))


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


class Param(abc.ABC):
    """One parameter: its kind, default and (for enums) allowed values."""
    kind = 'param'

    def __init__(self, default=REQUIRED, optional=False, doc=''):
        self.default = default
        self.optional = optional or default is None
        self.doc = doc

    @property
    def required(self):
        return self.default is REQUIRED

    def parse(self, value):
        """Typed value of `value` (a string from attrs, or a Python value)."""
        if value is None or (isinstance(value, str) and value.strip() == 'None'):
            if self.optional:
                return None
            raise ValueError('None is not allowed')
        return self._parse(plain_value(value))

    @abc.abstractmethod
    def _parse(self, value):
        """The typed value of a non-None string or Python value; ValueError if invalid."""

    def describe(self):
        d = '' if self.required else ', default=%s' % (self.default,)
        return '%s%s%s' % (self.kind, ', optional' if self.optional else '', d)

    def type_string(self):
        """The parameter's type as MXNet's operator documentation writes it
        ('int, required', 'boolean, optional, default=0', ...)."""
        if self.required:
            return '%s, required' % self.kind
        kind = self.kind + (' or None' if self.default is None else '')
        return '%s, optional, default=%s' % (kind, self._default_string())

    def _default_string(self):
        if isinstance(self.default, bool):
            return str(int(self.default))
        if isinstance(self.default, (tuple, list)):
            return '[%s]' % ','.join(str(v) for v in self.default)
        return str(self.default)


def _as_literal(text):
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise ValueError('cannot parse %r' % text) from None


def _check_bounds(value, lower, upper):
    """MXNet's range checks of a parameter (its set_lower_bound / set_range)."""
    if lower is not None and upper is not None and not lower <= value <= upper:
        raise ValueError('value %s exceed bound [%s,%s]' % (value, lower, upper))
    if lower is not None and value < lower:
        raise ValueError('value %s should be greater equal to %s' % (value, lower))
    return value


class Int(Param):
    """An integer; `lower` is MXNet's lower bound of the parameter. `count=True` marks a number
    of inputs or outputs (num_args, num_outputs): beyond MXTORCH_MAX_GRAPH_COUNT it is refused,
    so that a file cannot make a graph node with billions of input or output names."""
    kind = 'int'

    def __init__(self, default=REQUIRED, optional=False, doc='', lower=None, count=False):
        super().__init__(default, optional, doc)
        self.lower, self.count = lower, count

    def _parse(self, value):
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        elif isinstance(value, (int, np.integer)):
            value = int(value)
        elif isinstance(value, str) and value.strip().lstrip('+-').isdigit():
            value = int(value.strip())
        else:
            raise ValueError('expected an integer')
        if self.count:
            from .._safety import limits
            if value > limits.MAX_GRAPH_COUNT:
                raise ValueError('value %d is beyond the limit of %d inputs or outputs '
                                 '(MXTORCH_MAX_GRAPH_COUNT)' % (value, limits.MAX_GRAPH_COUNT))
        return _check_bounds(value, self.lower, None)


class Float(Param):
    """A number; `lower` / `upper` are MXNet's bounds of the parameter."""
    kind = 'float'

    def __init__(self, default=REQUIRED, optional=False, doc='', lower=None, upper=None):
        super().__init__(default, optional, doc)
        self.lower, self.upper = lower, upper

    def _parse(self, value):
        return _check_bounds(self._number(value), self.lower, self.upper)

    def _number(self, value):
        if isinstance(value, str):
            text = value.strip()
            try:
                return float(text)
            except ValueError:
                raise ValueError('expected a number') from None
        if isinstance(value, (int, float, np.number, np.bool_)):
            return float(value)
        raise ValueError('expected a number')


class Bool(Param):
    kind = 'boolean'
    _TEXT = {'true': True, 'false': False, '1': True, '0': False}

    def _parse(self, value):
        if isinstance(value, (bool, np.bool_, int, np.integer)):
            if value not in (0, 1):
                raise ValueError('expected a boolean')
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in self._TEXT:
            return self._TEXT[value.strip().lower()]
        raise ValueError('expected a boolean')


class Shape(Param):
    """A tuple of ints: "(3, 3)", "[3,3]", "(3,)", a bare "3", or a Python tuple/list/int.

    allow_none: entries may be None (slice begin/end).
    """
    kind = 'Shape(tuple)'

    def __init__(self, default=REQUIRED, optional=False, allow_none=False, doc=''):
        super().__init__(default, optional, doc)
        self.allow_none = allow_none

    def _parse(self, value):
        if isinstance(value, str):
            value = _as_literal(value) if value.strip() else ()
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            value = (value,)
        if isinstance(value, np.ndarray) and value.ndim <= 1 and value.dtype.kind in 'iu':
            value = value.reshape(-1).tolist()      # MXNet reads str(array): '[5]'
        if not isinstance(value, (tuple, list)):
            raise ValueError('expected a shape tuple')
        out = []
        for v in value:
            if v is None and self.allow_none:
                out.append(None)
            elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                out.append(int(v))
            else:
                raise ValueError('expected a shape tuple of integers')
        return tuple(out)


class Enum(Param):
    kind = 'enum'

    def __init__(self, choices, default=REQUIRED, optional=False, doc=''):
        super().__init__(default, optional, doc)
        self.choices = tuple(choices)

    def _parse(self, value):
        text = value if isinstance(value, str) else str(value)
        text = text.strip()
        if text not in self.choices:
            raise ValueError('valid values are {%s}' % ', '.join(repr(c) for c in self.choices))
        return text

    def describe(self):
        return '{%s}%s' % (', '.join(self.choices), super().describe()[len(self.kind):])

    def type_string(self):
        choices = ', '.join(repr(c) for c in sorted(self.choices))
        if self.required:
            return '{%s}, required' % choices
        if self.optional:
            choices = 'None, ' + choices
        return "{%s},optional, default='%s'" % (choices, self.default)


class DType(Enum):
    """A dtype name; NumPy types and dtypes are normalised to their names ('float16')."""
    kind = 'dtype'
    ALL = ('bfloat16', 'bool', 'float16', 'float32', 'float64', 'int32', 'int64', 'int8', 'uint8')

    def __init__(self, default=REQUIRED, optional=False, choices=ALL, doc=''):
        super().__init__(choices, default, optional, doc)

    def _parse(self, value):
        if not isinstance(value, str):
            try:
                value = dtype_name(value)
            except TypeError:
                raise ValueError('expected a dtype') from None
        return super()._parse(value)


class Str(Param):
    kind = 'string'

    def _default_string(self):
        return repr(str(self.default)) if self.default is not None else 'None'

    def _parse(self, value):
        return str(value)


# Keys every operator accepts and ignores (tuning hints of MXNet's kernels, quantisation ranges).
IGNORED_KEYS = frozenset({'workspace', 'cudnn_tune', 'cudnn_off', 'min_calib_range',
                          'max_calib_range', 'is_int'})


def parse_params(op_name, schema, attrs):
    """Parse an attrs dict (keys -> strings or Python values) against `schema`.

    Attribute keys (`__x__`) and IGNORED_KEYS are skipped. Unknown keys, missing required
    parameters and unparsable values raise MXNetError naming the operator and the key.
    """
    values = {}
    for key, raw in attrs.items():
        if key.startswith('__') and key.endswith('__'):
            continue
        param = schema.get(key)
        if param is None:
            if key in IGNORED_KEYS or not schema:
                continue            # an operator without parameters ignores them, as MXNet's
            raise MXNetError("Cannot find argument '%s' of operator %s, Possible Arguments: %s"
                             % (key, op_name, ', '.join(sorted(schema)) or '(none)'))
        try:
            values[key] = param.parse(raw)
        except ValueError as err:
            raise MXNetError("Invalid parameter %s=%r of operator %s: expected %s; %s"
                             % (key, raw, op_name, param.describe(), err)) from None
    for key, param in schema.items():
        if key not in values:
            if param.required:
                raise MXNetError('Required parameter %s (%s) of operator %s is not given'
                                 % (key, param.kind, op_name))
            values[key] = param.default
    return Params(values)


# NumPy 2 prints scalars as `np.int64(3)`, so str((np.int64(3),)) is '(np.int64(3),)'
_NUMPY_SCALAR_REPR = re.compile(r'\b(?:np|numpy)\.(?:u?int\d*|float\d*|bool_?|intp|uintp|'
                                r'longlong|ulonglong|double|single|half|str_)\(([^()]*)\)')


def plain_value(value):
    """`value` with NumPy scalars made Python numbers, in tuples and lists too, and their NumPy 2
    reprs (`np.int64(3)`) in attribute strings replaced by the number: MXNet accepts a NumPy
    integer wherever it accepts an int."""
    if isinstance(value, str):
        return _NUMPY_SCALAR_REPR.sub(r'\1', value) if 'np' in value else value
    if isinstance(value, np.generic) and not isinstance(value, (np.str_, np.bytes_)):
        return value.item()
    if isinstance(value, (tuple, list)):
        return type(value)(plain_value(v) for v in value)
    return value


def format_attr_value(value):
    """The string MXNet stores for a Python parameter value (str(), dtypes by name, NumPy
    scalars as the plain numbers MXNet's NumPy 1 wrote)."""
    if isinstance(value, str):
        return plain_value(value)
    if isinstance(value, (np.generic, tuple, list)):
        value = plain_value(value)
    if isinstance(value, (type, np.dtype)) or (hasattr(value, 'is_floating_point')
                                               and not hasattr(value, 'shape')):
        try:
            return dtype_name(value)
        except TypeError:
            pass
    return str(value)
