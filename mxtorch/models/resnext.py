"""ResNeXt (Xie, Girshick, Dollar, Tu and He, 2016, "Aggregated Residual Transformations for
Deep Neural Networks"), named as in MXNet's example: post-activation residual units whose
bottleneck 3x3 convolution is split into num_group groups (the 32x4d network by default), input
BatchNorm bn_data, projection shortcuts stage<s>_unit1_sc + _sc_bn. Depths and small-image
variants as for ResNet (see resnet.py)."""
from .common import parse_image_shape
from .resnet import build, configuration, post_activation_unit, residual_layers


def get_symbol(num_classes=1000, num_layers=50, image_shape='3,224,224', num_group=32,
               conv_workspace=256, dtype='float32', **kwargs):
    """ResNeXt-<num_layers> with num_group groups, for images of image_shape."""
    _, height, _ = parse_image_shape(image_shape)
    units, filters, bottleneck = configuration(num_layers, height)

    def unit(data, name, num_filter, stride, dim_match):
        layers = residual_layers(num_filter, stride, bottleneck, width=0.5, num_group=num_group)
        return post_activation_unit(data, name, num_filter, stride, dim_match, layers,
                                    conv_workspace, ('_sc', '_sc_bn'))

    return build(units, filters, num_classes, image_shape, unit, pre_activation=False,
                 data_bn=True, dtype=dtype, workspace=conv_workspace)
