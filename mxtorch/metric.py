"""mx.metric: evaluation metrics accumulated batch by batch during training and scoring.

Every metric keeps two running pairs: `sum_metric / num_inst` (local, cleared by `reset_local()`,
e.g. at each logging interval) and `global_sum_metric / global_num_inst` (cleared only by
`reset()`). `update(labels, preds)` takes lists of NDArrays (NumPy arrays work too), one label per
prediction. The arithmetic runs in torch on the arrays' tensors, on their device, and only the
resulting scalars come back to Python.

MXNet 1.9.1's numbers are reproduced, quirks included: MAE/MSE/RMSE and macro F1/MCC/Pearson
average per-batch values with equal weight; micro PearsonCorrelation's `get_global()` is 0.0.
"""
import json
import math
import warnings
from collections import OrderedDict

import numpy
import torch

from .base import MXNetError, numeric_types
from .ndarray import NDArray

_REGISTRY = {}


def register(klass, name=None):
    """Class decorator: make `klass` creatable by `name` (default: its lower-cased class name)."""
    if not (isinstance(klass, type) and issubclass(klass, EvalMetric)):
        raise TypeError('register expects a subclass of EvalMetric, got %r' % (klass,))
    name = (name or klass.__name__).lower()
    if name in _REGISTRY and _REGISTRY[name] is not klass:
        warnings.warn('metric %s.%s registered as %r overrides %s.%s'
                      % (klass.__module__, klass.__name__, name,
                         _REGISTRY[name].__module__, _REGISTRY[name].__name__))
    _REGISTRY[name] = klass
    return klass


def alias(*names):
    """Class decorator: also make the class creatable under each of `names`."""
    def decorate(klass):
        for name in names:
            register(klass, name)
        return klass
    return decorate


class UnknownMetricError(MXNetError, AssertionError):
    """metric.create was given a name nobody registered (MXNet asserts this)."""


def create(metric, *args, **kwargs):
    """A metric from a name, a list, a callable, a config dict, a JSON string or an instance.

    * callable `feval(label, pred)` -> CustomMetric;
    * list -> CompositeEvalMetric of each element created with the same extra arguments;
    * str -> the registered class (case-insensitive) built with `*args, **kwargs`; a string
      starting with '[' is JSON `[name, {kwargs}]`, with '{' JSON `{"metric": name, ...kwargs}`;
    * dict (e.g. from `get_config()`) -> `create(**dict)`;
    * an EvalMetric instance is returned as is.
    """
    if callable(metric) and not isinstance(metric, type):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise AssertionError('metric is already an instance. Additional arguments are invalid')
        return metric
    if isinstance(metric, dict):
        config = dict(metric)
        if 'metric' not in config:
            raise ValueError('create: a config dict needs a "metric" key naming the class, got %s'
                             % sorted(config))
        return create(config.pop('metric'), *args, **dict(config, **kwargs))
    if not isinstance(metric, str):
        raise TypeError('create: metric must be a name, list, callable, dict or EvalMetric, '
                        'got %s' % type(metric).__name__)
    text = metric.strip()
    if text.startswith('[') or text.startswith('{'):
        if args or kwargs:
            raise ValueError('create: extra arguments are not allowed with a JSON metric %s'
                             % text)
        loaded = json.loads(text)
        if isinstance(loaded, list):
            name, json_kwargs = loaded
            return create(name, **json_kwargs)
        return create(loaded)
    name = text.lower()
    if name not in _REGISTRY:
        raise UnknownMetricError('%s is not registered. Please register with metric.register '
                                 'first (known names: %s)' % (name, ', '.join(sorted(_REGISTRY))))
    return _REGISTRY[name](*args, **kwargs)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raise ValueError unless labels and preds agree in length (or in shape with `shape=True`).

    With `wrap`, a single array is first wrapped into a one-element list.
    """
    if wrap:
        if isinstance(labels, (NDArray, numpy.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
    if shape:
        label_shape, pred_shape = tuple(labels.shape), tuple(preds.shape)
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise ValueError('Shape of labels {} does not match shape of predictions {}'
                         .format(label_shape, pred_shape))
    return labels, preds


def _tensor(arr):
    """The torch tensor behind an NDArray (or a NumPy array / tensor), without autograd history."""
    if isinstance(arr, NDArray):
        return arr._tensor.detach()
    if isinstance(arr, torch.Tensor):
        return arr.detach()
    return torch.as_tensor(numpy.asarray(arr))


def _label_pred(label, pred):
    """(label, pred) tensors, the label moved to the prediction's device."""
    pred_t = _tensor(pred)
    return _tensor(label).to(pred_t.device), pred_t


def _numpy(arr):
    return arr.asnumpy() if isinstance(arr, NDArray) else numpy.asarray(arr)


class EvalMetric:
    """Base class: a named running average `sum_metric / num_inst`.

    Subclasses implement `update(labels, preds)`. `output_names` / `label_names` select, by name,
    which outputs and labels `update_dict` passes on.
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop('has_global_stats', False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return 'EvalMetric: {}'.format(dict(self.get_name_value()))

    def get_config(self):
        """The constructor arguments as a dict; `create(config)` rebuilds the metric."""
        config = dict(self._kwargs)
        config.update({'metric': self.__class__.__name__, 'name': self.name,
                       'output_names': self.output_names, 'label_names': self.label_names})
        return config

    def update_dict(self, label, pred):
        """Update from dicts name -> array, picking `label_names` / `output_names` when set."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        raise NotImplementedError()

    def reset(self):
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        self.num_inst = 0
        self.sum_metric = 0.0

    def _add(self, value, count):
        """Add to the local and the global sums."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def get(self):
        """(name, value) since the last reset_local; value is nan before any update."""
        if self.num_inst == 0:
            return self.name, float('nan')
        return self.name, self.sum_metric / self.num_inst

    def get_global(self):
        """(name, value) since the last reset."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return self.name, float('nan')
        return self.name, self.global_sum_metric / self.global_num_inst

    def get_name_value(self):
        return _name_value_pairs(*self.get())

    def get_global_name_value(self):
        return _name_value_pairs(*self.get_global())


def _name_value_pairs(name, value):
    if not isinstance(name, list):
        name, value = [name], [value]
    return list(zip(name, value))


@register
@alias('composite')
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; `get()` returns (list of names, list of values)."""

    def __init__(self, metrics=None, name='composite', output_names=None, label_names=None):
        self.metrics = [create(m) for m in (metrics or [])]
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def add(self, metric):
        self.metrics.append(create(metric))

    def get_metric(self, index):
        if not -len(self.metrics) <= index < len(self.metrics):
            raise ValueError('Metric index {} is out of range 0 and {}'
                             .format(index, len(self.metrics)))
        return self.metrics[index]

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in self.metrics:
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    def get(self):
        return self._collect(lambda m: m.get())

    def get_global(self):
        return self._collect(lambda m: m.get_global())

    def _collect(self, getter):
        names, values = [], []
        for metric in self.metrics:
            name, value = getter(metric)
            names.extend(name if isinstance(name, list) else [name])
            values.extend([value] if isinstance(value, numeric_types) else value)
        return names, values

    def get_config(self):
        config = super().get_config()
        config['metrics'] = [m.get_config() for m in self.metrics]
        return config


@register
@alias('acc')
class Accuracy(EvalMetric):
    """Fraction of correct class predictions.

    A prediction with the label's shape holds class indices; otherwise its argmax along `axis`
    is taken. Labels and predictions are truncated to int32 before comparing.
    """

    def __init__(self, axis=1, name='accuracy', output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _label_pred(label, pred)
            if pred.shape != label.shape:
                pred = pred.argmax(dim=self.axis)
            elif pred.is_floating_point():
                pred = pred.to(torch.int32)          # class indices, truncated as MXNet does
            pred = pred.reshape(-1)
            label = label.reshape(-1)
            if label.is_floating_point():
                label = label.to(torch.int32)
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), pred.numel())


@register
@alias('top_k_accuracy', 'top_k_acc')
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the `top_k` highest-scored classes."""

    def __init__(self, top_k=1, name='top_k_accuracy', output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        if self.top_k <= 1:
            raise AssertionError('Please use Accuracy if top_k is no more than 1')
        self.name += '_%d' % self.top_k

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _label_pred(label, pred)
            if pred.dim() > 2:
                raise ValueError('TopKAccuracy: predictions must have at most 2 dims, got shape %s'
                                 % (tuple(pred.shape),))
            check_label_shapes(label, pred)
            if pred.dim() == 1:
                self._add(self._one_dim_hits(label, pred), pred.shape[0])
                continue
            k = min(pred.shape[1], self.top_k)
            top = pred.float().topk(k, dim=1).indices
            hits = (top == label.to(torch.int64).reshape(-1, 1)).any(dim=1).sum()
            self._add(hits.item(), pred.shape[0])

    def _one_dim_hits(self, label, pred):
        # MXNet compares a 1-D prediction's partition order position by position with the labels
        order = numpy.argpartition(pred.cpu().numpy().astype(numpy.float32), -self.top_k)
        return int((order == label.cpu().numpy().astype(numpy.int32).ravel()).sum())


def _binary_counts(label, pred, metric_name):
    """[tp, fp, fn, tn] of argmax(pred, axis=1) against labels (positive class = 1)."""
    label, pred = _label_pred(label, pred)
    label = label.to(torch.int32).reshape(-1)
    check_label_shapes(label, pred)
    distinct = torch.unique(label).numel()
    if distinct > 2:
        raise ValueError('%s currently only supports binary classification; the labels hold %d '
                         'distinct values' % (metric_name, distinct))
    predicted = pred.argmax(dim=1) == 1
    actual = label == 1
    return torch.stack([(predicted & actual).sum(), (predicted & ~actual).sum(),
                        (~predicted & actual).sum(), (~predicted & ~actual).sum()]).tolist()


def _fscore(tp, fp, fn, tn):
    precision = tp / (tp + fp) if tp + fp > 0 else 0.
    recall = tp / (tp + fn) if tp + fn > 0 else 0.
    if precision + recall > 0:
        return 2 * precision * recall / (precision + recall)
    return 0.


def _matthews(tp, fp, fn, tn):
    if tp + fp + fn + tn == 0:
        return 0.
    denominator = 1.
    for marginal in (tp + fp, tp + fn, tn + fp, tn + fn):
        if marginal:
            denominator *= marginal
    return (tp * tn - fp * fn) / math.sqrt(denominator)


class _BinaryMetric(EvalMetric):
    """Shared by F1 and MCC: a score of binary confusion counts.

    'macro' scores the counts pooled over the pairs of one `update` call and adds that score
    with weight 1 (an average of per-update scores); 'micro' scores the counts pooled since the
    last reset_local (global: since reset), weighted by the number of examples.
    """
    _score = None   # f(tp, fp, fn, tn), set by each subclass

    def __init__(self, name, output_names, label_names, average):
        if average not in ('macro', 'micro'):
            raise ValueError("%s: average must be 'macro' or 'micro', got %r"
                             % (type(self).__name__, average))
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        counts = [0, 0, 0, 0]
        for label, pred in zip(labels, preds):
            counts = [a + b for a, b in
                      zip(counts, _binary_counts(label, pred, type(self).__name__))]
        if self.average == 'macro':
            self._add(self._score(*counts), 1)
            return
        self._local = [a + b for a, b in zip(self._local, counts)]
        self._global = [a + b for a, b in zip(self._global, counts)]
        self.num_inst, self.global_num_inst = sum(self._local), sum(self._global)
        self.sum_metric = self._score(*self._local) * self.num_inst
        self.global_sum_metric = self._score(*self._global) * self.global_num_inst

    def reset(self):
        super().reset()
        self._local = [0, 0, 0, 0]
        self._global = [0, 0, 0, 0]

    def reset_local(self):
        super().reset_local()
        self._local = [0, 0, 0, 0]


@register
class F1(_BinaryMetric):
    """F1 score of a binary classifier (class 1 positive); predictions are (N, 2) scores."""
    _score = staticmethod(_fscore)

    def __init__(self, name='f1', output_names=None, label_names=None, average='macro'):
        super().__init__(name, output_names, label_names, average)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient of a binary classifier; predictions are (N, 2) scores."""
    _score = staticmethod(_matthews)

    def __init__(self, name='mcc', output_names=None, label_names=None, average='macro'):
        super().__init__(name, output_names, label_names, average)


@register
class Perplexity(EvalMetric):
    """exp of the mean negative log-probability of the labels.

    `pred` holds probabilities along `axis`; positions whose label equals `ignore_label` count
    neither in the sum nor in the number of instances.
    """

    def __init__(self, ignore_label, axis=-1, name='perplexity', output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds):
        check_label_shapes(labels, preds)
        for label, pred in zip(labels, preds):
            label, pred = _label_pred(label, pred)
            classes = pred.shape[self.axis]
            probs = pred.movedim(self.axis, -1).reshape(-1, classes)
            label = label.reshape(-1)
            if label.numel() != probs.shape[0]:
                raise ValueError('Perplexity: label shape %s does not match prediction shape %s '
                                 '(one label per distribution along axis %d)'
                                 % (tuple(label.shape), tuple(pred.shape), self.axis))
            index = label.to(torch.int64).clamp(0, classes - 1)
            picked = probs.gather(1, index.reshape(-1, 1)).reshape(-1)
            ignored = torch.zeros((), dtype=torch.int64, device=picked.device)
            if self.ignore_label is not None:
                ignore = label == self.ignore_label
                picked = torch.where(ignore, torch.ones_like(picked), picked)
                ignored = ignore.sum()
            loss = -torch.log(picked.clamp(min=1e-10)).sum()
            loss, ignored = torch.stack([loss.double(), ignored.double()]).tolist()
            self._add(loss, picked.numel() - int(ignored))

    def get(self):
        if self.num_inst == 0:
            return self.name, float('nan')
        return self.name, math.exp(self.sum_metric / self.num_inst)

    def get_global(self):
        if self.global_num_inst == 0:
            return self.name, float('nan')
        return self.name, math.exp(self.global_sum_metric / self.global_num_inst)


def _differences(labels, preds):
    """label - pred per pair, 1-D arrays taken as (N, 1) columns, in a floating dtype."""
    labels, preds = check_label_shapes(labels, preds, True)
    for label, pred in zip(labels, preds):
        label, pred = _label_pred(label, pred)
        if label.dim() == 1:
            label = label.reshape(-1, 1)
        if pred.dim() == 1:
            pred = pred.reshape(-1, 1)
        diff = label - pred
        yield diff if diff.is_floating_point() else diff.double()


@register
class MAE(EvalMetric):
    """Mean absolute error, averaged over batches (each update pair weighs 1)."""

    def __init__(self, name='mae', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        for diff in _differences(labels, preds):
            self._add(diff.abs().mean().item(), 1)


@register
class MSE(EvalMetric):
    """Mean squared error, averaged over batches (each update pair weighs 1)."""

    def __init__(self, name='mse', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        for diff in _differences(labels, preds):
            self._add(diff.square().mean().item(), 1)


@register
class RMSE(EvalMetric):
    """Root mean squared error of each batch, averaged over batches."""

    def __init__(self, name='rmse', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        for diff in _differences(labels, preds):
            self._add(diff.square().mean().sqrt().item(), 1)


def _picked_nll(label, pred, eps):
    """(sum of -log(pred[i, label_i] + eps), N) for (N, C) probabilities."""
    label, pred = _label_pred(label, pred)
    label = label.reshape(-1)
    if label.numel() != pred.shape[0]:
        raise ValueError('%d labels given for predictions of shape %s (one label per row expected)'
                         % (label.numel(), tuple(pred.shape)))
    rows = torch.arange(label.numel(), device=pred.device)
    prob = pred[rows, label.to(torch.int64)]
    return (-torch.log(prob + eps)).sum().item(), label.numel()


@register
@alias('ce')
class CrossEntropy(EvalMetric):
    """Mean of -log(p[label] + eps) over samples; predictions are (N, C) probabilities."""

    def __init__(self, eps=1e-12, name='cross-entropy', output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._add(*_picked_nll(label, pred, self.eps))


@register
@alias('nll_loss')
class NegativeLogLikelihood(CrossEntropy):
    """Mean negative log-likelihood of the labels; the same formula as CrossEntropy."""

    def __init__(self, eps=1e-12, name='nll-loss', output_names=None, label_names=None):
        super().__init__(eps=eps, name=name, output_names=output_names, label_names=label_names)


@register
@alias('pearsonr')
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of flattened predictions and labels.

    'macro' averages the per-pair correlation coefficients. 'micro' keeps running means, sums of
    squared deviations and a co-moment over everything seen since `reset()` (reset_local does not
    clear them); its `get_global()` is 0.0, as in MXNet 1.9.1.
    """

    def __init__(self, name='pearsonr', output_names=None, label_names=None, average='macro'):
        if average not in ('macro', 'micro'):
            raise ValueError("PearsonCorrelation: average must be 'macro' or 'micro', got %r"
                             % (average,))
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset(self):
        super().reset()
        self._label_stats = [0, 0., 0.]   # count, mean, sum of squared deviations
        self._pred_stats = [0, 0., 0.]
        self._comoment = 0.

    @staticmethod
    def _running(stats, values):
        count, mean, m2 = stats
        count += len(values)
        delta = values - mean
        mean += numpy.sum(delta / count)
        m2 += numpy.sum(delta * (values - mean))
        return [count, mean, m2]

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            label = _numpy(label).ravel().astype(numpy.float64)
            pred = _numpy(pred).ravel().astype(numpy.float64)
            if self.average == 'macro':
                self._add(float(numpy.corrcoef(pred, label)[0, 1]), 1)
                continue
            self.num_inst += 1
            self.global_num_inst += 1
            self._label_stats = self._running(self._label_stats, label)
            self._comoment += numpy.sum((label - self._label_stats[1]) * (pred - self._pred_stats[1]))
            self._pred_stats = self._running(self._pred_stats, pred)

    def get(self):
        if self.num_inst == 0:
            return self.name, float('nan')
        if self.average == 'macro':
            return self.name, self.sum_metric / self.num_inst
        n_label, _, m2_label = self._label_stats
        n_pred, _, m2_pred = self._pred_stats
        value = self._comoment / ((n_label - 1) * numpy.sqrt(m2_pred / (n_pred - 1))
                                  * numpy.sqrt(m2_label / (n_label - 1)))
        return self.name, float(value)


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation from a confusion matrix accumulated over updates.

    The matrix grows when a larger class index shows up. Each update pair counts one instance,
    so `sum_metric` is the current coefficient times `num_inst`.
    """

    def __init__(self, name='pcc', output_names=None, label_names=None):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    @staticmethod
    def _coefficient(cmat):
        n = cmat.sum()
        predicted = cmat.sum(axis=1)
        actual = cmat.sum(axis=0)
        cov_pp = numpy.sum(predicted * (n - predicted))
        cov_aa = numpy.sum(actual * (n - actual))
        if cov_pp == 0 or cov_aa == 0:
            return float('nan')
        cov_pa = numpy.sum(cmat.diagonal() * n - predicted * actual)
        return float(cov_pa / (cov_pp * cov_aa) ** 0.5)

    @property
    def sum_metric(self):
        return self._coefficient(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return self._coefficient(self.gcm) * self.global_num_inst

    def _grow(self, classes):
        extra = classes - self.k
        self.lcm = numpy.pad(self.lcm, ((0, extra), (0, extra)))
        self.gcm = numpy.pad(self.gcm, ((0, extra), (0, extra)))
        self.k = classes

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _numpy(label).astype(numpy.int32)
            pred = _numpy(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype(numpy.int32)
            label, pred = label.ravel(), pred.ravel()
            largest = int(max(pred.max(), label.max()))
            if largest >= self.k:
                self._grow(largest + 1)
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred, label), 1)
            self.lcm += batch
            self.gcm += batch
            self.num_inst += 1
            self.global_num_inst += 1

    def reset(self):
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))


@register
class Loss(EvalMetric):
    """Mean of the prediction values (the outputs are losses); labels are ignored."""

    def __init__(self, name='loss', output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        for pred in preds:
            pred = _tensor(pred)
            self._add(pred.sum().item(), pred.numel())


@register
class Torch(Loss):
    """Loss under the name 'torch' (kept for MXNet compatibility)."""

    def __init__(self, name='torch', output_names=None, label_names=None):
        super().__init__(name=name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Loss under the name 'caffe' (kept for MXNet compatibility)."""

    def __init__(self, name='caffe', output_names=None, label_names=None):
        super().__init__(name=name, output_names=output_names, label_names=label_names)


@register
class CustomMetric(EvalMetric):
    """A metric computed by `feval(label, pred)` on NumPy arrays.

    `feval` returns either a value (counted as one instance) or a tuple (sum, count). The name
    defaults to `feval.__name__`, wrapped as 'custom(<lambda>)' for lambdas. With
    `allow_extra_outputs`, more predictions than labels are accepted (extra ones are ignored).
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if '<' in name:
                name = 'custom(%s)' % name
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            result = self._feval(_numpy(label), _numpy(pred))
            if isinstance(result, tuple):
                self._add(*result)
            else:
                self._add(result, 1)

    def get_config(self):
        raise NotImplementedError('CustomMetric cannot be serialized')


def np(numpy_feval, name=None, allow_extra_outputs=False):  # pylint: disable=invalid-name
    """A CustomMetric from a function of NumPy arrays `numpy_feval(label, pred)`."""
    def feval(label, pred):
        return numpy_feval(label, pred)
    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
