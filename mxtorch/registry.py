"""mx.registry: named registries of subclasses, one per base class.

`get_register_func(Base, 'thing')` gives a decorator that files a subclass under its lower-cased
name, `get_alias_func` one that files it under extra names, and `get_create_func` a factory
that makes an instance from a name (or a JSON string ``'["name", {kwargs}]'`` or
``'{"thing": "name", ...}'``), passing an existing instance through. Toolkits built on MXNet
(GluonNLP's embeddings, datasets and metrics) keep their own registries with these.
"""
import json
import warnings

_REGISTRY = {}


def get_registry(base_class):
    """A copy of the name -> class registry of `base_class`."""
    return dict(_REGISTRY.setdefault(base_class, {}))


def get_register_func(base_class, nickname):
    """A function registering subclasses of `base_class` (optionally under a given name)."""
    registry = _REGISTRY.setdefault(base_class, {})

    def register(klass, name=None):
        assert issubclass(klass, base_class), \
            'Can only register subclass of %s' % base_class.__name__
        name = (klass.__name__ if name is None else name).lower()
        if name in registry:
            old = registry[name]
            warnings.warn('New %s %s.%s registered with name %s is overriding existing %s %s.%s'
                          % (nickname, klass.__module__, klass.__name__, name, nickname,
                             old.__module__, old.__name__), UserWarning, stacklevel=2)
        registry[name] = klass
        return klass

    register.__doc__ = 'Register %s to the %s factory' % (nickname, nickname)
    return register


def get_alias_func(base_class, nickname):
    """A decorator factory: `@alias('a', 'b')` registers the class under those names."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg
    alias.__doc__ = 'Get registrator function that allow aliases.'
    return alias


def get_create_func(base_class, nickname):
    """A factory making registered subclasses of `base_class` by name."""
    registry = _REGISTRY.setdefault(base_class, {})

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        else:
            name = kwargs.pop(nickname)
        if isinstance(name, base_class):
            assert not args and not kwargs, \
                '%s is already an instance. Additional arguments are invalid' % nickname
            return name
        if isinstance(name, dict):
            return create(**name)
        assert isinstance(name, str), '%s must be of string type' % nickname
        if name.startswith('['):
            assert not args and not kwargs
            name, kwargs = json.loads(name)
            return create(name, **kwargs)
        if name.startswith('{'):
            assert not args and not kwargs
            return create(**json.loads(name))
        name = name.lower()
        assert name in registry, \
            '%s is not registered. Please register with %s.register first' % (name, nickname)
        return registry[name](*args, **kwargs)

    create.__doc__ = ('Create a %s instance from config: its registered name (or a JSON string), '
                      'or an instance, returned as is.' % nickname)
    return create
