"""The multi-layer perceptron of MXNet's image-classification examples."""
from .. import symbol as sym


def get_symbol(num_classes=10, hidden=(128, 64), **kwargs):
    """data -> flatten -> FC/relu layers (fc1, relu1, ...) -> FC(num_classes) -> SoftmaxOutput."""
    net = sym.Flatten(sym.Variable('data'), name='flatten')
    for i, units in enumerate(hidden):
        net = sym.FullyConnected(net, num_hidden=units, name='fc%d' % (i + 1))
        net = sym.Activation(net, act_type='relu', name='relu%d' % (i + 1))
    net = sym.FullyConnected(net, num_hidden=num_classes, name='fc%d' % (len(hidden) + 1))
    return sym.SoftmaxOutput(net, name='softmax')
