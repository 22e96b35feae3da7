"""mx.metric against MXNet 1.9.1's golden values and independent NumPy computations."""
import json
import math

import numpy as np
import pytest

import mxtorch as mx
import mxtorch.metric as metric
from mxtorch.ndarray import NDArray


def _cases(golden):
    return json.loads((golden / 'metrics' / 'metrics.json').read_text())


def _nd(values):
    return None if values is None else mx.nd.array(values)


def _update(m, batch):
    m.update([_nd(batch['label'])], [_nd(batch['pred'])])


def _check(got, expected, rtol):
    for field, want in expected.items():
        value = got[field]
        if isinstance(want, list):
            assert value[0] == want[0], field
            value, want = value[1], want[1]
        np.testing.assert_allclose(value, want, rtol=rtol, atol=0, err_msg=field)


CASE_TAGS = ['accuracy', 'accuracy_pred_is_index', 'top_k_accuracy_k2', 'f1_macro_default',
             'f1_micro', 'mcc_macro_default', 'mcc_micro', 'mae', 'mse', 'rmse',
             'pearsonr_macro_default', 'pearsonr_micro', 'perplexity_ignore0',
             'perplexity_no_ignore', 'cross_entropy', 'nll_loss', 'loss']


def test_golden_covers_every_case(golden):
    assert sorted(_cases(golden)['cases']) == sorted(CASE_TAGS)


@pytest.mark.parametrize('tag', CASE_TAGS)
def test_golden_case(golden, tag):
    case = _cases(golden)['cases'][tag]
    rtol = 1e-5 if tag.startswith('perplexity') else 1e-6
    m = metric.create(case['create_name'], **case['kwargs'])
    assert type(m).__name__ == case['class']
    first, second = case['batches']
    state = lambda: {'get': m.get(), 'get_global': m.get_global(),  # noqa: E731
                     'num_inst': m.num_inst, 'sum_metric': m.sum_metric}
    _update(m, first)
    _check(state(), case['after_batch1'], rtol)
    _update(m, second)
    _check(state(), case['after_batch2'], rtol)
    m.reset_local()
    _update(m, second)
    _check(state(), case['after_reset_local_then_batch2'], rtol)


def test_golden_composite(golden):
    cases = _cases(golden)
    m = metric.create(['acc', 'ce'])
    for batch in cases['cases']['accuracy']['batches']:
        _update(m, batch)
    names, values = m.get()
    want_names, want_values = cases['composite_acc_ce_on_accuracy_batches']['get']
    assert names == want_names
    np.testing.assert_allclose(values, want_values, rtol=1e-6)


# ---- registry and create -----------------------------------------------------------------------
REGISTRY = {
    'acc': metric.Accuracy, 'accuracy': metric.Accuracy, 'top_k_acc': metric.TopKAccuracy,
    'top_k_accuracy': metric.TopKAccuracy, 'topkaccuracy': metric.TopKAccuracy, 'f1': metric.F1,
    'mcc': metric.MCC, 'perplexity': metric.Perplexity, 'mae': metric.MAE, 'mse': metric.MSE,
    'rmse': metric.RMSE, 'ce': metric.CrossEntropy, 'crossentropy': metric.CrossEntropy,
    'nll_loss': metric.NegativeLogLikelihood,
    'negativeloglikelihood': metric.NegativeLogLikelihood,
    'pearsonr': metric.PearsonCorrelation, 'pearsoncorrelation': metric.PearsonCorrelation,
    'pcc': metric.PCC, 'loss': metric.Loss, 'torch': metric.Torch, 'caffe': metric.Caffe,
    'composite': metric.CompositeEvalMetric, 'compositeevalmetric': metric.CompositeEvalMetric,
}


@pytest.mark.parametrize('name', sorted(REGISTRY))
def test_registry_names(name):
    args = {'top_k': 2} if 'top' in name else {'ignore_label': None} if name == 'perplexity' else {}
    assert type(metric.create(name.upper(), **args)) is REGISTRY[name]


def test_create_forms():
    assert type(metric.create('custommetric', lambda l, p: 0.0)) is metric.CustomMetric
    with pytest.raises(AssertionError, match='foo is not registered'):
        metric.create('foo')                     # what MXNet raises, and an MXNetError too
    with pytest.raises(mx.MXNetError, match=r'known names: acc, accuracy, .*top_k_accuracy'):
        metric.create('foo')
    acc = metric.Accuracy(axis=0)
    assert metric.create(acc) is acc
    with pytest.raises(AssertionError):
        metric.create(acc, 3)
    assert metric.create('{"metric": "acc", "axis": 0}').axis == 0
    assert metric.create('["top_k_accuracy", {"top_k": 4}]').name == 'top_k_accuracy_4'
    assert metric.create({'metric': 'acc', 'axis': 0}).axis == 0
    composite = metric.create(['acc', 'ce', ['mse']])
    assert [type(m) for m in composite.metrics] == [metric.Accuracy, metric.CrossEntropy,
                                                    metric.CompositeEvalMetric]
    assert metric.create(lambda l, p: 1.0).name == 'custom(<lambda>)'


def test_get_config_round_trip():
    assert metric.Accuracy().get_config() == {'axis': 1, 'metric': 'Accuracy', 'name': 'accuracy',
                                              'output_names': None, 'label_names': None}
    assert metric.TopKAccuracy(top_k=3).get_config()['name'] == 'top_k_accuracy_3'
    assert metric.CrossEntropy().get_config()['eps'] == 1e-12
    assert metric.Perplexity(ignore_label=None).get_config()['ignore_label'] is None
    assert metric.MAE().get_config() == {'metric': 'MAE', 'name': 'mae', 'output_names': None,
                                         'label_names': None}
    config = metric.create(['acc', 'mse']).get_config()
    assert config['metric'] == 'CompositeEvalMetric'
    assert [c['metric'] for c in config['metrics']] == ['Accuracy', 'MSE']
    rebuilt = metric.create(metric.Accuracy(axis=0, name='a2').get_config())
    assert (type(rebuilt), rebuilt.axis, rebuilt.name) == (metric.Accuracy, 0, 'a2')


def test_register_and_alias():
    @metric.register
    @metric.alias('my_always_one')
    class AlwaysOne(metric.EvalMetric):
        def __init__(self):
            super().__init__('one')

        def update(self, labels, preds):
            self.sum_metric += len(preds)
            self.num_inst += len(preds)

    m = metric.create('MY_ALWAYS_ONE')
    assert type(metric.create('alwaysone')) is AlwaysOne
    m.update([0], [0])
    assert m.get() == ('one', 1.0)
    # without has_global_stats get_global falls back to get
    assert m.get_global() == ('one', 1.0)
    with pytest.raises(TypeError):
        metric.register(int)


# ---- base behaviour ----------------------------------------------------------------------------
def test_base_accessors():
    m = metric.Accuracy()
    name, value = m.get()
    assert name == 'accuracy' and math.isnan(value)
    assert math.isnan(m.get_global()[1])
    m.update([_nd([0, 1, 1])], [_nd([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]])])
    assert m.get() == ('accuracy', 2 / 3)
    assert m.get_name_value() == [('accuracy', 2 / 3)]
    assert m.get_global_name_value() == [('accuracy', 2 / 3)]
    assert str(m) == "EvalMetric: {'accuracy': %r}" % (2 / 3)
    m.reset_local()
    assert math.isnan(m.get()[1]) and m.get_global()[1] == 2 / 3
    m.reset()
    assert (m.num_inst, m.sum_metric, m.global_num_inst, m.global_sum_metric) == (0, 0.0, 0, 0.0)
    with pytest.raises(NotImplementedError):
        metric.EvalMetric('x').update([], [])


def test_check_label_shapes():
    with pytest.raises(ValueError, match='Shape of labels 1 does not match shape of predictions 2'):
        metric.Accuracy().update([_nd([1])], [_nd([1]), _nd([1])])
    with pytest.raises(ValueError, match=r'Shape of labels \(2,\) does not match'):
        metric.check_label_shapes(np.zeros(2), np.zeros(3), shape=True)
    labels, preds = metric.check_label_shapes(_nd([1]), _nd([2]), wrap=True)
    assert isinstance(labels, list) and isinstance(preds[0], NDArray)


def test_update_dict_selects_by_name():
    label = {'lab': _nd([1, 0])}
    pred = {'a_output': _nd([[0, 1], [0, 1]]), 'b_output': _nd([[0, 1], [1, 0]])}
    m = metric.Accuracy(output_names=['b_output'], label_names=['lab'])
    m.update_dict(label, pred)
    assert m.get() == ('accuracy', 1.0)
    m = metric.Accuracy()
    with pytest.raises(ValueError, match='Shape of labels 1 does not match'):
        m.update_dict(label, pred)
    composite = metric.CompositeEvalMetric(['acc', 'f1'], output_names=['b_output'],
                                           label_names=['lab'])
    composite.update_dict(dict(label, other=_nd([0, 0])), pred)
    assert composite.get() == (['accuracy', 'f1'], [1.0, 1.0])


def test_composite_accessors():
    composite = metric.CompositeEvalMetric()
    composite.add('acc')
    composite.add(metric.MSE())
    assert isinstance(composite.get_metric(1), metric.MSE)
    with pytest.raises(ValueError, match='out of range'):
        composite.get_metric(5)
    composite.update([_nd([1, 1])], [_nd([[0, 1], [1, 0]])])
    assert composite.get_name_value()[0] == ('accuracy', 0.5)
    composite.reset_local()
    assert math.isnan(composite.get()[1][0]) and composite.get_global()[1][0] == 0.5
    assert str(composite).startswith("EvalMetric: {'accuracy': nan, 'mse': nan}")


# ---- metrics against NumPy ---------------------------------------------------------------------
@pytest.fixture
def classification():
    rs = np.random.RandomState(3)
    probs = rs.rand(6, 13, 5).astype(np.float32)
    probs /= probs.sum(axis=2, keepdims=True)
    labels = rs.randint(0, 5, size=(6, 13)).astype(np.float32)
    return labels, probs


def test_accuracy_topk_ce_nll_against_numpy(classification):
    labels, probs = classification
    acc, top3 = metric.Accuracy(), metric.TopKAccuracy(top_k=3)
    ce, nll = metric.CrossEntropy(), metric.NegativeLogLikelihood(eps=1e-3)
    for label, prob in zip(labels, probs):
        for m in (acc, top3, ce, nll):
            m.update([_nd(label)], [_nd(prob)])
    flat_labels, flat_probs = labels.reshape(-1).astype(int), probs.reshape(-1, 5)
    picked = flat_probs[np.arange(len(flat_labels)), flat_labels].astype(np.float64)
    top = np.argsort(-flat_probs, axis=1)[:, :3]
    assert acc.get()[1] == pytest.approx(np.mean(flat_probs.argmax(1) == flat_labels))
    assert top3.get()[1] == pytest.approx(np.mean((top == flat_labels[:, None]).any(1)))
    assert ce.get()[1] == pytest.approx(np.mean(-np.log(picked + 1e-12)), rel=1e-6)
    assert nll.get()[1] == pytest.approx(np.mean(-np.log(picked + 1e-3)), rel=1e-6)
    assert ce.num_inst == nll.num_inst == labels.size


def test_topk_keeps_at_most_all_classes():
    m = metric.TopKAccuracy(top_k=5)
    m.update([_nd([0, 2])], [_nd([[0.1, 0.5, 0.3], [1, 2, 3]])])
    assert m.get() == ('top_k_accuracy_5', 1.0)
    with pytest.raises(AssertionError):
        metric.TopKAccuracy(top_k=1)
    with pytest.raises(ValueError, match='at most 2 dims'):
        m.update([_nd([0])], [_nd(np.zeros((1, 2, 2)))])


def test_accuracy_axis_and_numpy_inputs():
    m = metric.Accuracy(axis=0)
    m.update([_nd([0, 1, 1])], [_nd([[1, 0, 1], [0, 1, 0]])])
    assert m.get()[1] == pytest.approx(2 / 3)
    m = metric.Accuracy()
    m.update([np.array([1, 2])], [np.array([[0.1, 0.9, 0], [0, 0, 1]])])
    m.update(_nd([1.0, 2.7]), _nd([1, 2]))      # a single array is wrapped; int32 truncation
    assert m.get() == ('accuracy', 1.0)


def _binary_scores(label, pred):
    predicted = pred.argmax(1) == 1
    actual = label == 1
    tp, fp = np.sum(predicted & actual), np.sum(predicted & ~actual)
    fn, tn = np.sum(~predicted & actual), np.sum(~predicted & ~actual)
    precision = tp / (tp + fp) if tp + fp else 0.
    recall = tp / (tp + fn) if tp + fn else 0.
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.
    marginals = [m for m in (tp + fp, tp + fn, tn + fp, tn + fn) if m]
    mcc = (tp * tn - fp * fn) / math.sqrt(np.prod(np.array(marginals, dtype=np.float64)))
    return f1, mcc


def test_f1_mcc_macro_micro_against_numpy():
    rs = np.random.RandomState(5)
    batches = [(rs.randint(0, 2, n).astype(np.float32), rs.rand(n, 2).astype(np.float32))
               for n in (9, 14, 5)]
    ms = {(kind, avg): metric.create(kind, average=avg)
          for kind in ('f1', 'mcc') for avg in ('macro', 'micro')}
    for label, pred in batches:
        for m in ms.values():
            m.update([_nd(label)], [_nd(pred)])
    per_batch = np.array([_binary_scores(l, p) for l, p in batches])
    pooled = _binary_scores(np.concatenate([b[0] for b in batches]),
                            np.concatenate([b[1] for b in batches]))
    assert ms['f1', 'macro'].get()[1] == pytest.approx(per_batch[:, 0].mean())
    assert ms['mcc', 'macro'].get()[1] == pytest.approx(per_batch[:, 1].mean())
    assert ms['f1', 'micro'].get()[1] == pytest.approx(pooled[0])
    assert ms['mcc', 'micro'].get()[1] == pytest.approx(pooled[1])
    assert ms['f1', 'micro'].num_inst == 28
    with pytest.raises(ValueError, match='F1 currently only supports binary'):
        metric.F1().update([_nd([0, 1, 2])], [_nd(np.eye(3)[:, :2])])
    with pytest.raises(ValueError, match="average must be 'macro' or 'micro'"):
        metric.MCC(average='weighted')



def test_f1_mcc_macro_pools_the_pairs_of_one_update():
    # MXNet's macro average scores each update call's pooled counts, not each (label, pred) pair
    rs = np.random.RandomState(11)
    calls = [[(rs.randint(0, 2, n).astype(np.float32), rs.rand(n, 2).astype(np.float32))
              for n in sizes] for sizes in ((4, 6), (3, 7, 2))]
    f1, mcc = metric.F1(average='macro'), metric.MCC(average='macro')
    for pairs in calls:
        for m in (f1, mcc):
            m.update([_nd(l) for l, _ in pairs], [_nd(p) for _, p in pairs])
    per_call = np.array([_binary_scores(np.concatenate([l for l, _ in pairs]),
                                        np.concatenate([p for _, p in pairs]))
                         for pairs in calls])
    assert f1.num_inst == 2 and mcc.num_inst == 2
    assert f1.get()[1] == pytest.approx(per_call[:, 0].mean())
    assert mcc.get()[1] == pytest.approx(per_call[:, 1].mean())
    assert f1.get_global()[1] == pytest.approx(per_call[:, 0].mean())

def test_regression_metrics_average_per_batch():
    rs = np.random.RandomState(7)
    batches = [(rs.randn(n).astype(np.float32), rs.randn(n, 1).astype(np.float32))
               for n in (4, 11)]
    ms = [metric.MAE(), metric.MSE(), metric.RMSE()]
    for label, pred in batches:
        for m in ms:
            m.update([_nd(label)], [_nd(pred)])
    diffs = [label[:, None] - pred for label, pred in batches]
    expected = [np.mean([np.abs(d).mean() for d in diffs]),
                np.mean([np.square(d).mean() for d in diffs]),
                np.mean([np.sqrt(np.square(d).mean()) for d in diffs])]
    np.testing.assert_allclose([m.get()[1] for m in ms], expected, rtol=1e-6)
    assert [m.num_inst for m in ms] == [2, 2, 2]


def test_perplexity_ignore_label_and_axis():
    probs = np.exp(np.arange(12, dtype=np.float32).reshape(4, 3) / 5)
    probs /= probs.sum(1, keepdims=True)
    labels = np.array([0, -1, 2, 1], dtype=np.float32)
    m = metric.Perplexity(ignore_label=-1)
    m.update([_nd(labels)], [_nd(probs)])
    kept = [0, 2, 3]
    nll = -np.log(probs[kept, labels[kept].astype(int)].astype(np.float64))
    assert m.num_inst == 3
    assert m.get()[1] == pytest.approx(np.exp(nll.mean()), rel=1e-5)
    m = metric.Perplexity(ignore_label=None, axis=0)
    m.update([_nd([0, 1, 2])], [_nd(probs[:3].T)])
    nll = -np.log(probs[np.arange(3), [0, 1, 2]].astype(np.float64))
    assert m.get()[1] == pytest.approx(np.exp(nll.mean()), rel=1e-5)
    with pytest.raises(ValueError, match='does not match prediction shape'):
        m.update([_nd([0, 1])], [_nd(probs[:3].T)])


def test_pearson_micro_against_numpy():
    rs = np.random.RandomState(11)
    batches = [(rs.randn(n), rs.randn(n)) for n in (5, 8, 6)]
    micro = metric.PearsonCorrelation(average='micro')
    macro = metric.PearsonCorrelation()
    for label, pred in batches:
        micro.update([_nd(label)], [_nd(pred)])
        macro.update([_nd(label)], [_nd(pred)])
    # MXNet's running co-moment uses the label mean after and the pred mean before each batch
    comoment, mean_l, mean_p, n = 0., 0., 0., 0
    for label, pred in batches:
        label, pred = label.astype(np.float32).astype(np.float64), pred.astype(np.float32)
        new_n = n + len(label)
        new_mean_l = (mean_l * n + label.sum()) / new_n
        comoment += np.sum((label - new_mean_l) * (pred - mean_p))
        mean_l, mean_p, n = new_mean_l, (mean_p * n + pred.sum()) / new_n, new_n
    all_l = np.concatenate([b[0] for b in batches]).astype(np.float32)
    all_p = np.concatenate([b[1] for b in batches]).astype(np.float32)
    expected = comoment / ((n - 1) * all_p.std(ddof=1) * all_l.std(ddof=1))
    assert micro.get()[1] == pytest.approx(expected, rel=1e-6)
    assert micro.get_global() == ('pearsonr', 0.0)
    per_batch = [np.corrcoef(p.astype(np.float32), l.astype(np.float32))[0, 1] for l, p in batches]
    assert macro.get()[1] == pytest.approx(np.mean(per_batch), rel=1e-6)


def _multiclass_mcc(cmat):
    n, pred_tot, label_tot = cmat.sum(), cmat.sum(1), cmat.sum(0)
    return ((np.trace(cmat) * n - pred_tot @ label_tot)
            / math.sqrt((n * n - pred_tot @ pred_tot) * (n * n - label_tot @ label_tot)))


def test_pcc_grows_and_matches_confusion_mcc():
    m = metric.PCC()
    first = ([0, 1, 2, 3, 1], np.eye(4)[[0, 1, 2, 0, 1]])
    second = ([0, 4], [0, 4])
    m.update([_nd(first[0])], [_nd(first[1])])
    m.update([_nd(second[0])], [_nd(second[1])])
    cmat = np.zeros((5, 5))
    for p, l in zip([0, 1, 2, 0, 1, 0, 4], [0, 1, 2, 3, 1, 0, 4]):
        cmat[p, l] += 1
    assert m.lcm.shape == (5, 5) and m.num_inst == 2
    assert m.get()[1] == pytest.approx(_multiclass_mcc(cmat))
    m.reset_local()
    assert math.isnan(m.get()[1])
    assert m.get_global()[1] == pytest.approx(_multiclass_mcc(cmat))


def test_loss_family_ignores_labels():
    for cls, name in ((metric.Loss, 'loss'), (metric.Torch, 'torch'), (metric.Caffe, 'caffe')):
        m = cls()
        m.update(None, _nd([1, 2, 3]))
        m.update(None, [_nd([[4, 5]])])
        assert m.get() == (name, 3.0) and m.num_inst == 5


def test_custom_metric_and_np():
    def ratio(label, pred):
        return float(np.sum(label == pred)), label.size

    m = metric.CustomMetric(ratio)
    m.update([_nd([1, 2, 3])], [_nd([1, 2, 0])])
    assert m.get() == ('ratio', 2 / 3) and m.get_global() == ('ratio', 2 / 3)
    with pytest.raises(NotImplementedError, match='CustomMetric cannot be serialized'):
        m.get_config()

    def total(label, pred):
        assert isinstance(label, np.ndarray) and isinstance(pred, np.ndarray)
        return float(label.sum())

    m = metric.np(total, allow_extra_outputs=True)
    assert isinstance(m, metric.CustomMetric) and m.name == 'total'
    m.update([_nd([1, 2])], [_nd([1]), _nd([2])])
    assert m.get() == ('total', 3.0) and m.num_inst == 1
    with pytest.raises(ValueError, match='Shape of labels'):
        metric.np(total).update([_nd([1, 2])], [_nd([1]), _nd([2])])
    assert metric.np(total, name='given').name == 'given'


FAST_METRICS = [('acc', {}), ('top_k_accuracy', {'top_k': 2}), ('ce', {}), ('nll_loss', {}),
                ('perplexity', {'ignore_label': 0}), ('mae', {}), ('mse', {}), ('rmse', {}),
                ('loss', {}), ('f1', {}), ('mcc', {})]


@pytest.mark.parametrize('name, kwargs', FAST_METRICS)
def test_fast_metrics_never_copy_to_numpy(monkeypatch, name, kwargs):
    def forbidden(self):
        raise AssertionError('asnumpy called in a metric update')

    label, pred = mx.nd.array([0, 1, 1]), mx.nd.array([[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    if name in ('mae', 'mse', 'rmse'):
        pred = mx.nd.array([0.5, 1, 2])
    monkeypatch.setattr(NDArray, 'asnumpy', forbidden)
    m = metric.create(name, **kwargs)
    m.update([label], [pred])
    assert m.num_inst > 0


@pytest.mark.parametrize('name, kwargs', [('pearsonr', {}), ('pearsonr', {'average': 'micro'}),
                                          ('pcc', {})])
def test_correlation_values_are_python_floats(name, kwargs):
    """get() gives plain floats (as MXNet's metrics do), not NumPy scalars."""
    rng = np.random.RandomState(5)
    label = rng.randint(0, 3, 12).astype(np.float32)
    pred = (label + rng.rand(12)).astype(np.float32)
    metric = mx.metric.create(name, **kwargs)
    if name == 'pcc':
        onehot = np.eye(3, dtype=np.float32)[np.clip(np.round(pred).astype(int), 0, 2)]
        metric.update([mx.nd.array(label)], [mx.nd.array(onehot)])
    else:
        metric.update([mx.nd.array(label)], [mx.nd.array(pred)])
        assert metric.get()[1] == pytest.approx(np.corrcoef(pred, label)[0, 1], rel=1e-6)
    for value in (metric.get()[1], metric.get_global()[1]):
        assert type(value) is float
