"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016)."""
from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ['SqueezeNet', 'squeezenet1_0', 'squeezenet1_1']


def _fire_conv(channels, kernel_size, padding=0):
    out = nn.HybridSequential(prefix='')
    out.add(nn.Conv2D(channels, kernel_size, padding=padding))
    out.add(nn.Activation('relu'))
    return out


def _fire(squeeze, expand1x1, expand3x3):
    """Squeeze 1x1, then 1x1 and 3x3 expansions concatenated."""
    out = nn.HybridSequential(prefix='')
    out.add(_fire_conv(squeeze, 1))
    paths = HybridConcurrent(axis=1, prefix='')
    paths.add(_fire_conv(expand1x1, 1))
    paths.add(_fire_conv(expand3x3, 3, 1))
    out.add(paths)
    return out


def _pool():
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(HybridBlock):
    """SqueezeNet `version` '1.0' or '1.1'."""

    def __init__(self, version, classes=1000, **kwargs):
        super().__init__(**kwargs)
        assert version in ['1.0', '1.1'], ('Unsupported SqueezeNet version {version}:1.0 or '
                                           '1.1 expected'.format(version=version))
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            add = self.features.add
            if version == '1.0':
                add(nn.Conv2D(96, kernel_size=7, strides=2))
                add(nn.Activation('relu'))
                add(_pool())
                for spec in ((16, 64, 64), (16, 64, 64), (32, 128, 128)):
                    add(_fire(*spec))
                add(_pool())
                for spec in ((32, 128, 128), (48, 192, 192), (48, 192, 192), (64, 256, 256)):
                    add(_fire(*spec))
                add(_pool())
                add(_fire(64, 256, 256))
            else:
                add(nn.Conv2D(64, kernel_size=3, strides=2))
                add(nn.Activation('relu'))
                add(_pool())
                add(_fire(16, 64, 64))
                add(_fire(16, 64, 64))
                add(_pool())
                add(_fire(32, 128, 128))
                add(_fire(32, 128, 128))
                add(_pool())
                for spec in ((48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256)):
                    add(_fire(*spec))
            add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix='')
            self.output.add(nn.Conv2D(classes, kernel_size=1))
            self.output.add(nn.Activation('relu'))
            self.output.add(nn.AvgPool2D(13))
            self.output.add(nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version, pretrained=False, ctx=cpu(), root=DEFAULT_ROOT, **kwargs):
    """SqueezeNet `version` ('1.0' or '1.1')."""
    return load_pretrained(SqueezeNet(version, **kwargs), 'squeezenet%s' % version,
                           pretrained, ctx, root)


def squeezenet1_0(**kwargs):
    """SqueezeNet 1.0."""
    return get_squeezenet('1.0', **kwargs)


def squeezenet1_1(**kwargs):
    """SqueezeNet 1.1."""
    return get_squeezenet('1.1', **kwargs)
