"""Binding and loading do no work the first forward does not need: large zero arrays are lazily
zeroed (no memset at bind), a loaded .params file is mapped or read once (arrays are views of
it), compiled code is shared by graphs of one structure, shape inference revisits only what
changed; and the numbers stay the same."""
import os

import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch.ndarray import alloc, serialization


def _net():
    data = mx.sym.Variable('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=8, pad=(1, 1), name='c1')
    x = mx.sym.BatchNorm(x, name='bn1')
    x = mx.sym.Activation(x, act_type='relu')
    x = mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=400, name='fc1')   # 1.3 MB weight
    return mx.sym.FullyConnected(x, num_hidden=10, name='fc2')


def _params(sym, shape):
    rng = np.random.RandomState(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=shape)
    args = {n: mx.nd.array(rng.normal(0, 0.1, s)) for n, s in
            zip(sym.list_arguments(), arg_shapes) if n != 'data'}
    auxs = {n: mx.nd.array(rng.uniform(0.5, 1.5, s)) for n, s in
            zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, auxs


def test_lazy_zeros_are_zero_and_untouched():
    big = alloc.zeros((600, 1000), torch.float32)           # 2.4 MB: calloc'd
    assert not big.untyped_storage().resizable()            # NumPy's memory, not torch.zeros
    assert big.abs().sum().item() == 0
    small = alloc.zeros((3, 4), torch.float32)
    assert small.untyped_storage().resizable() and small.abs().sum().item() == 0
    assert alloc.zeros((600, 1000), torch.bfloat16).abs().sum().item() == 0   # NumPy lacks it
    nd = mx.nd.zeros((600, 1000))
    assert not nd._tensor.untyped_storage().resizable() and nd.asnumpy().max() == 0
    nd[:] = 2                                                # writable like any array
    assert nd.asnumpy().min() == 2


def test_simple_bind_allocates_lazily_and_zero():
    exe = _net().simple_bind(mx.cpu(), data=(2, 3, 10, 10))
    weight = exe.arg_dict['fc1_weight']
    assert not weight._tensor.untyped_storage().resizable()
    assert not exe.grad_dict['fc1_weight']._tensor.untyped_storage().resizable()
    for arr in exe.arg_arrays + exe.grad_arrays + exe.aux_arrays:
        assert arr.asnumpy().max() == 0 and arr.asnumpy().min() == 0


def test_bound_forward_unchanged(tmp_path):
    """A checkpoint loaded and set into a lazily allocated Module computes exactly what the
    same weights bound from ordinary arrays compute."""
    sym = _net()
    shape = (2, 3, 10, 10)
    args, auxs = _params(sym, shape)
    x = mx.nd.array(np.random.RandomState(1).rand(*shape))
    bound = dict(args, data=x)
    ref = sym.bind(mx.cpu(), {k: v.copy() for k, v in bound.items()},
                   aux_states={k: v.copy() for k, v in auxs.items()})
    expected = ref.forward(is_train=False)[0].asnumpy()
    mx.model.save_checkpoint(str(tmp_path / 'net'), 1, sym, args, auxs)
    sym2, args2, auxs2 = mx.model.load_checkpoint(str(tmp_path / 'net'), 1)
    mod = mx.mod.Module(sym2, label_names=None)
    mod.bind([('data', shape)], for_training=False)
    mod.set_params(args2, auxs2)
    mod.forward(mx.io.DataBatch([x]), is_train=False)
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), expected)
    exe = sym.simple_bind(mx.cpu(), data=shape)
    exe.copy_params_from(args, auxs)
    exe.arg_dict['data'][:] = x
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 10)))
    ref_train = sym.bind(mx.cpu(), {k: v.copy() for k, v in bound.items()},
                         args_grad={k: mx.nd.zeros(v.shape) for k, v in bound.items()},
                         aux_states={k: v.copy() for k, v in auxs.items()})
    ref_train.forward(is_train=True)
    ref_train.backward(mx.nd.ones((2, 10)))
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), ref_train.outputs[0].asnumpy())
    np.testing.assert_array_equal(exe.grad_dict['fc1_weight'].asnumpy(),
                                  ref_train.grad_dict['fc1_weight'].asnumpy())


def test_load_reads_once_without_copies(tmp_path):
    a = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    b = mx.nd.array(np.ones((5, 2), dtype=np.float32))
    path = str(tmp_path / 'x.params')
    mx.nd.save(path, {'a': a, 'b': b})
    loaded = mx.nd.load(path)
    ta, tb = loaded['a']._tensor, loaded['b']._tensor
    # b's data sits right after a's data and b's record header (24 bytes + 8 per dim): both
    # are views of the one buffer the file was read into
    assert tb.data_ptr() - ta.data_ptr() == ta.numel() * 4 + 24 + 8 * tb.dim()
    np.testing.assert_array_equal(loaded['a'].asnumpy(), a.asnumpy())
    loaded['a'][:] = -1                                      # writable, and independent
    np.testing.assert_array_equal(loaded['b'].asnumpy(), b.asnumpy())
    np.testing.assert_array_equal(mx.nd.load(path)['a'].asnumpy(), a.asnumpy())


def test_load_frombuffer_copies_callers_memory(tmp_path):
    path = str(tmp_path / 'y.params')
    mx.nd.save(path, [mx.nd.array([1.0, 2.0, 3.0])])
    with open(path, 'rb') as f:
        buf = bytearray(f.read())
    arr = serialization.load_frombuffer(buf)[0]
    buf[:] = bytes(len(buf))                                 # the caller reuses its buffer
    np.testing.assert_array_equal(arr.asnumpy(), [1.0, 2.0, 3.0])


def test_compiled_code_shared_by_one_structure():
    sym = _net()
    e1 = sym.simple_bind(mx.cpu(), data=(2, 3, 10, 10))
    e2 = sym.simple_bind(mx.cpu(), data=(4, 3, 10, 10))
    assert e1._forward_infer.fn.__code__ is e2._forward_infer.fn.__code__
    assert e1._forward_train.fn.__code__ is e2._forward_train.fn.__code__
    assert e1._forward_infer is not e2._forward_infer        # each executor has its own function


def test_inference_applies_each_rule_once_when_shapes_flow_forward(monkeypatch):
    """Shape inference revisits an operator only when another rule changed one of its
    entries: a chain whose shapes all follow from the data runs each rule once, and shapes that
    flow backwards (a partial data shape completed by an operator downstream) still arrive."""
    from mxtorch.symbol import infer
    calls = []
    real = infer._apply_rule
    monkeypatch.setattr(infer, '_apply_rule',
                        lambda node, table, rule: calls.append(node.name) or real(node, table,
                                                                                    rule))
    sym = _net()
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(data=(2, 3, 10, 10))
    assert sorted(calls) == sorted(n.name for n in sym._nodes() if n.op is not None)
    assert out_shapes == [(2, 10)] and arg_shapes[sym.list_arguments().index('fc1_weight')] \
        == (400, 800)
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    arg_shapes, out_shapes, _ = mx.sym.elemwise_add(a, b).infer_shape_partial(a=(0, 3), b=(5, 0))
    assert arg_shapes == [(5, 3), (5, 3)] and out_shapes == [(5, 3)]


def test_large_file_loads_as_a_private_mapping(tmp_path):
    """A large .params file is mapped copy-on-write: the arrays are views of the mapping,
    writing one changes neither the file nor a later load, and a file replaced by a new save
    leaves arrays loaded before as they were."""
    import mmap
    rng = np.random.RandomState(0)
    w = rng.rand(600, 500).astype(np.float32)                 # 1.2 MB: past MAP_BYTES
    path = str(tmp_path / 'big.params')
    mx.nd.save(path, {'w': mx.nd.array(w), 'i': mx.nd.array([1, 2, 3], dtype='int32')})
    with open(path, 'rb') as f:
        assert isinstance(serialization._file_bytes(f).base.obj, mmap.mmap)
    loaded = mx.nd.load(path)
    np.testing.assert_array_equal(loaded['w'].asnumpy(), w)
    np.testing.assert_array_equal(loaded['i'].asnumpy(), [1, 2, 3])
    loaded['w'][:] = 7                                        # copy-on-write: private
    np.testing.assert_array_equal(mx.nd.load(path)['w'].asnumpy(), w)
    again = mx.nd.load(path)
    mx.nd.save(path, {'w': mx.nd.zeros((600, 500)), 'i': mx.nd.zeros((3,), dtype='int32')})
    np.testing.assert_array_equal(again['w'].asnumpy(), w)   # the old file's pages stay
    assert loaded['w'].asnumpy().min() == 7
    with open(path, 'r+b') as f:                              # sizes are still checked
        f.truncate(os.path.getsize(path) - 100)
    with pytest.raises(mx.MXNetError, match='Invalid NDArray file'):
        mx.nd.load(path)


def test_reductions_infer_shapes_by_rule(monkeypatch):
    """Reductions, norm, argmax/argmin and sorts infer their shapes by rule, not by running
    on meta tensors (whose first use in a process costs seconds); partial shapes as MXNet
    1.9.1 infers them (its figures)."""
    from mxtorch.symbol import infer

    def no_meta(*args):
        raise AssertionError('meta tensors used')
    monkeypatch.setattr(infer, '_meta_outputs', no_meta)
    x = mx.sym.Variable('x')
    cases = [(mx.sym.sum(x, axis=1), (2, 4), (0, 4)),
             (mx.sym.norm(x, axis=2, keepdims=True), (2, 3, 1), ()),
             (mx.sym.argmax(x, axis=0), (3, 4), ()),
             (mx.sym.argsort(x), (2, 3, 4), ()),
             (mx.sym.max(x, axis=(0,), exclude=True), (2,), ()),
             (mx.sym.mean(x), (1,), (1,)),
             (mx.sym.prod(x, axis=0, keepdims=True), (1, 3, 4), (1, 3, 4)),
             (mx.sym.argmax_channel(x), (2, 4), ()),
             (mx.sym.sort(x, axis=None), (24,), ()),
             (mx.sym.nansum(x, axis=(1, 2)), (2,), (0,))]
    for sym, full, partial in cases:
        assert sym.infer_shape(x=(2, 3, 4))[1] == [full]
        assert sym.infer_shape_partial(x=(0, 3, 4))[1] == [partial]
    with pytest.raises(mx.MXNetError, match='ord must be 1 or 2'):
        mx.sym.norm(x, ord=3).infer_shape(x=(2, 3))
    i = mx.sym.Variable('i')
    assert mx.sym.one_hot(i, depth=5).infer_shape(i=(2, 3))[1] == [(2, 3, 5)]
    assert mx.sym.batch_take(x, i).infer_shape(x=(2, 3, 4), i=(6,))[1] == [(6,)]
    with pytest.raises(mx.MXNetError, match='expected 6'):
        mx.sym.batch_take(x, i).infer_shape(x=(2, 3, 4), i=(5,))
    assert mx.sym.take(x, i, axis=1).infer_shape(x=(2, 3, 4), i=(5,))[1] == [(2, 5, 4)]
    topk = mx.sym.topk(x, axis=1, k=2, ret_typ='both')
    assert topk.infer_shape(x=(2, 3, 4))[1] == [(2, 2, 4), (2, 2, 4)]
    assert mx.sym.topk(x, axis=None, k=0).infer_shape(x=(2, 3))[1] == [(6,)]
    with pytest.raises(mx.MXNetError, match='k must be at most 3'):
        mx.sym.topk(x, axis=1, k=4).infer_shape(x=(2, 3))
