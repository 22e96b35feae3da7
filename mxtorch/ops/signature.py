"""What a generated `mx.nd.<op>` / `mx.sym.<op>` function shows: an `inspect.Signature` and a
NumPy-style docstring, both read from the operator's declaration (its inputs and parameter
schema). The call itself is still parsed by calling.py; this only describes it, for help(),
IDEs and the `.pyi` stubs (mxtorch/_stubgen.py)."""
import inspect

from .params import Bool, DType, Enum, Float, Int, Params, Shape, Str

_P = inspect.Parameter
_ARRAY = {'nd': 'NDArray', 'sym': 'Symbol'}


def default_inputs(op):
    """The op's input names for its default parameters; None when they need given values
    (or the op takes any number of inputs)."""
    if op.variadic:
        return None
    try:
        p = Params((k, None if v.required else v.default) for k, v in op.params.items())
        return op.input_names(p)
    except Exception:            # noqa: BLE001 (input lists computed from required params)
        return None


def annotation(param):
    """The Python type of a parameter, as stub text."""
    if isinstance(param, DType):
        text = 'str | type'
    elif isinstance(param, Enum):
        text = 'Literal[%s]' % ', '.join(repr(c) for c in sorted(param.choices))
    elif isinstance(param, Bool):
        text = 'bool'
    elif isinstance(param, Int):
        text = 'int'
    elif isinstance(param, Float):
        text = 'float'
    elif isinstance(param, Shape):
        text = 'tuple[int, ...] | int'
    elif isinstance(param, Str):
        text = 'str'
    else:
        text = 'Any'
    if param.optional and text != 'Any':
        text += ' | None'
    return text


def _default(param):
    if param.required:
        return _P.empty
    value = param.default
    return tuple(value) if isinstance(value, list) else value


def _input_params(op, kind):
    array = _ARRAY[kind]
    names = default_inputs(op)
    if names is None:
        return [_P('data', _P.VAR_POSITIONAL, annotation=array)]
    return [_P(n, _P.POSITIONAL_OR_KEYWORD, default=None, annotation='%s | None' % array)
            for n in names]


def signature(op, kind):
    """inspect.Signature of the generated function; kind 'nd' or 'sym'."""
    params = _input_params(op, kind)
    taken = {p.name for p in params}
    for name, param in op.params.items():
        if name in taken or not name.isidentifier() or name == op.variadic:
            continue
        taken.add(name)
        params.append(_P(name, _P.KEYWORD_ONLY, default=_default(param),
                         annotation=annotation(param)))
    extras = (('out', 'NDArray | None'), ('name', 'str | None'), ('ctx', 'Context | None')) \
        if kind == 'nd' else (('name', 'str | None'), ('attr', 'dict[str, str] | None'),
                              ('out', 'None'))
    for name, note in extras:
        if name not in taken:
            params.append(_P(name, _P.KEYWORD_ONLY, default=None, annotation=note))
    params.append(_P('kwargs', _P.VAR_KEYWORD, annotation='Any'))
    return inspect.Signature(params, return_annotation=_returns(op, kind))


def _returns(op, kind):
    """Symbol; an NDArray, or a list of them where the op has several visible outputs."""
    if kind == 'sym':
        return 'Symbol'
    try:
        p = Params((k, None if v.required else v.default) for k, v in op.params.items())
        single = op.num_visible_outputs(p) == 1
    except Exception:            # noqa: BLE001 (output counts computed from required params)
        single = False
    return 'NDArray' if single else 'NDArray | list[NDArray]'


def docstring(op, kind):
    """The operator's description, then its inputs and parameters as MXNet documents them."""
    array = _ARRAY[kind]
    lines = [op.doc.strip() or '%s operator.' % op.name, '', 'Parameters', '----------']
    names = default_inputs(op)
    if names is None:
        lines += ['*data : %s' % array, '    the input arrays (any number).']
    for name in names or ():
        lines += ['%s : %s' % (name, array), '    input %r.' % name]
    for name, param in op.params.items():
        if name == op.variadic:
            continue
        lines.append('%s : %s' % (name, param.type_string()))
        if param.doc:
            lines.append('    ' + param.doc)
    if kind == 'nd':
        lines += ['out : NDArray, optional', '    the output array to write into.']
    lines += ['name : string, optional', '    name of the resulting %s.' % array.lower(),
              '', 'Returns', '-------', '%s' % array]
    if op.aliases:
        lines += ['', 'Also available as: %s' % ', '.join(op.aliases)]
    return '\n'.join(lines) + '\n'


def describe(function, op, kind):
    """Give the generated `function` its signature and docstring."""
    try:
        function.__signature__ = signature(op, kind)
    except (ValueError, TypeError):
        pass                     # a schema no Python signature can spell: (*args, **kwargs)
    function.__doc__ = docstring(op, kind)
    return function
