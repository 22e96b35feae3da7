"""MobileNet v2 (Sandler et al., 2018, "MobileNetV2: Inverted Residuals and Linear
Bottlenecks") with a width multiplier, named as in MXNet's example: first-3x3-conv,
seq-<s>-block<b>-exp/-depthwise/-linear, last-1x1-conv, each a convolution '<prefix>-conv2d'
and BatchNorm '<prefix>-batchnorm', global_pool, fc."""
from .. import symbol as sym
from .common import classifier, global_avg_pool

# (expansion t, output channels c, repeats n, first stride s), as in the paper's table 2
BOTTLENECKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]


def conv_bn(data, prefix, num_filter, kernel=1, stride=1, num_group=1, relu6=True):
    """Convolution without bias, BatchNorm, and ReLU6 (clip to [0, 6]) unless linear."""
    pad = kernel // 2
    net = sym.Convolution(data, num_filter=num_filter, kernel=(kernel, kernel),
                          stride=(stride, stride), pad=(pad, pad), num_group=num_group,
                          no_bias=True, name='%s-conv2d' % prefix)
    net = sym.BatchNorm(net, fix_gamma=False, eps=1e-5, name='%s-batchnorm' % prefix)
    return sym.clip(net, a_min=0, a_max=6, name='%s-relu6' % prefix) if relu6 else net


def inverted_residual(data, prefix, in_channels, out_channels, expansion, stride, shortcut):
    """1x1 expansion, 3x3 depthwise, linear 1x1 projection (+ the input when shortcut)."""
    expanded = int(round(in_channels * expansion))
    net = conv_bn(data, prefix + '-exp', expanded)
    net = conv_bn(net, prefix + '-depthwise', expanded, 3, stride, num_group=expanded)
    net = conv_bn(net, prefix + '-linear', out_channels, relu6=False)
    return sym.elemwise_add(data, net, name=prefix + '-shortcut') if shortcut else net


def get_symbol(num_classes=1000, multiplier=1.0, **kwargs):
    """A 3x3/2 convolution, 17 inverted residual blocks, a 1x1 convolution to 1280 channels
    (more when multiplier > 1), global average pooling and fc. Built for 224x224 images (any
    size works)."""
    channels = int(round(32 * multiplier))
    net = conv_bn(sym.Variable('data'), 'first-3x3-conv', channels, 3, 2)
    for seq, (expansion, out, repeats, stride) in enumerate(BOTTLENECKS):
        out = int(round(out * multiplier))
        for block in range(repeats):
            net = inverted_residual(net, 'seq-%d-block%d' % (seq, block), channels, out,
                                    expansion, stride if block == 0 else 1, block > 0)
            channels = out
    last = int(1280 * multiplier) if multiplier > 1.0 else 1280
    net = conv_bn(net, 'last-1x1-conv', last)
    return classifier(global_avg_pool(net, 'global_pool'), num_classes, name='fc')
