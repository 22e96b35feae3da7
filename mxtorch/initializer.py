"""mx.init / mx.initializer: how parameters get their first values.

An initializer is called as `init(desc, arr)`. `desc` is normally an `InitDesc` (the parameter's
name plus its symbol attributes); an `__init__` attribute (the JSON of another initializer)
overrides everything, otherwise the end of the name picks the rule: `weight` -> the initializer's
own rule, `bias`/`beta` -> 0, `gamma` -> 1, `min` -> 0, `max` -> 1. Arrays are written in place;
random values come from torch's global generator (`mx.random.seed`).
"""
import json
import logging
import math
import re
import warnings

import numpy as np
import torch

from .ndarray import NDArray, load as _nd_load

_REGISTRY = {}


class InitDesc(str):
    """A parameter name carrying the variable's attributes and the global initializer."""

    def __new__(cls, name, attrs=None, global_init=None):
        desc = super().__new__(cls, name)
        desc.attrs = attrs or {}
        desc.global_init = global_init
        return desc


def register(klass):
    """Class decorator: make `klass` creatable by its lower-cased class name."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise TypeError('register expects a subclass of Initializer, got %r' % (klass,))
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*names):
    """Class decorator: also make the class creatable under each of `names`."""
    def decorate(klass):
        register(klass)
        for name in names:
            _REGISTRY[name.lower()] = klass
        return klass
    return decorate


def create(initializer, *args, **kwargs):
    """An Initializer from an instance, a registered name, or a JSON string.

    JSON may be `["name", {kwargs}]` (what `dumps()` writes) or
    `{"initializer": "name", ...kwargs}`.
    Extra positional/keyword arguments go to the constructor of a named initializer.
    """
    if isinstance(initializer, Initializer):
        if args or kwargs:
            raise TypeError('create: extra arguments %r %r cannot be applied to an existing %s'
                            % (args, kwargs, type(initializer).__name__))
        return initializer
    if not isinstance(initializer, str):
        raise TypeError('create: initializer must be an Initializer or a str (name or JSON), '
                        'got %s' % type(initializer).__name__)
    name = initializer
    text = initializer.strip()
    if text.startswith('['):
        name, json_kwargs = json.loads(text)
        kwargs = dict(json_kwargs, **kwargs)
    elif text.startswith('{'):
        json_kwargs = json.loads(text)
        if 'initializer' not in json_kwargs:
            raise ValueError('create: JSON object %s has no "initializer" key naming the class'
                             % text)
        name = json_kwargs.pop('initializer')
        kwargs = dict(json_kwargs, **kwargs)
    klass = _REGISTRY.get(name.lower())
    if klass is None:
        raise ValueError('create: unknown initializer %r; registered names are %s'
                         % (name, ', '.join(sorted(_REGISTRY))))
    return klass(*args, **kwargs)


def _default_print_func(arr):
    t = arr._tensor.detach().double()
    return str(float(t.norm() / math.sqrt(max(t.numel(), 1))))


def _uniform(arr, low, high):
    t = arr._tensor
    with torch.no_grad():
        if t.is_floating_point():
            t.uniform_(low, high)
        else:
            t.copy_(torch.empty(t.shape, device=t.device).uniform_(low, high))


def _normal(arr, sigma):
    t = arr._tensor
    with torch.no_grad():
        if t.is_floating_point():
            t.normal_(0.0, sigma)
        else:
            t.copy_(torch.empty(t.shape, device=t.device).normal_(0.0, sigma))


def _write(arr, tensor):
    """Copy `tensor` (same number of elements) into `arr` in place, casting to its dtype."""
    t = arr._tensor
    with torch.no_grad():
        t.copy_(tensor.reshape(t.shape))


class Initializer:
    """Base class. Subclasses define `_init_weight(desc, arr)`; pass their constructor
    arguments to `super().__init__(**kwargs)` so that `dumps()` and `==` see them."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Log `Initialized <name> as <rule>: <print_func(arr)>` for every array initialised
        (print_func defaults to the root mean square of the array)."""
        self._verbose = verbose
        self._print_func = print_func if print_func is not None else _default_print_func
        return self

    def _verbose_print(self, desc, rule, arr):
        if self._verbose:
            logging.info('Initialized %s as %s: %s', desc, rule, self._print_func(arr))

    def dumps(self):
        """JSON `["<lower-cased class name>", {constructor kwargs}]`, readable by `create`."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __eq__(self, other):
        return type(self) is type(other) and self._kwargs == other._kwargs

    def __call__(self, desc, arr):
        if not isinstance(arr, NDArray):
            raise TypeError('%s: arr must be an NDArray, got %s'
                            % (type(self).__name__, type(arr).__name__))
        if not isinstance(desc, str):
            raise TypeError('%s: desc must be an InitDesc (or a str name), got %s'
                            % (type(self).__name__, type(desc).__name__))
        if not isinstance(desc, InitDesc):
            self._legacy_init(desc, arr)
            return
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get('__init__', '')
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        rules = (('weight', self._init_weight), ('bias', self._init_bias),
                 ('gamma', self._init_gamma), ('beta', self._init_beta),
                 ('min', self._init_zero), ('max', self._init_one),
                 ('weight_quantize', self._init_quantized_weight),
                 ('bias_quantize', self._init_quantized_bias))
        for suffix, rule in rules:
            if desc.endswith(suffix):
                rule(desc, arr)
                self._verbose_print(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _legacy_init(self, name, arr):
        """init(str, arr): the old name rules, kept for scripts written before InitDesc."""
        warnings.warn('Calling an initializer as init(str, NDArray) is deprecated; '
                      'use init(mx.init.InitDesc(name), NDArray) instead.', DeprecationWarning,
                      stacklevel=3)
        if name.startswith('upsampling'):
            self._init_bilinear(name, arr)
        elif name.startswith('stn_loc') and name.endswith('weight'):
            self._init_zero(name, arr)
        elif name.startswith('stn_loc') and name.endswith('bias'):
            self._init_loc_bias(name, arr)
        else:
            rules = (('bias', self._init_bias), ('gamma', self._init_gamma),
                     ('beta', self._init_beta), ('weight', self._init_weight),
                     ('moving_mean', self._init_zero), ('moving_var', self._init_one),
                     ('moving_inv_var', self._init_zero), ('moving_avg', self._init_zero),
                     ('min', self._init_zero), ('max', self._init_one))
            for suffix, rule in rules:
                if name.endswith(suffix):
                    rule(name, arr)
                    return
            self._init_default(name, arr)

    # ---- rules; subclasses override the ones they change ----------------------------------
    def _init_weight(self, desc, arr):
        raise TypeError('%s defines no rule for weights (cannot initialise %s): subclasses of '
                        'Initializer must define _init_weight(desc, arr)'
                        % (type(self).__name__, desc))

    def _init_default(self, desc, arr):
        raise ValueError(
            'Unknown initialization pattern for %s. Default initialization is now limited to '
            '"weight", "bias", "gamma" (1.0), and "beta" (0.0).'
            'Please use mx.sym.Variable(init=mx.init.*) to set initialization pattern' % desc)

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_quantized_weight(self, _, arr):
        t = arr._tensor
        with torch.no_grad():
            t.copy_(torch.randint(-127, 128, t.shape, device=t.device))

    def _init_quantized_bias(self, _, arr):
        arr[:] = 0

    def _init_loc_bias(self, _, arr):
        if arr.shape != (6,):
            raise ValueError('the stn_loc bias must have shape (6,) (an affine transform), '
                             'got %s' % (arr.shape,))
        arr[:] = np.array([1.0, 0, 0, 0, 1.0, 0])

    def _init_bilinear(self, _, arr):
        if arr.ndim < 2:
            raise ValueError('bilinear initialization needs an array of at least 2 dimensions '
                             '(..., kh, kw), got shape %s' % (arr.shape,))
        kh, kw = arr.shape[-2], arr.shape[-1]
        f = math.ceil(kw / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        index = torch.arange(arr.size, dtype=torch.float64)
        x = index % kw
        y = torch.div(index, kw, rounding_mode='floor') % kh
        _write(arr, (1 - (x / f - c).abs()) * (1 - (y / f - c).abs()))


class Load:
    """Initialise from saved arrays (a dict or an `mx.nd.save` file); `arg:`/`aux:` prefixes
    are dropped. Names not found go to `default_init`. Not an Initializer: no `dumps()`."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            param = _nd_load(param)
        if not isinstance(param, dict):
            raise TypeError('Load: param must be a dict of name -> NDArray or a file of named '
                            'arrays, got %s' % type(param).__name__)
        self.param = {}
        for name, arr in param.items():
            if name.startswith('arg:') or name.startswith('aux:'):
                name = name[4:]
            self.param[name] = arr
        self.default_init = create(default_init) if isinstance(default_init, str) else default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        if name in self.param:
            loaded = self.param[name]
            if arr.shape != loaded.shape:
                raise AssertionError(
                    'Parameter %s cannot be initialized from loading. Shape mismatch, '
                    'target %s vs loaded %s' % (name, arr.shape, loaded.shape))
            arr[:] = loaded
            if self.verbose:
                logging.info('Initialized %s by loading', name)
            return
        if self.default_init is None:
            raise AssertionError('Cannot Initialize %s. Not found in loaded param and no '
                                 'default Initializer is provided.' % name)
        self.default_init(name, arr)
        if self.verbose:
            logging.info('Initialized %s by default', name)


class Mixed:
    """Route each parameter to the initializer of the first regex in `patterns` that matches
    its name (`re.match`). Not an Initializer: no `dumps()`."""

    def __init__(self, patterns, initializers):
        if len(patterns) != len(initializers):
            raise ValueError('Mixed: patterns and initializers must have the same length, got '
                             '%d patterns and %d initializers' % (len(patterns), len(initializers)))
        self.map = [(re.compile(pattern), create(init) if isinstance(init, str) else init)
                    for pattern, init in zip(patterns, initializers)]

    def __call__(self, name, arr):
        for pattern, init in self.map:
            if pattern.match(name):
                init(name, arr)
                return
        raise ValueError('Mixed: parameter name %s did not match any pattern; consider adding '
                         'a ".*" pattern at the end with a default initializer' % name)


@alias('zeros')
class Zero(Initializer):
    """Fill with 0."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 0.0


@alias('ones')
class One(Initializer):
    """Fill with 1."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, _, arr):
        arr[:] = 1.0


@register
class Constant(Initializer):
    """Fill with `value`: a scalar, or an array-like broadcast to the parameter's shape."""

    def __init__(self, value):
        if isinstance(value, NDArray):
            value = value.asnumpy()
        super().__init__(value=np.asarray(value).tolist())
        self.value = value

    def _init_weight(self, _, arr):
        arr[:] = self.value


@register
class Uniform(Initializer):
    """U(-scale, scale)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        _uniform(arr, -self.scale, self.scale)


@register
class Normal(Initializer):
    """N(0, sigma)."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        _normal(arr, self.sigma)


@register
class Orthogonal(Initializer):
    """A random (rows or columns) orthonormal matrix times `scale`, reshaped to the parameter.

    The array is viewed as (shape[0], prod(shape[1:])); a U(-1, 1) (`rand_type='uniform'`) or
    N(0, 1) (`'normal'`) matrix is decomposed by SVD and its orthonormal factor of that shape kept.
    """

    def __init__(self, scale=1.414, rand_type='uniform'):
        if rand_type not in ('uniform', 'normal'):
            raise ValueError("Orthogonal: rand_type must be 'uniform' or 'normal', got %r"
                             % (rand_type,))
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale = scale
        self.rand_type = rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        device = arr._tensor.device
        if self.rand_type == 'uniform':
            tmp = torch.empty(nout, nin, dtype=torch.float64, device=device).uniform_(-1.0, 1.0)
        else:
            tmp = torch.randn(nout, nin, dtype=torch.float64, device=device)
        u, _, v = torch.linalg.svd(tmp, full_matrices=False)
        q = u if u.shape == tmp.shape else v
        _write(arr, self.scale * q)


@register
class Xavier(Initializer):
    """Glorot/Xavier: scale = sqrt(magnitude / factor), factor = the average of fan_in and
    fan_out ('avg'), fan_in ('in') or fan_out ('out'); values from U(-scale, scale)
    (`rnd_type='uniform'`) or N(0, scale) (`'gaussian'`). Needs at least 2 dimensions."""

    def __init__(self, rnd_type='uniform', factor_type='avg', magnitude=3):
        if rnd_type not in ('uniform', 'gaussian'):
            raise ValueError("Xavier: rnd_type must be 'uniform' or 'gaussian', got %r"
                             % (rnd_type,))
        if factor_type not in ('avg', 'in', 'out'):
            raise ValueError("Xavier: factor_type must be 'avg', 'in' or 'out', got %r"
                             % (factor_type,))
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, desc, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise ValueError('Xavier initializer cannot be applied to vector %s. It requires at '
                             'least 2D.' % desc)
        receptive = int(np.prod(shape[2:]))
        fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
        factor = {'avg': (fan_in + fan_out) / 2.0, 'in': fan_in, 'out': fan_out}[self.factor_type]
        scale = math.sqrt(self.magnitude / factor)
        if self.rnd_type == 'uniform':
            _uniform(arr, -scale, scale)
        else:
            _normal(arr, scale)


@register
class MSRAPrelu(Xavier):
    """He/MSRA init for PReLU nets: Xavier('gaussian', factor_type, 2 / (1 + slope**2))."""

    def __init__(self, factor_type='avg', slope=0.25):
        super().__init__('gaussian', factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {'factor_type': factor_type, 'slope': slope}


@register
class Bilinear(Initializer):
    """Bilinear-upsampling weights for a (..., kh, kw) deconvolution kernel."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, desc, arr):
        self._init_bilinear(desc, arr)


@register
class LSTMBias(Initializer):
    """LSTM i2h bias: zeros except the forget-gate block (the 2nd of 4: i, f, c, o)."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _, arr):
        hidden = arr.shape[0] // 4
        arr[:] = 0.0
        arr[hidden:2 * hidden] = self.forget_bias


_RNN_GATES = {'lstm': ['_i', '_f', '_c', '_o'], 'gru': ['_r', '_z', '_o'],
              'rnn_relu': [''], 'rnn_tanh': ['']}


def rnn_param_layout(size, num_hidden, num_layers, mode, bidirectional):
    """[(name, offset, shape)] of the pieces of a fused RNN's flat parameter vector of `size`.

    Order (the RNN operator's): every weight matrix first -- per layer, per direction (l, then
    r), i2h then h2h, per gate -- then every bias in the same order. Names look like
    `l0_i2h_f_weight`, `r1_h2h_o_bias` (`l0_i2h_weight` for the single-gate rnn modes).
    """
    if mode not in _RNN_GATES:
        raise ValueError('FusedRNN: mode must be one of %s, got %r' % (sorted(_RNN_GATES), mode))
    if num_hidden < 1 or num_layers < 1:
        raise ValueError('FusedRNN: num_hidden and num_layers must be >= 1, got %d and %d'
                         % (num_hidden, num_layers))
    gates = _RNN_GATES[mode]
    g, h, d, layers = len(gates), num_hidden, 2 if bidirectional else 1, num_layers
    rest = (layers - 1) * g * h * d * (d * h + h + 2)
    first, remainder = divmod(size - rest, g * h * d)
    input_size = first - h - 2
    if remainder or input_size < 1:
        raise ValueError('FusedRNN: a flat parameter of %d elements does not fit mode=%s, '
                         'num_hidden=%d, num_layers=%d, bidirectional=%s'
                         % (size, mode, num_hidden, num_layers, bidirectional))
    directions = ['l', 'r'][:d]
    layout, offset = [], 0
    for layer in range(layers):
        in_size = input_size if layer == 0 else d * h
        for direction in directions:
            for conn, cols in (('i2h', in_size), ('h2h', h)):
                for gate in gates:
                    name = '%s%d_%s%s_weight' % (direction, layer, conn, gate)
                    layout.append((name, offset, (h, cols)))
                    offset += h * cols
    for layer in range(layers):
        for direction in directions:
            for conn in ('i2h', 'h2h'):
                for gate in gates:
                    name = '%s%d_%s%s_bias' % (direction, layer, conn, gate)
                    layout.append((name, offset, (h,)))
                    offset += h
    return layout


@register
class FusedRNN(Initializer):
    """Initialise the flat parameter vector of the fused RNN operator piece by piece.

    Each weight/bias piece (see `rnn_param_layout`) is initialised by `init` -- or by the
    global initializer when `init` is None -- under its own name, so bias pieces get 0; for
    lstm every forget-gate bias piece (i2h and h2h) is set to `forget_bias`.
    """

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        if init is not None:
            init = create(init)
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._forget_bias = forget_bias

    def _init_weight(self, desc, arr):
        global_init = getattr(desc, 'global_init', None)
        init = self._init if self._init is not None else global_init
        if init is None or isinstance(init, FusedRNN):
            raise ValueError('FusedRNN: cannot initialise the pieces of %s: give FusedRNN an '
                             'init, or call it through a global initializer (InitDesc with '
                             'an __init__ attribute)' % desc)
        flat = arr._tensor.detach().reshape(-1).clone()
        layout = rnn_param_layout(flat.numel(), self._num_hidden, self._num_layers,
                                  self._mode, self._bidirectional)
        for name, offset, shape in layout:
            count = int(np.prod(shape))
            # each piece is initialised in place, as a view of the (private) flat copy
            piece = NDArray(flat[offset:offset + count].view(shape), arr.context)
            if self._mode == 'lstm' and name.endswith('_f_bias'):
                piece[:] = self._forget_bias
            else:
                init(InitDesc(name, global_init=global_init), piece)
            if piece._tensor.data_ptr() != flat[offset:].data_ptr():   # the array was replaced
                flat[offset:offset + count] = piece._tensor.reshape(-1)
        _write(arr, flat)
