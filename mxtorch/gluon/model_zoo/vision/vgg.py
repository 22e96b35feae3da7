"""VGG 11/13/16/19 (Simonyan & Zisserman 2014), with or without BatchNorm."""
from ....context import cpu
from ....initializer import Xavier
from ... import nn
from ...block import HybridBlock
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ['VGG', 'vgg11', 'vgg13', 'vgg16', 'vgg19', 'vgg11_bn', 'vgg13_bn', 'vgg16_bn',
           'vgg19_bn', 'get_vgg']


class VGG(HybridBlock):
    """`layers[i]` 3x3 convolutions of `filters[i]` channels per stage, then two 4096-unit
    Dense layers."""

    def __init__(self, layers, filters, classes=1000, batch_norm=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(filters)
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation='relu', weight_initializer='normal',
                                           bias_initializer='zeros'))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer='normal',
                                   bias_initializer='zeros')

    @staticmethod
    def _make_features(layers, filters, batch_norm):
        featurizer = nn.HybridSequential(prefix='')
        for i, num in enumerate(layers):
            for _ in range(num):
                featurizer.add(nn.Conv2D(filters[i], kernel_size=3, padding=1,
                                         weight_initializer=Xavier(rnd_type='gaussian',
                                                                   factor_type='out',
                                                                   magnitude=2),
                                         bias_initializer='zeros'))
                if batch_norm:
                    featurizer.add(nn.BatchNorm())
                featurizer.add(nn.Activation('relu'))
            featurizer.add(nn.MaxPool2D(strides=2))
        return featurizer

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers, pretrained=False, ctx=cpu(), root=DEFAULT_ROOT, **kwargs):
    """VGG with `num_layers` layers (11, 13, 16, 19); batch_norm=True for the _bn nets."""
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    name = 'vgg%d%s' % (num_layers, '_bn' if kwargs.get('batch_norm') else '')
    return load_pretrained(net, name, pretrained, ctx, root)


def _vgg(num_layers, batch_norm):
    def make(**kwargs):
        if batch_norm:
            kwargs['batch_norm'] = True
        return get_vgg(num_layers, **kwargs)
    make.__name__ = 'vgg%d%s' % (num_layers, '_bn' if batch_norm else '')
    make.__doc__ = 'VGG-%d%s.' % (num_layers, ' with BatchNorm' if batch_norm else '')
    return make


vgg11, vgg13, vgg16, vgg19 = [_vgg(n, False) for n in (11, 13, 16, 19)]
vgg11_bn, vgg13_bn, vgg16_bn, vgg19_bn = [_vgg(n, True) for n in (11, 13, 16, 19)]
