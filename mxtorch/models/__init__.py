"""Model definitions with MXNet's layer names (checkpoints trained in MXNet load by name).

Each module has `get_symbol(num_classes=..., ...)` with the arguments of the symbol of the same
name in MXNet's image-classification example; `get_model(name, **kwargs)` picks one by that
example's network name ('resnet', 'resnet-v1', 'inception-v3', 'mobilenetv2', ...).
"""
from . import (alexnet, googlenet, inception_bn, inception_v3, inception_v4, lenet, mlp,
               mobilenet, mobilenetv2, resnet, resnext, vgg)

# network name -> (module, arguments it implies)
NETWORKS = {
    'alexnet': (alexnet, {}), 'googlenet': (googlenet, {}), 'inception-bn': (inception_bn, {}),
    'inception-v3': (inception_v3, {}), 'inception-v4': (inception_v4, {}),
    'lenet': (lenet, {}), 'mlp': (mlp, {}), 'mobilenet': (mobilenet, {}),
    'mobilenetv2': (mobilenetv2, {}), 'resnet': (resnet, {}), 'resnet-v1': (resnet, {'version': 1}),
    'resnet-v2': (resnet, {'version': 2}), 'resnext': (resnext, {}), 'vgg': (vgg, {}),
}


def get_model(name, **kwargs):
    """The Symbol of network `name` (a key of NETWORKS; '_' may stand for '-'), built by its
    module's get_symbol(**kwargs)."""
    key = name.lower().replace('_', '-')
    if key not in NETWORKS:
        raise ValueError('unknown network %r; known: %s' % (name, ', '.join(sorted(NETWORKS))))
    module, implied = NETWORKS[key]
    return module.get_symbol(**dict(implied, **kwargs))


__all__ = ['alexnet', 'get_model', 'googlenet', 'inception_bn', 'inception_v3', 'inception_v4',
           'lenet', 'mlp', 'mobilenet', 'mobilenetv2', 'resnet', 'resnext', 'vgg', 'NETWORKS']
