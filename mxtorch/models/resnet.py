"""Residual networks, named as in MXNet's image-classification examples (conv0, bn0,
stage<s>_unit<u>_conv<i>/_bn<i>, bn1, fc1):

* version=2 (the default, MXNet's resnet.py): pre-activation units (He, Zhang, Ren and Sun,
  2016, "Identity Mappings in Deep Residual Networks"), with a BatchNorm on the input (bn_data);
* version=1 (MXNet's resnet-v1.py): the original post-activation units (He et al., 2015, "Deep
  Residual Learning for Image Recognition"), projection shortcuts stage<s>_unit1_conv1sc + _sc.

Images larger than 32x32 get the ImageNet network (7x7/2 convolution and max pooling, four
stages: 18, 34, 50, 101, 152, 200 or 269 layers); 32x32 and smaller the CIFAR network (3x3
convolution, three stages of 16/32/64 channels: 6n+2 layers with basic units, or 9n+2 layers,
164 and more, with bottleneck units of 64/128/256 channels).
"""
from .. import symbol as sym
from .common import classifier, data_input, global_avg_pool, parse_image_shape, same_pad

IMAGENET_UNITS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3),
                  152: (3, 8, 36, 3), 200: (3, 24, 36, 3), 269: (3, 30, 48, 8)}


def configuration(num_layers, height):
    """(units per stage, (stem filters, filters of each stage), bottleneck units?)"""
    if height <= 32:
        if (num_layers - 2) % 9 == 0 and num_layers >= 164:
            return ((num_layers - 2) // 9,) * 3, (16, 64, 128, 256), True
        if (num_layers - 2) % 6 == 0 and num_layers < 164:
            return ((num_layers - 2) // 6,) * 3, (16, 16, 32, 64), False
        raise ValueError('a ResNet for %dx%d images has 6n+2 layers (below 164) or 9n+2 layers '
                         '(164 and more), not %d' % (height, height, num_layers))
    if num_layers not in IMAGENET_UNITS:
        raise ValueError('a ResNet for images larger than 32x32 has %s layers, not %d'
                         % (sorted(IMAGENET_UNITS), num_layers))
    if num_layers >= 50:
        return IMAGENET_UNITS[num_layers], (64, 256, 512, 1024, 2048), True
    return IMAGENET_UNITS[num_layers], (64, 64, 128, 256, 512), False


def conv(data, name, num_filter, kernel, stride=1, num_group=1, workspace=256):
    """Convolution without bias, padded to keep the size at stride 1."""
    return sym.Convolution(data, num_filter=num_filter, kernel=(kernel, kernel),
                           stride=(stride, stride), pad=same_pad(kernel), num_group=num_group,
                           no_bias=True, workspace=workspace, name=name)


def batch_norm(data, name, fix_gamma=False):
    return sym.BatchNorm(data, fix_gamma=fix_gamma, eps=2e-5, momentum=0.9, name=name)


def relu(data, name):
    return sym.Activation(data, act_type='relu', name=name)


def residual_layers(num_filter, stride, bottleneck, stride_first=False, width=0.25, num_group=1):
    """(filters, kernel, stride, groups) of the convolutions on the residual path. A bottleneck
    unit narrows to width*num_filter and puts its stride on the 3x3 (or, with stride_first,
    on the first 1x1) convolution; a basic unit has two 3x3 convolutions."""
    if not bottleneck:
        return [(num_filter, 3, stride, 1), (num_filter, 3, 1, 1)]
    inner = int(num_filter * width)
    first, middle = (stride, 1) if stride_first else (1, stride)
    return [(inner, 1, first, 1), (inner, 3, middle, num_group), (num_filter, 1, 1, 1)]


def pre_activation_unit(data, name, num_filter, stride, dim_match, layers, workspace):
    """BN-ReLU before every convolution; the projection shortcut reads the first activation."""
    act1 = relu(batch_norm(data, name + '_bn1'), name + '_relu1')
    net = act1
    for i, (filters, kernel, layer_stride, groups) in enumerate(layers, 1):
        if i > 1:
            net = relu(batch_norm(net, '%s_bn%d' % (name, i)), '%s_relu%d' % (name, i))
        net = conv(net, '%s_conv%d' % (name, i), filters, kernel, layer_stride, groups, workspace)
    shortcut = data if dim_match else conv(act1, name + '_sc', num_filter, 1, stride,
                                           workspace=workspace)
    return sym.elemwise_add(net, shortcut, name=name + '_plus')


def post_activation_unit(data, name, num_filter, stride, dim_match, layers, workspace,
                         shortcut_names):
    """Conv-BN(-ReLU) layers, the sum with the shortcut (a projection conv + BN named by
    shortcut_names when the shape changes), then ReLU."""
    net = data
    for i, (filters, kernel, layer_stride, groups) in enumerate(layers, 1):
        net = conv(net, '%s_conv%d' % (name, i), filters, kernel, layer_stride, groups, workspace)
        net = batch_norm(net, '%s_bn%d' % (name, i))
        if i < len(layers):
            net = relu(net, '%s_relu%d' % (name, i))
    shortcut = data
    if not dim_match:
        conv_suffix, bn_suffix = shortcut_names
        shortcut = conv(data, name + conv_suffix, num_filter, 1, stride, workspace=workspace)
        shortcut = batch_norm(shortcut, name + bn_suffix)
    return relu(sym.elemwise_add(net, shortcut, name=name + '_plus'), name + '_relu')


def build(units, filters, num_classes, image_shape, unit, pre_activation, data_bn, dtype,
          workspace):
    """Stem, stages of units(data, name, num_filter, stride, dim_match) whose first unit changes
    the shape (stride 2 from the second stage on), global average pooling, fc1."""
    _, height, _ = parse_image_shape(image_shape)
    net = data_input(dtype)
    if data_bn:
        net = batch_norm(net, 'bn_data', fix_gamma=True)
    small = height <= 32
    net = conv(net, 'conv0', filters[0], 3 if small else 7, 1 if small else 2,
               workspace=workspace)
    if not (small and pre_activation):
        net = relu(batch_norm(net, 'bn0'), 'relu0')
    if not small:
        net = sym.Pooling(net, pool_type='max', kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                          name='pool0')
    for stage, (count, num_filter) in enumerate(zip(units, filters[1:]), 1):
        for i in range(count):
            stride = 2 if stage > 1 and i == 0 else 1
            net = unit(net, 'stage%d_unit%d' % (stage, i + 1), num_filter, stride, i > 0)
    if pre_activation:
        net = relu(batch_norm(net, 'bn1'), 'relu1')
    return classifier(global_avg_pool(net, 'pool1'), num_classes, dtype)


def get_symbol(num_classes=1000, num_layers=50, image_shape='3,224,224', conv_workspace=256,
               dtype='float32', version=2, **kwargs):
    """ResNet-<num_layers> for images of image_shape ('channels,height,width'); version 2
    (pre-activation, the default) or 1 (post-activation)."""
    if version not in (1, 2):
        raise ValueError('ResNet version is 1 or 2, not %r' % (version,))
    _, height, _ = parse_image_shape(image_shape)
    units, filters, bottleneck = configuration(num_layers, height)

    def unit(data, name, num_filter, stride, dim_match):
        layers = residual_layers(num_filter, stride, bottleneck, stride_first=version == 1)
        if version == 1:
            return post_activation_unit(data, name, num_filter, stride, dim_match, layers,
                                        conv_workspace, ('_conv1sc', '_sc'))
        return pre_activation_unit(data, name, num_filter, stride, dim_match, layers,
                                   conv_workspace)

    return build(units, filters, num_classes, image_shape, unit, pre_activation=version == 2,
                 data_bn=version == 2, dtype=dtype, workspace=conv_workspace)
