"""Building blocks the model definitions share: the input (with the optional float16 cast of
MXNet's examples), global pooling, the classifier head and the conv-BN-ReLU unit of the
Inception-v3/v4 and MobileNet symbols."""
from .. import symbol as sym

DTYPES = ('float32', 'float16')


def parse_image_shape(image_shape):
    """'3,224,224' (or a tuple) -> (channels, height, width)."""
    if isinstance(image_shape, str):
        image_shape = image_shape.split(',')
    return tuple(int(n) for n in image_shape)


def square(kernel):
    """3 -> (3, 3); a (height, width) pair is returned as a tuple."""
    return (kernel, kernel) if isinstance(kernel, int) else tuple(kernel)


def same_pad(kernel):
    """Padding that keeps the spatial size of a stride-1 convolution with an odd kernel."""
    return tuple(k // 2 for k in square(kernel))


def data_input(dtype='float32'):
    """The 'data' variable; for dtype='float16' the network computes in half precision."""
    if dtype not in DTYPES:
        raise ValueError('dtype must be one of %s, not %r' % (DTYPES, dtype))
    data = sym.Variable('data')
    return sym.Cast(data, dtype='float16') if dtype == 'float16' else data


def global_avg_pool(net, name):
    """Average over the whole feature map, whatever the input image size."""
    return sym.Pooling(net, global_pool=True, pool_type='avg', name=name)


def classifier(net, num_classes, dtype='float32', name='fc1'):
    """Flatten -> FullyConnected(num_classes) -> (back to float32) -> SoftmaxOutput('softmax')."""
    net = sym.Flatten(net, name='flatten')
    return softmax_output(sym.FullyConnected(net, num_hidden=num_classes, name=name), dtype)


def softmax_output(logits, dtype='float32'):
    if dtype == 'float16':
        logits = sym.Cast(logits, dtype='float32')
    return sym.SoftmaxOutput(logits, name='softmax')


def conv_bn_relu(data, name, num_filter, kernel=(1, 1), stride=(1, 1), pad=(0, 0), num_group=1):
    """Convolution without bias, BatchNorm with gamma fixed to 1, ReLU, named '<name>_conv2d',
    '<name>_batchnorm' and '<name>_relu' (MXNet's Inception-v3, Inception-v4 and MobileNet)."""
    net = sym.Convolution(data, num_filter=num_filter, kernel=square(kernel), stride=square(stride),
                          pad=square(pad), num_group=num_group, no_bias=True,
                          name='%s_conv2d' % name)
    net = sym.BatchNorm(net, fix_gamma=True, name='%s_batchnorm' % name)
    return sym.Activation(net, act_type='relu', name='%s_relu' % name)
