"""ResNet v1 (He et al. 2015) and v2 (pre-activation, He et al. 2016), MXNet's parameter names
('resnetv10_stage1_conv0_weight', ...)."""
from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ._common import DEFAULT_ROOT, load_pretrained

__all__ = ['ResNetV1', 'ResNetV2', 'BasicBlockV1', 'BasicBlockV2', 'BottleneckV1',
           'BottleneckV2', 'resnet18_v1', 'resnet34_v1', 'resnet50_v1', 'resnet101_v1',
           'resnet152_v1', 'resnet18_v2', 'resnet34_v2', 'resnet50_v2', 'resnet101_v2',
           'resnet152_v2', 'get_resnet']


def _conv3x3(channels, stride, in_channels):
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False,
                     in_channels=in_channels)


def _downsample_v1(channels, stride, in_channels):
    branch = nn.HybridSequential(prefix='')
    branch.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False,
                         in_channels=in_channels))
    branch.add(nn.BatchNorm())
    return branch


class BasicBlockV1(HybridBlock):
    """Two 3x3 convolutions with BatchNorm, plus the (projected) input, then ReLU."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix='')
        self.body.add(_conv3x3(channels, stride, in_channels))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(_conv3x3(channels, 1, channels))
        self.body.add(nn.BatchNorm())
        self.downsample = _downsample_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        out = self.body(x)
        residual = self.downsample(x) if self.downsample else x
        return F.Activation(residual + out, act_type='relu')


class BottleneckV1(HybridBlock):
    """1x1 (channels/4), 3x3, 1x1 (channels) convolutions with BatchNorm, plus the input."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix='')
        self.body.add(nn.Conv2D(channels // 4, kernel_size=1, strides=stride))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(_conv3x3(channels // 4, 1, channels // 4))
        self.body.add(nn.BatchNorm())
        self.body.add(nn.Activation('relu'))
        self.body.add(nn.Conv2D(channels, kernel_size=1, strides=1))
        self.body.add(nn.BatchNorm())
        self.downsample = _downsample_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        out = self.body(x)
        residual = self.downsample(x) if self.downsample else x
        return F.Activation(out + residual, act_type='relu')


class BasicBlockV2(HybridBlock):
    """Pre-activation basic block: BN-ReLU-conv3x3 twice, plus the (projected) input."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False,
                                    in_channels=in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type='relu')
        if self.downsample:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = F.Activation(self.bn2(x), act_type='relu')
        return self.conv2(x) + residual


class BottleneckV2(HybridBlock):
    """Pre-activation bottleneck: BN-ReLU-conv 1x1, 3x3, 1x1, plus the input."""

    def __init__(self, channels, stride, downsample=False, in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(channels // 4, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels // 4, stride, channels // 4)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self.downsample = nn.Conv2D(channels, 1, stride, use_bias=False,
                                    in_channels=in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        residual = x
        x = F.Activation(self.bn1(x), act_type='relu')
        if self.downsample:
            residual = self.downsample(x)
        x = self.conv1(x)
        x = self.conv2(F.Activation(self.bn2(x), act_type='relu'))
        x = self.conv3(F.Activation(self.bn3(x), act_type='relu'))
        return x + residual


def _make_stage(block, layers, channels, stride, stage_index, in_channels):
    stage = nn.HybridSequential(prefix='stage%d_' % stage_index)
    with stage.name_scope():
        stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels,
                        prefix=''))
        for _ in range(layers - 1):
            stage.add(block(channels, 1, False, in_channels=channels, prefix=''))
    return stage


class ResNetV1(HybridBlock):
    """ResNet v1: `layers` blocks per stage with `channels` (stem first)."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False))
                self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation('relu'))
                self.features.add(nn.MaxPool2D(3, 2, 1))
            for i, num_layer in enumerate(layers):
                self.features.add(_make_stage(block, num_layer, channels[i + 1],
                                              1 if i == 0 else 2, i + 1, channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV2(HybridBlock):
    """ResNet v2 (pre-activation)."""

    def __init__(self, block, layers, channels, classes=1000, thumbnail=False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1
        with self.name_scope():
            self.features = nn.HybridSequential(prefix='')
            self.features.add(nn.BatchNorm(scale=False, center=False))
            if thumbnail:
                self.features.add(_conv3x3(channels[0], 1, 0))
            else:
                self.features.add(nn.Conv2D(channels[0], 7, 2, 3, use_bias=False))
                self.features.add(nn.BatchNorm())
                self.features.add(nn.Activation('relu'))
                self.features.add(nn.MaxPool2D(3, 2, 1))
            in_channels = channels[0]
            for i, num_layer in enumerate(layers):
                self.features.add(_make_stage(block, num_layer, channels[i + 1],
                                              1 if i == 0 else 2, i + 1, in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm())
            self.features.add(nn.Activation('relu'))
            self.features.add(nn.GlobalAvgPool2D())
            self.features.add(nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


resnet_spec = {18: ('basic_block', [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ('basic_block', [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ('bottle_neck', [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ('bottle_neck', [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ('bottle_neck', [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{'basic_block': BasicBlockV1, 'bottle_neck': BottleneckV1},
                         {'basic_block': BasicBlockV2, 'bottle_neck': BottleneckV2}]


def get_resnet(version, num_layers, pretrained=False, ctx=cpu(), root=DEFAULT_ROOT,
               **kwargs):
    """ResNet v`version` with `num_layers` layers (18, 34, 50, 101, 152)."""
    assert num_layers in resnet_spec, 'Invalid number of layers: %d. Options are %s' % (
        num_layers, str(resnet_spec.keys()))
    assert 1 <= version <= 2, 'Invalid resnet version: %d. Options are 1 and 2.' % version
    block_type, layers, channels = resnet_spec[num_layers]
    net = resnet_net_versions[version - 1](resnet_block_versions[version - 1][block_type],
                                           layers, channels, **kwargs)
    return load_pretrained(net, 'resnet%d_v%d' % (num_layers, version), pretrained, ctx, root)


def _resnet(version, num_layers):
    def make(**kwargs):
        return get_resnet(version, num_layers, **kwargs)
    make.__name__ = 'resnet%d_v%d' % (num_layers, version)
    make.__doc__ = 'ResNet-%d V%d.' % (num_layers, version)
    return make


resnet18_v1, resnet34_v1, resnet50_v1, resnet101_v1, resnet152_v1 = \
    [_resnet(1, n) for n in (18, 34, 50, 101, 152)]
resnet18_v2, resnet34_v2, resnet50_v2, resnet101_v2, resnet152_v2 = \
    [_resnet(2, n) for n in (18, 34, 50, 101, 152)]
