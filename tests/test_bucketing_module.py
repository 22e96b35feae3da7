"""BucketingModule: equivalence with separate Modules, bucket-only parameters, checkpoints,
and one shared memory pool for all buckets."""
import importlib.util

import numpy as np
import pytest

import mxtorch as mx
from conftest import FIXTURES

_SPEC = importlib.util.spec_from_file_location('gen_bucketing', FIXTURES / 'gen_bucketing.py')
GEN = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(GEN)

V, E, H, B = 30, 8, 12, 4


def sym_gen_factory(extra_when):
    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        label = mx.sym.Variable('softmax_label')
        x = mx.sym.Embedding(data, input_dim=V, output_dim=E, name='embed')
        x = mx.sym.Reshape(x, shape=(-1, E))
        h = mx.sym.FullyConnected(x, num_hidden=H, name='fc1')
        if extra_when(seq_len):
            h = mx.sym.FullyConnected(h, num_hidden=H, name='extra')
        h = mx.sym.Activation(h, act_type='tanh')
        out = mx.sym.FullyConnected(h, num_hidden=V, name='pred')
        out = mx.sym.SoftmaxOutput(out, mx.sym.Reshape(label, shape=(-1,)), name='softmax')
        return out, ('data',), ('softmax_label',)
    return sym_gen


def batch(seq_len, seed):
    rng = np.random.RandomState(seed)
    data = rng.randint(0, V, (B, seq_len)).astype(np.float32)
    label = rng.randint(0, V, (B, seq_len)).astype(np.float32)
    return mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)], bucket_key=seq_len,
                           provide_data=[mx.io.DataDesc('data', (B, seq_len))],
                           provide_label=[mx.io.DataDesc('softmax_label', (B, seq_len))])


SEQUENCE = [10, 3, 7, 10, 4, 5, 3]


def _bucketing(extra_when=lambda t: False, default=10):
    mod = mx.mod.BucketingModule(sym_gen_factory(extra_when), default_bucket_key=default)
    mod.bind([('data', (B, default))], [('softmax_label', (B, default))])
    mx.random.seed(7)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 0.5})
    return mod


def test_buckets_train_like_separate_modules_sharing_parameters():
    mod = _bucketing()
    arg, aux = (dict((k, v.copy()) for k, v in p.items()) for p in mod.get_params())
    for step, seq_len in enumerate(SEQUENCE):
        b = batch(seq_len, step)
        mod.forward_backward(b)
        mod.update()
        single = mx.mod.Module(sym_gen_factory(lambda t: False)(seq_len)[0])
        single.bind(b.provide_data, b.provide_label)
        single.set_params(arg, aux)
        single.init_optimizer(optimizer_params={'learning_rate': 0.5})   # plain SGD: stateless
        single.forward_backward(b)
        single.update()
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                                   single.get_outputs()[0].asnumpy(), rtol=1e-5)
        arg, aux = (dict((k, v.copy()) for k, v in p.items()) for p in single.get_params())
        for name, value in mod.get_params()[0].items():
            np.testing.assert_allclose(value.asnumpy(), arg[name].asnumpy(), rtol=1e-5,
                                       atol=1e-6, err_msg='step %d %s' % (step, name))
    assert sorted(mod._buckets) == [3, 4, 5, 7, 10]
    assert mod.get_outputs()[0].shape == (B * 3, V)


@pytest.mark.parametrize('extra_when', [lambda t: t > 5, lambda t: t < 5],
                         ids=['in-default-bucket', 'only-in-other-buckets'])
def test_parameters_used_by_some_buckets_only(extra_when):
    mod = _bucketing(extra_when)
    for step, seq_len in enumerate(SEQUENCE):
        mod.forward_backward(batch(seq_len, step))
        mod.update()
    arg = mod.get_params()[0]
    assert 'extra_weight' in arg and 'extra_bias' in arg
    weight = arg['extra_weight'].asnumpy()
    assert weight.shape == (H, H) and np.abs(weight).sum() > 0       # initialised, trained
    # every bucket that has the parameter sees the same array
    holders = [m for m in mod._buckets.values() if 'extra_weight' in m._exec_group.arg_names]
    tensors = {m._exec_group.execs[0].arg_dict['extra_weight']._tensor.data_ptr()
               for m in holders}
    assert len(holders) >= 2 and len(tensors) == 1
    # the bias of a bucket-only layer gets no weight decay, as for a string optimizer
    assert mod._curr_module._optimizer.wd_mult.get('extra_bias') == 0.0


def test_forward_picks_the_bucket_and_switch_bucket():
    mod = _bucketing()
    assert mod.data_names == ['data'] or mod.data_names == ('data',)
    mod.forward(batch(7, 0), is_train=False)
    assert mod._curr_bucket_key == 7 and mod.symbol is mod._buckets[7].symbol
    mod.switch_bucket(10, None)
    assert mod._curr_bucket_key == 10
    with pytest.raises(AssertionError):
        mx.mod.BucketingModule(sym_gen_factory(lambda t: False))


def test_checkpoint_round_trip(tmp_path):
    mod = _bucketing()
    for step, seq_len in enumerate(SEQUENCE[:3]):
        mod.forward_backward(batch(seq_len, step))
        mod.update()
    prefix = str(tmp_path / 'lm')
    mod.save_checkpoint(prefix, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'lm-0001.params', 'lm-10-symbol.json', 'lm-3-symbol.json', 'lm-7-symbol.json',
        'lm.buckets']
    back = mx.mod.BucketingModule.load(prefix, 1, default_bucket_key=10)
    back.bind([('data', (B, 10))], [('softmax_label', (B, 10))], for_training=False)
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(back.get_params()[0][name].asnumpy(), value.asnumpy())
    b = batch(7, 99)
    mod.forward(b, is_train=False)
    back.forward(b, is_train=False)
    np.testing.assert_allclose(back.get_outputs()[0].asnumpy(), mod.get_outputs()[0].asnumpy(),
                               rtol=1e-6)


def _storage_bytes(modules):
    storages = {}
    for m in modules:
        for e in m._exec_group.execs:
            for arr in e.arg_arrays + e.aux_arrays + e.outputs + \
                    [g for g in e.grad_arrays if g is not None]:
                s = arr._tensor.untyped_storage()
                storages[s.data_ptr()] = s.nbytes()
    return sum(storages.values())


def test_peak_memory_of_ten_buckets_is_that_of_the_largest():
    lengths = list(range(30, 0, -3))

    def train(seq_lens, module):
        def workload():
            mod = module()
            for step, seq_len in enumerate(seq_lens * 2):
                mod.forward_backward(batch(seq_len, step))
                mod.update()
        return workload

    def bucketing():
        mod = mx.mod.BucketingModule(sym_gen_factory(lambda t: False), default_bucket_key=30)
        mod.bind([('data', (B, 30))], [('softmax_label', (B, 30))])
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer()
        return mod

    def alone():
        mod = mx.mod.Module(sym_gen_factory(lambda t: False)(30)[0])
        mod.bind([('data', (B, 30))], [('softmax_label', (B, 30))])
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer()
        return mod
    buckets = mx.test_utils.peak_tensor_bytes(train(lengths, bucketing))
    largest = mx.test_utils.peak_tensor_bytes(train([30], alone))
    assert buckets <= 1.15 * largest, (buckets, largest)


def test_buckets_share_one_memory_pool():
    lengths = list(range(30, 0, -3))                       # 10 buckets, default = largest
    mod = mx.mod.BucketingModule(sym_gen_factory(lambda t: False), default_bucket_key=30)
    mod.bind([('data', (B, 30))], [('softmax_label', (B, 30))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer()
    for step, seq_len in enumerate(lengths):
        mod.forward_backward(batch(seq_len, step))
        mod.update()
    alone = mx.mod.Module(sym_gen_factory(lambda t: False)(30)[0])
    alone.bind([('data', (B, 30))], [('softmax_label', (B, 30))])
    assert len(mod._buckets) == 10
    assert _storage_bytes(mod._buckets.values()) <= 1.15 * _storage_bytes([alone])


def _exec_value(mod, key, name):
    return mod._buckets[key]._exec_group.execs[0].arg_dict[name].asnumpy()


def test_bucket_only_parameters_in_get_params_and_set_params_from_any_bucket():
    mod = _bucketing(lambda t: t < 5)                    # 'extra' only in buckets 3 and 4
    for step, seq_len in enumerate([3, 3, 10]):
        mod.forward_backward(batch(seq_len, step))
        mod.update()
    assert mod._curr_bucket_key == 10
    # read while the current bucket lacks the parameter: the trained value, not a stale copy
    np.testing.assert_array_equal(mod.get_params()[0]['extra_weight'].asnumpy(),
                                  _exec_value(mod, 3, 'extra_weight'))
    rng = np.random.RandomState(5)
    arg = {k: mx.nd.array(rng.randn(*v.shape) * 0.1) for k, v in mod.get_params()[0].items()}
    mod.set_params(arg, {})                              # reaches bucket 3's executors too
    np.testing.assert_array_equal(_exec_value(mod, 3, 'extra_weight'),
                                  arg['extra_weight'].asnumpy())
    b = batch(3, 11)
    mod.forward(b, is_train=False)
    single = mx.mod.Module(sym_gen_factory(lambda t: t < 5)(3)[0])
    single.bind(b.provide_data, b.provide_label, for_training=False)
    single.set_params(arg, {})
    single.forward(b, is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(),
                               single.get_outputs()[0].asnumpy(), rtol=1e-6)
    mod.set_params({'extra_weight': arg['extra_weight'] * 2}, {}, allow_missing=True)
    np.testing.assert_array_equal(_exec_value(mod, 3, 'extra_weight'),
                                  arg['extra_weight'].asnumpy() * 2)


def test_values_for_buckets_not_bound_yet_wait_for_their_bucket(tmp_path):
    mod = _bucketing(lambda t: t < 5)
    for step, seq_len in enumerate([3, 10]):
        mod.forward_backward(batch(seq_len, step))
        mod.update()
    prefix = str(tmp_path / 'lm')
    mod.save_checkpoint(prefix, 2)
    arg = mod.get_params()[0]
    # loaded while only the default bucket (without 'extra') is bound: the checkpoint's extra
    # weights are kept and used when bucket 3 appears, not initialised afresh
    back = mx.mod.BucketingModule.load(prefix, 2, sym_gen=sym_gen_factory(lambda t: t < 5),
                                       default_bucket_key=10)
    back.bind([('data', (B, 10))], [('softmax_label', (B, 10))], for_training=False)
    assert sorted(back.get_params()[0]) == sorted(arg)
    np.testing.assert_array_equal(back.get_params()[0]['extra_weight'].asnumpy(),
                                  arg['extra_weight'].asnumpy())
    b = batch(3, 7)
    mod.forward(b, is_train=False)
    back.forward(b, is_train=False)
    np.testing.assert_array_equal(back.get_outputs()[0].asnumpy(),
                                  mod.get_outputs()[0].asnumpy())
    assert 'extra_weight' not in back._buckets[10]._exec_group.param_names

    # set_params / init_params (which ignore names the bound buckets lack, as Module does)
    for allow_missing in (False, True):
        fresh = _bucketing(lambda t: t < 5)
        if allow_missing:      # then names nobody uses are errors, as in Module.set_params
            with pytest.raises(mx.MXNetError,
                               match=r"\['extra_bias', 'extra_weight'\], which no bound bucket "
                                     r"\(keys \[10\]\) uses; pass allow_extra=True"):
                fresh.set_params(arg, {}, allow_missing=True)
        fresh.set_params(arg, {}, allow_missing=allow_missing, allow_extra=allow_missing)
        fresh.forward(b, is_train=False)
        np.testing.assert_array_equal(fresh.get_outputs()[0].asnumpy(),
                                      mod.get_outputs()[0].asnumpy())
    wrong = _bucketing(lambda t: t < 5)
    wrong.set_params(dict(arg, extra_weight=mx.nd.zeros((2, 2))), {})
    with pytest.raises(mx.MXNetError, match=r"'extra_weight' has shape \(2, 2\), bucket 3 "
                                            r"expects \(12, 12\)"):
        wrong.forward(b, is_train=False)


def test_constructor_options_reach_every_bucket():
    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        state = mx.sym.Variable('state')                   # an input kept across batches
        x = mx.sym.FullyConnected(mx.sym.mean(data, axis=1, keepdims=False), num_hidden=3,
                                  name='fc')
        x = mx.sym.FullyConnected(x + state, num_hidden=3, name='out')
        return mx.sym.LinearRegressionOutput(x, name='lro'), ('data',), ('lro_label',)

    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=6, context=[mx.cpu(0), mx.cpu(1)],
                                 state_names=['state'], fixed_param_names=['fc_weight'],
                                 group2ctxs=None, compression_params=None)
    mod.bind([('data', (4, 6, 2))], [('lro_label', (4, 3))])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer_params={'learning_rate': 0.1})
    fixed = mod.get_params()[0]['fc_weight'].asnumpy().copy()
    before = mod.get_params()[0]['out_weight'].asnumpy().copy()
    rng = np.random.RandomState(0)
    for length in (6, 3, 6, 2):
        mod.set_states(value=0.5)
        mod.forward_backward(mx.io.DataBatch(
            [mx.nd.array(rng.randn(4, length, 2))], [mx.nd.array(rng.randn(4, 3))],
            bucket_key=length, provide_data=[mx.io.DataDesc('data', (4, length, 2))],
            provide_label=[mx.io.DataDesc('lro_label', (4, 3))]))
        mod.update()
        assert len(mod._curr_module._exec_group.execs) == 2
        states = mod.get_states(merge_multi_context=False)
        assert [s.asnumpy().tolist() for s in states[0]] == [[[0.5] * 3] * 2] * 2
    params = mod.get_params()[0]
    np.testing.assert_array_equal(params['fc_weight'].asnumpy(), fixed)
    assert not np.allclose(params['out_weight'].asnumpy(), before)
    for module in mod._buckets.values():
        assert module._exec_group.execs[0].grad_dict.get('fc_weight') is None


def test_bucketed_lstm_language_model_trains_like_mxnet():
    """Seven SGD steps (momentum, weight decay, clipping) over buckets 8, 3, 5, 6 reproduce
    MXNet 1.9.1's outputs and parameters (tests/fixtures/bucketing.npz, gen_bucketing.py)."""
    ref = np.load(FIXTURES / 'bucketing.npz')
    init = {k[len('init.'):]: mx.nd.array(ref[k]) for k in ref.files if k.startswith('init.')}
    mod = mx.mod.BucketingModule(GEN.sym_gen_factory(mx), default_bucket_key=GEN.DEFAULT)
    mod.bind([('data', (GEN.B, GEN.DEFAULT))], [('softmax_label', (GEN.B, GEN.DEFAULT))])
    mod.init_params(arg_params=init)
    mod.init_optimizer(optimizer='sgd', optimizer_params=GEN.OPTIMIZER)
    for i, seq_len in enumerate(GEN.STEPS):
        data, label = ref['data.%d' % i], ref['label.%d' % i]
        mod.forward(mx.io.DataBatch(
            [mx.nd.array(data)], [mx.nd.array(label)], bucket_key=seq_len,
            provide_data=[mx.io.DataDesc('data', data.shape)],
            provide_label=[mx.io.DataDesc('softmax_label', label.shape)]), is_train=True)
        mod.backward()
        mod.update()
        np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), ref['out.%d' % i],
                                   rtol=1e-5, atol=1e-6)
        params = mod.get_params()[0]
        assert sorted(params) == sorted(init)
        for name, value in params.items():
            np.testing.assert_allclose(value.asnumpy(), ref['param.%d.%s' % (i, name)],
                                       rtol=1e-5, atol=1e-6, err_msg='step %d %s' % (i, name))
    assert sorted(mod._buckets) == sorted(set(GEN.STEPS))


def test_install_monitor_covers_buckets_bound_later():
    mod = _bucketing()
    mod.forward(batch(3, 0), is_train=False)
    monitor = mx.mon.Monitor(1, pattern='fc1_output')
    mod.install_monitor(monitor)
    assert monitor.exes == [m._exec_group.execs[0] for m in mod._buckets.values()]
    b = batch(7, 1)
    monitor.tic()
    mod.forward(b, is_train=False)                       # bucket 7 is bound now
    assert monitor.exes[-1] is mod._buckets[7]._exec_group.execs[0]
    stats = [float(text.split()[0]) for _, name, text in monitor.toc()]
    arg = mod.get_params()[0]
    embedded = arg['embed_weight'].asnumpy()[b.data[0].asnumpy().astype(int).ravel()]
    fc1 = embedded @ arg['fc1_weight'].asnumpy().T + arg['fc1_bias'].asnumpy()
    assert len(stats) == 1
    np.testing.assert_allclose(stats[0], np.sqrt(np.mean(fc1 ** 2)), rtol=1e-5)


def test_batches_without_bucket_key_or_shapes_are_errors():
    mod = _bucketing()
    unkeyed = batch(5, 0)
    unkeyed.bucket_key = None
    with pytest.raises(mx.MXNetError, match='bucket_key must be a bucket key .* given None'):
        mod.forward(unkeyed)
    shapeless = batch(5, 0)
    shapeless.provide_data = shapeless.provide_label = None
    with pytest.raises(mx.MXNetError, match=r"bucket 5 is not bound yet, .*provide_data"):
        mod.forward(shapeless)
    assert sorted(mod._buckets) == [10]
    mod.forward(batch(5, 0))                          # bound now: shapes are known
    shapeless.provide_data = None
    mod.forward(shapeless, is_train=False)
    assert mod.get_outputs()[0].shape == (B * 5, V)


def test_bucket_only_parameters_on_a_kvstore_train_like_one_device():
    """A parameter that first appears after init_optimizer reaches the kvstore with its
    initial value (the store then updates it): two devices with kvstore='device' give the
    parameters of one device."""
    results = []
    for contexts, kvstore in (([mx.cpu(0), mx.cpu(1)], 'device'), ([mx.cpu(0)], 'local')):
        mod = mx.mod.BucketingModule(sym_gen_factory(lambda t: t < 5), default_bucket_key=10,
                                     context=contexts)
        mod.bind([('data', (B, 10))], [('softmax_label', (B, 10))])
        mx.random.seed(1)
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(kvstore=kvstore,
                           optimizer_params={'learning_rate': 0.5, 'momentum': 0.9})
        for step, seq_len in enumerate([10, 3, 7, 3, 4]):
            mod.forward_backward(batch(seq_len, step))
            mod.update()
        results.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
    assert results[0]['extra_weight'].std() > 0.05
    for name, value in results[1].items():
        np.testing.assert_allclose(results[0][name], value, rtol=1e-5, atol=1e-6, err_msg=name)
