"""Inception-v4 (Szegedy, Ioffe, Vanhoucke and Alemi, 2016, "Inception-v4, Inception-ResNet and
the Impact of Residual Connections on Learning") with the layer names of MXNet's example:
in_stem, in1A-in4A, re1A, in1B-in7B, re1B, in1C-in3C; each convolution a conv_bn_relu unit
named after its place and kernel ('in1A_conv4_3*3_conv2d', ...)."""
from .. import symbol as sym
from .common import classifier, conv_bn_relu, data_input, global_avg_pool, same_pad

# A block is a list of branches concatenated along the channels. A branch is a chain of layers:
# ('avgpool_<i>',): 3x3 average pooling, stride 1; ('maxpool_<i>',): 3x3 max pooling, stride 2;
# (name, filters, kernel[, stride[, 'valid']]): a convolution, padded to keep the size unless it
# is strided or marked 'valid'. A branch may end in a list of convolutions that all read the
# previous layer and are all concatenated.
STEM = [
    [[('conv1_3*3', 32, 3, 2), ('conv2_3*3', 32, 3, 1, 'valid'), ('conv3_3*3', 64, 3)]],
    [[('maxpool_1',)], [('conv4_3*3', 96, 3, 2)]],
    [[('conv5_1*1', 64, 1), ('conv6_3*3', 96, 3, 1, 'valid')],
     [('conv7_1*1', 64, 1), ('conv8_7*1', 64, (7, 1)), ('conv9_1*7', 64, (1, 7)),
      ('conv10_3*3', 96, 3, 1, 'valid')]],
    [[('maxpool_2',)], [('conv11_3*3', 192, 3, 2)]]]

INCEPTION_A = [[('avgpool_1',), ('conv1_1*1', 96, 1)],
               [('conv2_1*1', 96, 1)],
               [('conv3_1*1', 64, 1), ('conv4_3*3', 96, 3)],
               [('conv5_1*1', 64, 1), ('conv6_3*3', 96, 3), ('conv7_3*3', 96, 3)]]

REDUCTION_A = [[('maxpool_1',)],
               [('conv1_3*3', 384, 3, 2)],
               [('conv2_1*1', 192, 1), ('conv3_3*3', 224, 3), ('conv4_3*3', 256, 3, 2)]]

INCEPTION_B = [[('avgpool_1',), ('conv1_1*1', 128, 1)],
               [('conv2_1*1', 384, 1)],
               [('conv3_1*1', 192, 1), ('conv4_1*7', 224, (1, 7)), ('conv5_1*7', 256, (7, 1))],
               [('conv6_1*1', 192, 1), ('conv7_1*7', 192, (1, 7)), ('conv8_7*1', 224, (7, 1)),
                ('conv9_1*7', 224, (1, 7)), ('conv10_7*1', 256, (7, 1))]]

REDUCTION_B = [[('maxpool_1',)],
               [('conv1_1*1', 192, 1), ('conv2_3*3', 192, 3, 2)],
               [('conv3_1*1', 256, 1), ('conv4_1*7', 256, (1, 7)), ('conv5_7*1', 320, (7, 1)),
                ('conv6_3*3', 320, 3, 2)]]

INCEPTION_C = [[('avgpool_1',), ('conv1_1*1', 256, 1)],
               [('conv2_1*1', 256, 1)],
               [('conv3_1*1', 384, 1), [('conv4_3*1', 256, (1, 3)), ('conv5_1*3', 256, (3, 1))]],
               [('conv6_1*1', 384, 1), ('conv7_1*3', 448, (1, 3)), ('conv8_3*1', 512, (3, 1)),
                [('conv9_1*3', 256, (3, 1)), ('conv10_3*1', 256, (1, 3))]]]


def layer(data, prefix, spec):
    name = '%s_%s' % (prefix, spec[0])
    if spec[0].startswith('avgpool'):
        return sym.Pooling(data, pool_type='avg', kernel=(3, 3), stride=(1, 1), pad=(1, 1),
                           name=name)
    if spec[0].startswith('maxpool'):
        return sym.Pooling(data, pool_type='max', kernel=(3, 3), stride=(2, 2), name=name)
    _, filters, kernel, *rest = spec
    stride = rest[0] if rest else 1
    padded = stride == 1 and 'valid' not in rest
    return conv_bn_relu(data, name, filters, kernel, stride,
                        same_pad(kernel) if padded else (0, 0))


def branch(data, prefix, layers):
    """The outputs of a branch: one, or several when it ends in parallel convolutions."""
    for spec in layers:
        if isinstance(spec, list):
            return [layer(data, prefix, parallel) for parallel in spec]
        data = layer(data, prefix, spec)
    return [data]


def block(data, prefix, branches, concat_name):
    outputs = [out for layers in branches for out in branch(data, prefix, layers)]
    return outputs[0] if len(outputs) == 1 else sym.Concat(*outputs, name=concat_name)


def get_symbol(num_classes=1000, dtype='float32', **kwargs):
    """Stem, 4 Inception-A, Reduction-A, 7 Inception-B, Reduction-B, 3 Inception-C, global
    average pooling, dropout 0.2, fc1. Built for 299x299 images (from 75x75 works)."""
    net = data_input(dtype)
    for i, branches in enumerate(STEM):
        net = block(net, 'in_stem', branches, 'in_stem_concat_%d' % i)
    stages = [(4, 'in%dA', INCEPTION_A, '_concat_1'), (1, 're%dA', REDUCTION_A, '_concat_1'),
              (7, 'in%dB', INCEPTION_B, '_concat_1'), (1, 're%dB', REDUCTION_B, '_concat_1'),
              (3, 'in%dC', INCEPTION_C, '_concat')]
    for repeats, name, branches, concat_suffix in stages:
        for i in range(1, repeats + 1):
            net = block(net, name % i, branches, name % i + concat_suffix)
    net = sym.Dropout(global_avg_pool(net, 'global_avgpool'), p=0.2, name='dropout')
    return classifier(net, num_classes, dtype)
