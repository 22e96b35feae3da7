"""VGG (Simonyan and Zisserman, 2014), configurations A (11 layers), B (13), D (16) and E (19),
with or without batch normalisation, named as in MXNet's image-classification example:
conv<stage>_<i>, bn<stage>_<i>, fc6, fc7, fc8."""
from .. import symbol as sym
from .common import data_input, softmax_output

FILTERS = (64, 128, 256, 512, 512)
CONVS_PER_STAGE = {11: (1, 1, 2, 2, 2), 13: (2, 2, 2, 2, 2), 16: (2, 2, 3, 3, 3),
                   19: (2, 2, 4, 4, 4)}


def get_symbol(num_classes=1000, num_layers=11, batch_norm=False, dtype='float32', **kwargs):
    """Five stages of 3x3 convolutions each ending in 2x2 max pooling, then fc6 and fc7 (4096
    units, ReLU, dropout 0.5) and the classifier fc8. Built for 224x224 images (32x32 and up
    work; the input of fc6 grows with the image)."""
    if num_layers not in CONVS_PER_STAGE:
        raise ValueError('VGG has 11, 13, 16 or 19 layers, not %r' % (num_layers,))
    net = data_input(dtype)
    for stage, (convs, filters) in enumerate(zip(CONVS_PER_STAGE[num_layers], FILTERS), 1):
        for i in range(1, convs + 1):
            suffix = '%d_%d' % (stage, i)
            net = sym.Convolution(net, num_filter=filters, kernel=(3, 3), pad=(1, 1),
                                  name='conv' + suffix)
            if batch_norm:
                net = sym.BatchNorm(net, name='bn' + suffix)
            net = sym.Activation(net, act_type='relu', name='relu' + suffix)
        net = sym.Pooling(net, pool_type='max', kernel=(2, 2), stride=(2, 2),
                          name='pool%d' % stage)
    net = sym.Flatten(net, name='flatten')
    for layer in (6, 7):
        net = sym.FullyConnected(net, num_hidden=4096, name='fc%d' % layer)
        net = sym.Activation(net, act_type='relu', name='relu%d' % layer)
        net = sym.Dropout(net, p=0.5, name='drop%d' % layer)
    return softmax_output(sym.FullyConnected(net, num_hidden=num_classes, name='fc8'), dtype)
