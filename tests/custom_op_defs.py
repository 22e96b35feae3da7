"""Python operators used by tests/test_custom_op.py and fixtures/gen_custom_op.py, written
against whichever `mx` (mxtorch or MXNet 1.9.1) is passed to define()."""
import numpy as np


def define(mx):
    class Softmax(mx.operator.CustomOp):
        """Softmax over axis 1 with a cross-entropy gradient (a loss: need_top_grad=False)."""

        def forward(self, is_train, req, in_data, out_data, aux):
            x = in_data[0].asnumpy()
            y = np.exp(x - x.max(axis=1, keepdims=True))
            y /= y.sum(axis=1, keepdims=True)
            self.assign(out_data[0], req[0], mx.nd.array(y))

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            label = in_data[1].asnumpy().ravel().astype(np.int64)
            y = out_data[0].asnumpy()
            y[np.arange(label.shape[0]), label] -= 1.0
            self.assign(in_grad[0], req[0], mx.nd.array(y))

    @mx.operator.register('test_softmax')
    class SoftmaxProp(mx.operator.CustomOpProp):
        def __init__(self):
            super(SoftmaxProp, self).__init__(need_top_grad=False)

        def list_arguments(self):
            return ['data', 'label']

        def infer_shape(self, in_shape):
            return [in_shape[0], (in_shape[0][0],)], [in_shape[0]], []

        def create_operator(self, ctx, shapes, dtypes):
            return Softmax()

    class ScaleSquare(mx.operator.CustomOp):
        """Two outputs: factor * x and x * x (needs the head gradients)."""

        def __init__(self, factor):
            super(ScaleSquare, self).__init__()
            self.factor = factor

        def forward(self, is_train, req, in_data, out_data, aux):
            self.assign(out_data[0], req[0], in_data[0] * self.factor)
            self.assign(out_data[1], req[1], in_data[0] * in_data[0])

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            self.assign(in_grad[0], req[0],
                        out_grad[0] * self.factor + 2 * in_data[0] * out_grad[1])

    @mx.operator.register('test_scale_square')
    class ScaleSquareProp(mx.operator.CustomOpProp):
        def __init__(self, factor='2'):
            super(ScaleSquareProp, self).__init__(need_top_grad=True)
            self.factor = float(factor)

        def list_outputs(self):
            return ['output', 'square']

        def create_operator(self, ctx, shapes, dtypes):
            return ScaleSquare(self.factor)


def networks(mx):
    """name -> symbol of the fixture networks."""
    data = mx.sym.Variable('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    two = mx.sym.Custom(fc, op_type='test_scale_square', factor=1.5, name='sq')
    return {
        'softmax': mx.sym.Custom(fc, op_type='test_softmax', name='softmax'),
        'scale_square': mx.sym.Group([two[0], mx.sym.sum(two[1] * 2, axis=1, name='total')]),
    }
