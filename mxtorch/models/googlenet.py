"""GoogLeNet (Szegedy et al., 2014, "Going deeper with convolutions") as in MXNet's
image-classification example: without the local response normalisation, dropout and auxiliary
classifiers of the paper, layers named conv_<name>/relu_<name> (conv_in3a_1x1, ...)."""
from .. import symbol as sym
from .common import classifier, global_avg_pool

# (name, #1x1, #3x3 reduce, #3x3, #5x5 reduce, #5x5, pool projection); 'pool' = 3x3/2 max pool
INCEPTIONS = [('in3a', 64, 96, 128, 16, 32, 32), ('in3b', 128, 128, 192, 32, 96, 64), 'pool',
              ('in4a', 192, 96, 208, 16, 48, 64), ('in4b', 160, 112, 224, 24, 64, 64),
              ('in4c', 128, 128, 256, 24, 64, 64), ('in4d', 112, 144, 288, 32, 64, 64),
              ('in4e', 256, 160, 320, 32, 128, 128), 'pool',
              ('in5a', 256, 160, 320, 32, 128, 128), ('in5b', 384, 192, 384, 48, 128, 128)]


def conv_relu(data, name, num_filter, kernel, stride=(1, 1), pad=(0, 0)):
    net = sym.Convolution(data, num_filter=num_filter, kernel=kernel, stride=stride, pad=pad,
                          name='conv_%s' % name)
    return sym.Activation(net, act_type='relu', name='relu_%s' % name)


def inception(data, name, n1x1, n3x3_reduce, n3x3, n5x5_reduce, n5x5, proj):
    """Four branches concatenated: 1x1; 1x1 -> 3x3; 1x1 -> 5x5; 3x3 max pool -> 1x1."""
    branch3 = conv_relu(data, name + '_3x3_reduce', n3x3_reduce, (1, 1))
    branch5 = conv_relu(data, name + '_5x5_reduce', n5x5_reduce, (1, 1))
    pool = sym.Pooling(data, pool_type='max', kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                       name='max_pool_%s_pool' % name)
    branches = [conv_relu(data, name + '_1x1', n1x1, (1, 1)),
                conv_relu(branch3, name + '_3x3', n3x3, (3, 3), pad=(1, 1)),
                conv_relu(branch5, name + '_5x5', n5x5, (5, 5), pad=(2, 2)),
                conv_relu(pool, name + '_proj', proj, (1, 1))]
    return sym.Concat(*branches, name='ch_concat_%s_chconcat' % name)


def get_symbol(num_classes=1000, **kwargs):
    """Stem (7x7/2 conv, pool, 1x1 and 3x3 convs, pool), nine inception modules with two more
    pools between them, global average pooling and the classifier fc1. Built for 224x224 images
    (any size from 61x61 works)."""
    pools = iter(range(1, 5))

    def max_pool(net):
        return sym.Pooling(net, pool_type='max', kernel=(3, 3), stride=(2, 2),
                           name='pool%d' % next(pools))

    net = conv_relu(sym.Variable('data'), 'conv1', 64, (7, 7), stride=(2, 2), pad=(3, 3))
    net = max_pool(net)
    net = conv_relu(net, 'conv2', 64, (1, 1))
    net = conv_relu(net, 'conv3', 192, (3, 3), pad=(1, 1))
    net = max_pool(net)
    for spec in INCEPTIONS:
        net = max_pool(net) if spec == 'pool' else inception(net, *spec)
    return classifier(global_avg_pool(net, 'global_pool'), num_classes)
