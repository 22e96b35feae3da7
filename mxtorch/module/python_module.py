"""PythonModule: a parameter-free module whose computation is written in Python, and
PythonLossModule, a loss stage (typically last in a SequentialModule) with a Python gradient."""
import logging

import numpy as np

from ..base import MXNetError
from ..initializer import Uniform
from ..ndarray import NDArray, array as nd_array, one_hot, softmax
from .base_module import BaseModule


class PythonModule(BaseModule):
    """A module without parameters: init_params, init_optimizer and update do nothing.

    Subclasses implement forward, backward, get_outputs, get_input_grads and
    `_compute_output_shapes()` (the [(name, shape)] of the outputs, called by bind).
    """

    def __init__(self, data_names, label_names, output_names, logger=logging):
        super().__init__(logger=logger)
        self._data_names = list(data_names)
        self._label_names = None if label_names is None else list(label_names)
        self._output_names = output_names
        self._data_shapes = None
        self._label_shapes = None
        self._output_shapes = None

    @property
    def data_names(self):
        return self._data_names

    @property
    def output_names(self):
        return self._output_names

    @property
    def data_shapes(self):
        return self._data_shapes

    @property
    def label_shapes(self):
        return self._label_shapes

    @property
    def output_shapes(self):
        return self._output_shapes

    def get_params(self):
        return {}, {}

    def init_params(self, initializer=Uniform(0.01), arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Nothing to initialise; the (empty) parameters count as initialised."""
        self.params_initialized = True

    def init_optimizer(self, kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.01),), force_init=False):
        """Nothing to optimise."""

    def update(self):
        """Nothing to update."""

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """eval_metric.update(labels, outputs); nothing when the module was bound without
        labels."""
        if self._label_shapes is None:
            return
        if pre_sliced:
            raise RuntimeError('PythonModule does not support presliced labels')
        eval_metric.update(labels, self.get_outputs())

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req='write'):
        """Record the input shapes (names must match, in order) and compute the output shapes."""
        if self.binded and not force_rebind:
            self.logger.warning('Already bound, ignoring bind()')
            return
        assert grad_req == 'write', \
            "Python module only supports grad_req='write', got %r" % (grad_req,)
        given = [desc[0] for desc in data_shapes]
        assert given == self._data_names, \
            'data_shapes names %s do not match data_names %s' % (given, self._data_names)
        if label_shapes is not None:
            given = [desc[0] for desc in label_shapes]
            assert given == self._label_names, \
                'label_shapes names %s do not match label_names %s' % (given, self._label_names)
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self._data_shapes = data_shapes
        self._label_shapes = label_shapes
        self._output_shapes = self._compute_output_shapes()
        self.binded = True

    def _compute_output_shapes(self):
        raise NotImplementedError('%s must implement _compute_output_shapes()'
                                  % type(self).__name__)

    def install_monitor(self, mon):
        """A Python module has no executors, so there is nothing to install the monitor on (a
        SequentialModule with a Python stage installs it on its other modules)."""


def softmax_cross_entropy_grad(scores, labels):
    """The default gradient of PythonLossModule: d/dscores of the softmax cross-entropy,
    softmax(scores) - one_hot(labels), per sample (not divided by the batch size, like
    SoftmaxOutput's default). scores (N, C) or (N, C, ...) flattened to (N, C * ...); labels
    hold N class indices."""
    if labels is None:
        raise MXNetError('PythonLossModule: backward needs the labels of a training forward '
                         '(forward with is_train=True and a batch with labels)')
    batch = scores.shape[0]
    flat = scores.reshape((batch, -1))
    classes = flat.shape[1]
    if labels.size != batch:
        raise MXNetError('PythonLossModule: labels must hold one class index per sample: '
                         'expected %d labels for scores of shape %s, given shape %s'
                         % (batch, scores.shape, labels.shape))
    indices = labels.reshape((batch,)).asnumpy()
    bad = (indices < 0) | (indices >= classes) | (indices != np.floor(indices))
    if bad.any():
        raise MXNetError('PythonLossModule: labels must be class indices in [0, %d), given %r'
                         % (classes, indices[bad][0].item()))
    grad = softmax(flat, axis=-1) - one_hot(labels.reshape((batch,)), depth=classes,
                                            dtype=flat.dtype)
    return grad.reshape(scores.shape)


class PythonLossModule(PythonModule):
    """A loss stage: its output `<name>_output` is its input (the scores) unchanged, and its
    input gradient is grad_func(scores, labels), a numpy array or NDArray. Without grad_func
    the gradient is that of the softmax cross-entropy, softmax(scores) - one_hot(labels)
    (softmax_cross_entropy_grad; MXNet raised NotImplementedError instead)."""

    def __init__(self, name='pyloss', data_names=('data',), label_names=('softmax_label',),
                 logger=logging, grad_func=None):
        super().__init__(data_names, label_names, [name + '_output'], logger=logger)
        assert len(self._data_names) == 1, \
            'PythonLossModule takes exactly one data name, got %s' % self._data_names
        assert self._label_names is not None and len(self._label_names) == 1, \
            'PythonLossModule takes exactly one label name, got %s' % (self._label_names,)
        assert grad_func is None or callable(grad_func), 'grad_func must be callable'
        self._name = name
        self._grad_func = grad_func
        self._scores = None
        self._labels = None
        self._scores_grad = None

    def _compute_output_shapes(self):
        return [(self._name + '_output', self._data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        """Keep the scores (and, when training, the labels) for get_outputs and backward."""
        self._scores = data_batch.data[0]
        if is_train is None:
            is_train = self.for_training
        if is_train:
            self._labels = data_batch.label[0]

    def get_outputs(self, merge_multi_context=True):
        assert merge_multi_context, \
            'PythonLossModule runs on one context: merge_multi_context must be True'
        return [self._scores]

    def backward(self, out_grads=None):
        """Gradient of the loss with respect to the scores: grad_func(scores, labels), by
        default softmax_cross_entropy_grad."""
        assert out_grads is None, 'For a loss module, out_grads should be None'
        assert self.for_training, 're-bind with for_training=True to run backward'
        grad_func = self._grad_func or softmax_cross_entropy_grad
        grad = grad_func(self._scores, self._labels)
        self._scores_grad = grad if isinstance(grad, NDArray) else nd_array(grad)

    def get_input_grads(self, merge_multi_context=True):
        assert merge_multi_context, \
            'PythonLossModule runs on one context: merge_multi_context must be True'
        return [self._scores_grad]
