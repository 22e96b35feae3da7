"""AlexNet (Krizhevsky, Sutskever and Hinton, 2012) as one tower, with the layer names of MXNet's
image-classification example: conv1-conv5, fc1-fc3."""
from .. import symbol as sym
from .common import data_input, softmax_output

# (filters, kernel, stride, pad, then: 'lrn+pool', 'pool' or None)
FEATURES = [(96, 11, 4, 0, 'lrn+pool'), (256, 5, 1, 2, 'lrn+pool'), (384, 3, 1, 1, None),
            (384, 3, 1, 1, None), (256, 3, 1, 1, 'pool')]


def get_symbol(num_classes=1000, dtype='float32', **kwargs):
    """Five convolutions (local response normalisation and max pooling after the first two,
    pooling after the fifth), two 4096-unit layers with dropout, and the classifier fc3.
    Built for 224x224 images (any size from 67x67 works)."""
    net = data_input(dtype)
    pools = 0
    for i, (filters, kernel, stride, pad, after) in enumerate(FEATURES, 1):
        net = sym.Convolution(net, num_filter=filters, kernel=(kernel, kernel),
                              stride=(stride, stride), pad=(pad, pad), name='conv%d' % i)
        net = sym.Activation(net, act_type='relu', name='relu%d' % i)
        if after == 'lrn+pool':
            net = sym.LRN(net, alpha=0.0001, beta=0.75, knorm=2, nsize=5, name='lrn%d' % i)
        if after is not None:
            pools += 1
            net = sym.Pooling(net, pool_type='max', kernel=(3, 3), stride=(2, 2),
                              name='pool%d' % pools)
    net = sym.Flatten(net, name='flatten')
    for i in (1, 2):
        net = sym.FullyConnected(net, num_hidden=4096, name='fc%d' % i)
        net = sym.Activation(net, act_type='relu', name='relu%d' % (i + 5))
        net = sym.Dropout(net, p=0.5, name='dropout%d' % i)
    return softmax_output(sym.FullyConnected(net, num_hidden=num_classes, name='fc3'), dtype)
