"""mx.gluon.model_zoo.vision: image classification networks with MXNet 1.9.1's structure and
parameter names; `get_model(name, pretrained=False, ...)`."""
from .alexnet import *       # noqa: F401,F403
from .densenet import *      # noqa: F401,F403
from .inception import *     # noqa: F401,F403
from .mobilenet import *     # noqa: F401,F403
from .resnet import *        # noqa: F401,F403
from .squeezenet import *    # noqa: F401,F403
from .vgg import *           # noqa: F401,F403

_MODELS = {'alexnet': alexnet, 'inceptionv3': inception_v3,            # noqa: F405
           'squeezenet1.0': squeezenet1_0, 'squeezenet1.1': squeezenet1_1}   # noqa: F405
for _n in (18, 34, 50, 101, 152):
    for _ver in (1, 2):
        _MODELS['resnet%d_v%d' % (_n, _ver)] = globals()['resnet%d_v%d' % (_n, _ver)]
for _n in (11, 13, 16, 19):
    _MODELS['vgg%d' % _n] = globals()['vgg%d' % _n]
    _MODELS['vgg%d_bn' % _n] = globals()['vgg%d_bn' % _n]
for _n in (121, 161, 169, 201):
    _MODELS['densenet%d' % _n] = globals()['densenet%d' % _n]
for _m, _suffix in (('1.0', '1_0'), ('0.75', '0_75'), ('0.5', '0_5'), ('0.25', '0_25')):
    _MODELS['mobilenet' + _m] = globals()['mobilenet' + _suffix]
    _MODELS['mobilenetv2_' + _m] = globals()['mobilenet_v2_' + _suffix]


def get_model(name, **kwargs):
    """The model called `name` ('resnet18_v1', 'vgg16_bn', 'squeezenet1.1', ...); keyword
    arguments (pretrained, ctx, root, classes, ...) go to its constructor."""
    name = name.lower()
    if name not in _MODELS:
        raise ValueError('Model %s is not supported. Available options are\n\t%s'
                         % (name, '\n\t'.join(sorted(_MODELS))))
    return _MODELS[name](**kwargs)
