"""MobileNet v1 (Howard et al., 2017, "MobileNets: Efficient Convolutional Neural Networks for
Mobile Vision Applications") with the width multiplier alpha, named as in MXNet's example:
conv_1, then depthwise conv_<i>_dw and pointwise conv_<i> (i = 2..14), each a conv_bn_relu
unit ('conv_2_dw_conv2d', 'conv_2_dw_batchnorm', ...), global_pool, fc."""
from .. import symbol as sym
from .common import classifier, conv_bn_relu, global_avg_pool

# (stride of the depthwise convolution, output channels of the pointwise one), blocks 2..14
SEPARABLE = [(1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512),
             (1, 512), (1, 512), (1, 512), (1, 512), (1, 512), (2, 1024), (1, 1024)]


def get_symbol(num_classes=1000, alpha=1, **kwargs):
    """A 3x3/2 convolution of 32*alpha channels and 13 depthwise-separable blocks, global
    average pooling and the classifier fc. Built for 224x224 images (any size works)."""
    channels = int(32 * alpha)
    net = conv_bn_relu(sym.Variable('data'), 'conv_1', channels, 3, stride=2, pad=1)
    for i, (stride, out) in enumerate(SEPARABLE, 2):
        net = conv_bn_relu(net, 'conv_%d_dw' % i, channels, 3, stride=stride, pad=1,
                           num_group=channels)
        channels = int(out * alpha)
        net = conv_bn_relu(net, 'conv_%d' % i, channels)
    return classifier(global_avg_pool(net, 'global_pool'), num_classes, name='fc')
