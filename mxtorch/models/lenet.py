"""LeNet (LeCun et al., 1998) as in MXNet's image-classification examples."""
from .. import symbol as sym


def get_symbol(num_classes=10, small_input=False, **kwargs):
    """conv(20) -> tanh -> maxpool -> conv(50) -> tanh -> maxpool -> fc(500) -> tanh -> fc.

    small_input=True uses 3x3 kernels with padding, for 8x8 images such as the UCI digits;
    otherwise 5x5 kernels for 28x28 MNIST-sized images.
    """
    kernel, pad = ((3, 3), (1, 1)) if small_input else ((5, 5), (0, 0))
    net = sym.Variable('data')
    for i, filters in enumerate((20, 50)):
        net = sym.Convolution(net, kernel=kernel, pad=pad, num_filter=filters,
                              name='conv%d' % (i + 1))
        net = sym.Activation(net, act_type='tanh', name='tanh%d' % (i + 1))
        net = sym.Pooling(net, pool_type='max', kernel=(2, 2), stride=(2, 2),
                          name='pool%d' % (i + 1))
    net = sym.Flatten(net, name='flatten')
    net = sym.FullyConnected(net, num_hidden=500, name='fc1')
    net = sym.Activation(net, act_type='tanh', name='tanh3')
    net = sym.FullyConnected(net, num_hidden=num_classes, name='fc2')
    return sym.SoftmaxOutput(net, name='softmax')
