"""Inception with batch normalisation (Ioffe and Szegedy, 2015, "Batch Normalization: ...", the
BN-Inception network), named as in MXNet's image-classification example (conv_<name>,
bn_<name>, relu_<name>), and the example's small variant for 28x28 images."""
from .. import symbol as sym
from .common import classifier, global_avg_pool, parse_image_shape

# 224x224 network. ('a', name, #1x1, #3x3 reduce, #3x3, #double 3x3 reduce, #double 3x3, pool,
# projection) or ('b', name, #3x3 reduce, #3x3, #double 3x3 reduce, #double 3x3): stride 2
LARGE = [('a', '3a', 64, 64, 64, 64, 96, 'avg', 32), ('a', '3b', 64, 64, 96, 64, 96, 'avg', 64),
         ('b', '3c', 128, 160, 64, 96),
         ('a', '4a', 224, 64, 96, 96, 128, 'avg', 128),
         ('a', '4b', 192, 96, 128, 96, 128, 'avg', 128),
         ('a', '4c', 160, 128, 160, 128, 160, 'avg', 128),
         ('a', '4d', 96, 128, 192, 160, 192, 'avg', 128),
         ('b', '4e', 128, 192, 192, 256),
         ('a', '5a', 352, 192, 320, 160, 224, 'avg', 128),
         ('a', '5b', 352, 192, 320, 192, 224, 'max', 128)]

# 28x28 network. ('simple', name, #1x1, #3x3) or ('down', name, #3x3): stride 2
SMALL = [('simple', 'in3a', 32, 32), ('simple', 'in3b', 32, 48), ('down', 'in3c', 80),
         ('simple', 'in4a', 112, 48), ('simple', 'in4b', 96, 64), ('simple', 'in4c', 80, 80),
         ('simple', 'in4d', 48, 96), ('down', 'in4e', 96),
         ('simple', 'in5a', 176, 160), ('simple', 'in5b', 176, 160)]


def conv_bn_relu(data, name, num_filter, kernel=(1, 1), stride=(1, 1), pad=(0, 0)):
    net = sym.Convolution(data, num_filter=num_filter, kernel=kernel, stride=stride, pad=pad,
                          name='conv_%s' % name)
    net = sym.BatchNorm(net, fix_gamma=False, eps=1e-5, momentum=0.9, name='bn_%s' % name)
    return sym.Activation(net, act_type='relu', name='relu_%s' % name)


def conv3x3(data, name, num_filter, stride=1):
    return conv_bn_relu(data, name, num_filter, (3, 3), (stride, stride), (1, 1))


def inception_a(data, name, n1x1, n3x3_reduce, n3x3, nd3x3_reduce, nd3x3, pool, proj):
    """1x1; 1x1 -> 3x3; 1x1 -> 3x3 -> 3x3; 3x3 pool -> 1x1 projection."""
    branch3 = conv_bn_relu(data, name + '_3x3_reduce', n3x3_reduce)
    double3 = conv_bn_relu(data, name + '_double_3x3_reduce', nd3x3_reduce)
    double3 = conv3x3(double3, name + '_double_3x3_0', nd3x3)
    pooled = sym.Pooling(data, pool_type=pool, kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                         name='%s_pool_%s_pool' % (pool, name))
    branches = [conv_bn_relu(data, name + '_1x1', n1x1),
                conv3x3(branch3, name + '_3x3', n3x3),
                conv3x3(double3, name + '_double_3x3_1', nd3x3),
                conv_bn_relu(pooled, name + '_proj', proj)]
    return sym.Concat(*branches, name='ch_concat_%s_chconcat' % name)


def inception_b(data, name, n3x3_reduce, n3x3, nd3x3_reduce, nd3x3):
    """Halves the feature map: 1x1 -> 3x3/2; 1x1 -> 3x3 -> 3x3/2; 3x3/2 max pool."""
    branch3 = conv_bn_relu(data, name + '_3x3_reduce', n3x3_reduce)
    double3 = conv_bn_relu(data, name + '_double_3x3_reduce', nd3x3_reduce)
    double3 = conv3x3(double3, name + '_double_3x3_0', nd3x3)
    branches = [conv3x3(branch3, name + '_3x3', n3x3, stride=2),
                conv3x3(double3, name + '_double_3x3_1', nd3x3, stride=2),
                sym.Pooling(data, pool_type='max', kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                            name='max_pool_%s_pool' % name)]
    return sym.Concat(*branches, name='ch_concat_%s_chconcat' % name)


def simple(data, name, n1x1, n3x3):
    branches = [conv_bn_relu(data, name + '_1x1', n1x1), conv3x3(data, name + '_3x3', n3x3)]
    return sym.Concat(*branches, name=name + '_ch_concat')


def downsample(data, name, n3x3):
    branches = [conv3x3(data, name + '_conv', n3x3, stride=2),
                sym.Pooling(data, pool_type='max', kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                            name=name + '_pool')]
    return sym.Concat(*branches, name=name + '_ch_concat')


BLOCKS = {'a': inception_a, 'b': inception_b, 'simple': simple, 'down': downsample}


def get_symbol(num_classes=1000, image_shape='3,224,224', **kwargs):
    """BN-Inception for images larger than 28x28 (224x224 in the paper): 7x7/2 conv, pool,
    1x1 and 3x3 convs, pool, ten inception modules, global average pooling, fc1. For 28x28 and
    smaller, the small variant: a 3x3 conv and ten two-branch modules."""
    _, height, _ = parse_image_shape(image_shape)
    net = sym.Variable('data')
    if height <= 28:
        net = conv3x3(net, '1', 96)
        blocks = SMALL
    else:
        net = conv_bn_relu(net, '1', 64, (7, 7), (2, 2), (3, 3))
        net = sym.Pooling(net, pool_type='max', kernel=(3, 3), stride=(2, 2), name='pool_1')
        net = conv_bn_relu(net, '2_red', 64)
        net = conv3x3(net, '2', 192)
        net = sym.Pooling(net, pool_type='max', kernel=(3, 3), stride=(2, 2), name='pool_2')
        blocks = LARGE
    for kind, *spec in blocks:
        net = BLOCKS[kind](net, *spec)
    return classifier(global_avg_pool(net, 'global_pool'), num_classes)
