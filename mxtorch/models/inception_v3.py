"""Inception-v3 (Szegedy et al., 2015, "Rethinking the Inception Architecture for Computer
Vision") with the layer names of MXNet's example (which follow the converted 'Inception-7'
checkpoint): blocks mixed, mixed_1 ... mixed_10, branches <block>_conv, <block>_tower,
<block>_tower_1, <block>_tower_2, and every convolution a conv_bn_relu unit
('<branch>_conv_<i>_conv2d', '..._batchnorm')."""
from .. import symbol as sym
from .common import classifier, conv_bn_relu, data_input, global_avg_pool, same_pad, square


def conv_name(prefix, i):
    """The i-th convolution of a branch: <prefix>_conv, <prefix>_conv_1, <prefix>_conv_2, ..."""
    return '%s_conv' % prefix if i == 0 else '%s_conv_%d' % (prefix, i)


def tower(data, prefix, layers):
    """A chain of (filters, kernel[, stride]) convolutions; stride-1 ones keep the size,
    stride-2 ones are unpadded."""
    for i, (filters, kernel, *stride) in enumerate(layers):
        stride = square(stride[0] if stride else 1)
        pad = same_pad(kernel) if stride == (1, 1) else (0, 0)
        data = conv_bn_relu(data, conv_name(prefix, i), filters, kernel, stride, pad)
    return data


def split(data, prefix, filters):
    """The 1x3 and 3x1 convolutions that both read `data` (<prefix>_mixed_conv, ..._conv_1)."""
    return [conv_bn_relu(data, conv_name(prefix + '_mixed', i), filters, kernel,
                         pad=same_pad(kernel))
            for i, kernel in enumerate([(1, 3), (3, 1)])]


def pool_projection(data, name, pool, proj):
    net = sym.Pooling(data, pool_type=pool, kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                      name='%s_pool_%s_pool' % (pool, name))
    return tower(net, name + '_tower_2', [(proj, 1)])


def reduction_pool(data, name):
    return sym.Pooling(data, pool_type='max', kernel=(3, 3), stride=(2, 2),
                       name='max_pool_%s_pool' % name)


def concat(name, branches):
    return sym.Concat(*branches, name='ch_concat_%s_chconcat' % name)


def block_a(data, name, proj):
    """35x35: 1x1; 1x1 -> 5x5; 1x1 -> 3x3 -> 3x3; avg pool -> 1x1."""
    return concat(name, [tower(data, name, [(64, 1)]),
                         tower(data, name + '_tower', [(48, 1), (64, 5)]),
                         tower(data, name + '_tower_1', [(64, 1), (96, 3), (96, 3)]),
                         pool_projection(data, name, 'avg', proj)])


def block_b(data, name):
    """35x35 -> 17x17: 3x3/2; 1x1 -> 3x3 -> 3x3/2; max pool/2."""
    return concat(name, [tower(data, name, [(384, 3, 2)]),
                         tower(data, name + '_tower', [(64, 1), (96, 3), (96, 3, 2)]),
                         reduction_pool(data, name)])


def block_c(data, name, width):
    """17x17 with factorised 7x7 convolutions: 1x1; 1x1 -> 1x7 -> 7x1;
    1x1 -> 7x1 -> 1x7 -> 7x1 -> 1x7; avg pool -> 1x1."""
    return concat(name, [
        tower(data, name, [(192, 1)]),
        tower(data, name + '_tower', [(width, 1), (width, (1, 7)), (192, (7, 1))]),
        tower(data, name + '_tower_1', [(width, 1), (width, (7, 1)), (width, (1, 7)),
                                        (width, (7, 1)), (192, (1, 7))]),
        pool_projection(data, name, 'avg', 192)])


def block_d(data, name):
    """17x17 -> 8x8: 1x1 -> 3x3/2; 1x1 -> 1x7 -> 7x1 -> 3x3/2; max pool/2."""
    return concat(name, [tower(data, name + '_tower', [(192, 1), (320, 3, 2)]),
                         tower(data, name + '_tower_1',
                               [(192, 1), (192, (1, 7)), (192, (7, 1)), (192, 3, 2)]),
                         reduction_pool(data, name)])


def block_e(data, name, pool):
    """8x8 with expanded filter banks: 1x1; 1x1 -> (1x3, 3x1); 1x1 -> 3x3 -> (1x3, 3x1);
    pool -> 1x1."""
    return concat(name, [tower(data, name, [(320, 1)]),
                         *split(tower(data, name + '_tower', [(384, 1)]), name + '_tower', 384),
                         *split(tower(data, name + '_tower_1', [(448, 1), (384, 3)]),
                                name + '_tower_1', 384),
                         pool_projection(data, name, pool, 192)])


def get_symbol(num_classes=1000, dtype='float32', **kwargs):
    """Stem of five convolutions and two max pools, three 35x35 blocks, a reduction, four 17x17
    blocks, a reduction, two 8x8 blocks, global average pooling, fc1. Built for 299x299 images
    (from 75x75 works)."""
    net = data_input(dtype)
    net = conv_bn_relu(net, 'conv', 32, 3, stride=2)
    net = conv_bn_relu(net, 'conv_1', 32, 3)
    net = conv_bn_relu(net, 'conv_2', 64, 3, pad=1)
    net = sym.Pooling(net, pool_type='max', kernel=(3, 3), stride=(2, 2), name='pool')
    net = conv_bn_relu(net, 'conv_3', 80, 1)
    net = conv_bn_relu(net, 'conv_4', 192, 3)
    net = sym.Pooling(net, pool_type='max', kernel=(3, 3), stride=(2, 2), name='pool1')
    net = block_a(net, 'mixed', 32)
    net = block_a(net, 'mixed_1', 64)
    net = block_a(net, 'mixed_2', 64)
    net = block_b(net, 'mixed_3')
    for name, width in [('mixed_4', 128), ('mixed_5', 160), ('mixed_6', 160), ('mixed_7', 192)]:
        net = block_c(net, name, width)
    net = block_d(net, 'mixed_8')
    net = block_e(net, 'mixed_9', 'avg')
    net = block_e(net, 'mixed_10', 'max')
    return classifier(global_avg_pool(net, 'global_pool'), num_classes, dtype)
