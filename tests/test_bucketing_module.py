"""BucketingModule: equivalence with separate Modules, bucket-only parameters, checkpoints,
and one shared memory pool for all buckets."""
import numpy as np
import pytest

import mxtorch as mx

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
