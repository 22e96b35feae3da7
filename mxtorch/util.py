"""mx.util: GPU queries, environment variables and MXNet's NumPy-shape and NumPy-array switches
(mx.np / mx.npx are mxtorch.numpy / mxtorch.numpy_extension)."""
import functools
import os
import threading

import torch

from .base import MXNetError
from .context import Context


def get_gpu_count():
    """The number of GPUs torch can use."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _check_gpu(dev_id):
    if not torch.cuda.is_available():
        raise MXNetError('This call is only supported with CUDA: torch %s sees no GPU'
                         % torch.__version__)
    if not 0 <= dev_id < torch.cuda.device_count():
        raise MXNetError('GPU %d does not exist: %d GPU(s) available'
                         % (dev_id, torch.cuda.device_count()))


def get_gpu_memory(gpu_dev_id):
    """(free, total) memory of GPU `gpu_dev_id`, in bytes."""
    _check_gpu(gpu_dev_id)
    return tuple(int(v) for v in torch.cuda.mem_get_info(gpu_dev_id))


def get_cuda_compute_capability(ctx):
    """The compute capability of a gpu context's device as an int: 70 for sm_70."""
    if not isinstance(ctx, Context) or ctx.device_type != 'gpu':
        raise ValueError('Expecting a gpu context to get cuda compute capability, while '
                         'received ctx %s' % ctx)
    _check_gpu(ctx.device_id)
    major, minor = torch.cuda.get_device_capability(ctx.device_id)
    return major * 10 + minor


def getenv(name):
    """The value of environment variable `name`, or None if it is not set."""
    return os.environ.get(name)


def setenv(name, value):
    """Set environment variable `name` to `value` (None removes it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


# MXNet's NumPy-shape switch. mxtorch's shapes always follow NumPy (a 0 is a zero-size dimension,
# () a scalar); the switch is kept as MXNet's flag so that code reading or scoping it runs unchanged.
_np_shape = threading.local()


def is_np_shape():
    """Whether MXNet's NumPy-shape semantics are switched on in this thread."""
    return getattr(_np_shape, 'active', False)


def set_np_shape(active):
    """Switch NumPy-shape semantics on or off; returns the previous state."""
    prev = is_np_shape()
    _np_shape.active = bool(active)
    return prev


class _NumpyShapeScope:
    def __init__(self, active=True):
        self._active, self._prev = active, None

    def __enter__(self):
        self._prev = set_np_shape(self._active)
        return self

    def __exit__(self, *exc):
        set_np_shape(self._prev)

    def __call__(self, func):
        @functools.wraps(func)
        def scoped(*args, **kwargs):
            with _NumpyShapeScope(self._active):
                return func(*args, **kwargs)
        return scoped


def np_shape(active=True):
    """A scope (also usable as a decorator) with NumPy-shape semantics on or off."""
    return _NumpyShapeScope(active)


def use_np_shape(func):
    """Decorator: run `func` (or every method of a class) with NumPy-shape semantics on."""
    if isinstance(func, type):
        for name, attr in list(vars(func).items()):
            if callable(attr) and not name.startswith('__'):
                setattr(func, name, use_np_shape(attr))
        return func
    if not callable(func):
        raise TypeError('use_np_shape can only decorate classes and callable objects, got %s'
                        % type(func))
    return np_shape(True)(func)


# MXNet's NumPy-array switch (whether Gluon/ops produce mx.np arrays). mxtorch keeps the flag,
# thread-local and scoped as in MXNet, so that code reading, setting or scoping it runs unchanged.
class _NumpyArrayScope:
    """The NumPy-array scope: use `np_array(active)` rather than this class."""
    _current = threading.local()

    def __init__(self, is_np_array):
        self._old_scope = None
        self._is_np_array = bool(is_np_array)

    def __enter__(self):
        if not hasattr(_NumpyArrayScope._current, 'value'):
            _NumpyArrayScope._current.value = _NumpyArrayScope(False)
        self._old_scope = _NumpyArrayScope._current.value
        _NumpyArrayScope._current.value = self
        return self

    def __exit__(self, *exc):
        _NumpyArrayScope._current.value = self._old_scope

    def __call__(self, func):
        @functools.wraps(func)
        def scoped(*args, **kwargs):
            with _NumpyArrayScope(self._is_np_array):
                return func(*args, **kwargs)
        return scoped


def np_array(active=True):
    """A scope (also usable as a decorator) with NumPy-array semantics on or off."""
    return _NumpyArrayScope(active)


def is_np_array():
    """Whether MXNet's NumPy-array semantics are switched on in this thread."""
    current = getattr(_NumpyArrayScope._current, 'value', None)
    return current._is_np_array if current is not None else False


def _set_np_array(active):
    prev = is_np_array()
    _NumpyArrayScope._current.value = _NumpyArrayScope(active)
    return prev


def _scope_class_or_function(func, scope, decorator_name):
    if isinstance(func, type):
        for name, attr in list(vars(func).items()):
            if callable(attr) and not name.startswith('__'):
                setattr(func, name, scope(attr))
        return func
    if not callable(func):
        raise TypeError('%s can only decorate classes and callable objects, got %s'
                        % (decorator_name, type(func)))
    return scope(func)


def use_np_array(func):
    """Decorator: run `func` (or every method of a class) with NumPy-array semantics on."""
    return _scope_class_or_function(func, np_array(True), 'use_np_array')


def use_np(func):
    """Decorator: run `func` (or every method of a class) with both NumPy-shape and NumPy-array
    semantics on."""
    return use_np_shape(use_np_array(func))


def set_np(shape=True, array=True):
    """Switch NumPy-shape and NumPy-array semantics globally (this thread). NumPy arrays need
    NumPy shapes: array=True with shape=False is refused."""
    if not shape and array:
        raise ValueError('NumPy Shape semantics is required in using NumPy array semantics.')
    _set_np_array(array)
    set_np_shape(shape)


def reset_np():
    """Switch NumPy-shape and NumPy-array semantics off."""
    set_np(shape=False, array=False)


def set_module(module):
    """Decorator: set the decorated function's or class's `__module__` to `module` (kept when
    None), as MXNet marks its public functions (`@set_module('mxnet.numpy')`)."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


# NumPy's ufunc keyword arguments and their defaults: the only values MXNet's ufuncs accept
_np_ufunc_default_kwargs = {'where': True, 'casting': 'same_kind', 'order': 'K', 'dtype': None,
                            'subok': True}


def np_ufunc_legal_option(key, value):
    """Whether `key=value` is a legal NumPy ufunc option (one MXNet's ufuncs may not implement):
    where anything, casting one of NumPy's rules, order a string, dtype one of MXNet's eight
    basic types (name or NumPy type), subok a bool."""
    if key == 'where':
        return True
    if key == 'casting':
        return value in ('no', 'equiv', 'safe', 'same_kind', 'unsafe')
    if key == 'order':
        return isinstance(value, str)
    if key == 'dtype':
        import numpy as _np
        # a set, as MXNet's: membership by hash (a np.dtype instance is not among them)
        legal = {_np.int8, _np.uint8, _np.int32, _np.int64, _np.float16, _np.float32,
                 _np.float64, 'int8', 'uint8', 'int32', 'int64', 'float16', 'float32',
                 'float64'}
        return value in legal
    if key == 'subok':
        return isinstance(value, bool)
    return False


def _check_ufunc_kwargs(func, kwargs, binary):
    """MXNet's errors for ufunc keyword arguments: TypeError for a key that is not a ufunc
    option or a value not understood, NotImplementedError for a legal non-default value."""
    for key, value in kwargs.items():
        if key not in _np_ufunc_default_kwargs:
            raise TypeError("{} is an invalid keyword to function '{}'".format(key, func.__name__))
        if value != _np_ufunc_default_kwargs[key]:
            if np_ufunc_legal_option(key, value):
                if binary:
                    raise NotImplementedError('{}={} is not implemented yet'.format(key, value))
                raise NotImplementedError('{}={} is not implemented yet for operator {}'
                                          .format(key, value, func.__name__))
            if binary:
                raise TypeError('{} {} not understood'.format(key, value))
            raise TypeError('{}={} not understood for operator {}'
                            .format(key, value, func.__name__))


def wrap_np_unary_func(func):
    """Decorator for a NumPy-style unary function `func(x, out=None)`: NumPy's ufunc keywords
    are accepted at their defaults; other values raise MXNet's errors (see
    _check_ufunc_kwargs)."""
    @functools.wraps(func)
    def _wrap_np_unary_func(x, out=None, **kwargs):
        _check_ufunc_kwargs(func, kwargs, binary=False)
        return func(x, out=out)
    return _wrap_np_unary_func


def wrap_np_binary_func(func):
    """Decorator for a NumPy-style binary function `func(x1, x2, out=None)`, as
    wrap_np_unary_func."""
    @functools.wraps(func)
    def _wrap_np_binary_func(x1, x2, out=None, **kwargs):
        _check_ufunc_kwargs(func, kwargs, binary=True)
        return func(x1, x2, out=out)
    return _wrap_np_binary_func
