"""Inception v3 (Szegedy et al. 2015), input 299x299, MXNet's parameter names
('inception30_A1_conv0_weight', ...)."""
from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ['Inception3', 'inception_v3']

_SETTING_NAMES = ('channels', 'kernel_size', 'strides', 'padding')


def _basic_conv(**kwargs):
    out = nn.HybridSequential(prefix='')
    out.add(nn.Conv2D(use_bias=False, **kwargs))
    out.add(nn.BatchNorm(epsilon=0.001))
    out.add(nn.Activation('relu'))
    return out


def _branch(use_pool, *conv_settings):
    """An optional pooling then basic convolutions given as
    (channels, kernel_size, strides, padding) with None for the defaults."""
    out = nn.HybridSequential(prefix='')
    if use_pool == 'avg':
        out.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif use_pool == 'max':
        out.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in conv_settings:
        out.add(_basic_conv(**{k: v for k, v in zip(_SETTING_NAMES, setting)
                               if v is not None}))
    return out


def _concurrent(prefix, *branches):
    """A HybridConcurrent named `prefix` whose branches are built in its name scope."""
    out = HybridConcurrent(axis=1, prefix=prefix)
    with out.name_scope():
        for make in branches:
            out.add(make())
    return out


def _make_A(pool_features, prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (64, 1, None, None)),
        lambda: _branch(None, (48, 1, None, None), (64, 5, None, 2)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
        lambda: _branch('avg', (pool_features, 1, None, None)))


def _make_B(prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (384, 3, 2, None)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
        lambda: _branch('max'))


def _make_C(c7, prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (192, 1, None, None)),
        lambda: _branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0))),
        lambda: _branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)),
                        (c7, (1, 7), None, (0, 3)), (c7, (7, 1), None, (3, 0)),
                        (192, (1, 7), None, (0, 3))),
        lambda: _branch('avg', (192, 1, None, None)))


def _make_D(prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (192, 1, None, None), (320, 3, 2, None)),
        lambda: _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)),
                        (192, (7, 1), None, (3, 0)), (192, 3, 2, None)),
        lambda: _branch('max'))


def _split_branch(first):
    """`first` then (1x3 and 3x1 convolutions of 384 channels, concatenated)."""
    seq = nn.HybridSequential(prefix='')
    seq.add(first)
    split = HybridConcurrent(axis=1, prefix='')
    split.add(_branch(None, (384, (1, 3), None, (0, 1))))
    split.add(_branch(None, (384, (3, 1), None, (1, 0))))
    seq.add(split)
    return seq


def _make_E(prefix):
    return _concurrent(
        prefix,
        lambda: _branch(None, (320, 1, None, None)),
        lambda: _split_branch(_branch(None, (384, 1, None, None))),
        lambda: _split_branch(_branch(None, (448, 1, None, None), (384, 3, None, 1))),
        lambda: _branch('avg', (192, 1, None, None)))


def make_aux(classes):
    """The auxiliary classifier head."""
    out = nn.HybridSequential(prefix='')
    out.add(nn.AvgPool2D(pool_size=5, strides=3))
    out.add(_basic_conv(channels=128, kernel_size=1))
    out.add(_basic_conv(channels=768, kernel_size=5))
    out.add(nn.Flatten())
    out.add(nn.Dense(classes))
    return out


class Inception3(HybridBlock):
    """Inception v3."""

    def __init__(self, classes=1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            add = self.features.add
            add(_basic_conv(channels=32, kernel_size=3, strides=2))
            add(_basic_conv(channels=32, kernel_size=3))
            add(_basic_conv(channels=64, kernel_size=3, padding=1))
            add(nn.MaxPool2D(pool_size=3, strides=2))
            add(_basic_conv(channels=80, kernel_size=1))
            add(_basic_conv(channels=192, kernel_size=3))
            add(nn.MaxPool2D(pool_size=3, strides=2))
            add(_make_A(32, 'A1_'))
            add(_make_A(64, 'A2_'))
            add(_make_A(64, 'A3_'))
            add(_make_B('B_'))
            add(_make_C(128, 'C1_'))
            add(_make_C(160, 'C2_'))
            add(_make_C(160, 'C3_'))
            add(_make_C(192, 'C4_'))
            add(_make_D('D_'))
            add(_make_E('E1_'))
            add(_make_E('E2_'))
            add(nn.AvgPool2D(pool_size=8))
            add(nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained=False, ctx=cpu(), root=DEFAULT_ROOT, **kwargs):
    """Inception v3."""
    return load_pretrained(Inception3(**kwargs), 'inceptionv3', pretrained, ctx, root)
