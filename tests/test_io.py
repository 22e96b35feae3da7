"""mx.io: golden NDArrayIter batching, reference fixtures and independent NumPy models."""
import gzip
import json
import pickle

import numpy as np
import pytest

import mxtorch as mx
import mxtorch.io as io
from mxtorch.base import MXNetError

from conftest import FIXTURES


def _epochs_raw(it, epochs):
    """The batches of each epoch, calling reset() after each epoch."""
    out = []
    for _ in range(epochs):
        out.append(list(it))
        it.reset()
    return out


def _epochs(it, epochs):
    """Like _epochs_raw, each batch as {data, label, pad, index} of plain lists."""
    return [[{'data': [d.asnumpy().tolist() for d in b.data],
              'label': [l.asnumpy().tolist() for l in (b.label or [])],
              'pad': b.pad,
              'index': None if b.index is None else [int(i) for i in b.index]}
             for b in epoch] for epoch in _epochs_raw(it, epochs)]


def _descs(descs):
    return [[d.name, list(d.shape), np.dtype(d.dtype).name, d.layout] for d in descs]


@pytest.fixture
def reference():
    return json.loads((FIXTURES / 'io_reference.json').read_text())


# ---- golden: NDArrayIter last_batch_handle -----------------------------------------------------
@pytest.mark.parametrize('handle', ['pad', 'discard', 'roll_over'])
def test_golden_last_batch_handle(golden, handle):
    gold = json.loads((golden / 'io' / 'ndarrayiter.json').read_text())
    expected = gold['handles'][handle]
    it = io.NDArrayIter(np.array(gold['data'], dtype=np.float32),
                        np.array(gold['label'], dtype=np.float32),
                        batch_size=gold['batch_size'], shuffle=False, last_batch_handle=handle)
    assert [[d.name, list(d.shape)] for d in it.provide_data] == expected['provide_data']
    assert [[d.name, list(d.shape)] for d in it.provide_label] == expected['provide_label']
    got = [[{'data': b['data'][0], 'label': b['label'][0], 'pad': b['pad'], 'index': b['index']}
            for b in epoch] for epoch in _epochs(it, 3)]
    assert got == expected['epochs']


def test_golden_dict_input_no_label(golden):
    expected = json.loads((golden / 'io' / 'ndarrayiter.json').read_text())['dict_input_no_label']
    data = np.arange(20).reshape(10, 2)
    it = io.NDArrayIter({'y': data + 100, 'x': data}, batch_size=5)
    assert [[d.name, list(d.shape)] for d in it.provide_data] == expected['provide_data']
    assert it.provide_label == expected['provide_label'] == []
    batch = it.next()
    assert batch.data[0].asnumpy().tolist() == expected['first_batch_data0']
    assert batch.label == [] and batch.index is None


# ---- reference fixtures (made by tests/fixtures/make_io_reference.py) -------------------------
def test_reference_shuffle_order_for_numpy_seed(reference):
    np.random.seed(0)
    it = io.NDArrayIter(np.arange(10), np.arange(10) + 100, batch_size=4, shuffle=True)
    assert _epochs(it, 3) == reference['shuffle_seed0_n10_b4_pad']


def test_reference_roll_over_uneven(reference):
    it = io.NDArrayIter(np.arange(10), np.arange(10) + 100, batch_size=3,
                        last_batch_handle='roll_over')
    assert _epochs(it, 4) == reference['roll_over_n10_b3']


def test_reference_pad_batch_larger_than_data(reference):
    it = io.NDArrayIter(np.arange(6).reshape(3, 2), np.arange(3), batch_size=8)
    assert _epochs(it, 2) == reference['pad_n3_b8']


def test_reference_resize(reference):
    it = io.ResizeIter(io.NDArrayIter(np.arange(10), np.arange(10) + 100, batch_size=4), 5)
    assert _epochs(it, 2) == reference['resize_5_reset_internal']
    it = io.ResizeIter(io.NDArrayIter(np.arange(10), np.arange(10) + 100, batch_size=4), 2,
                       reset_internal=False)
    assert _epochs(it, 3) == reference['resize_2_no_reset_internal']


def test_reference_prefetching_renamed(reference):
    data = np.arange(10)
    it = io.PrefetchingIter(
        [io.NDArrayIter(data, data + 100, batch_size=4),
         io.NDArrayIter({'x': data * 2}, {'y': data * 3}, batch_size=4)],
        rename_data=[{'data': 'd1'}, {'x': 'd2'}],
        rename_label=[{'softmax_label': 'l1'}, {'y': 'l2'}])
    expected = reference['prefetch_two_renamed']
    assert _descs(it.provide_data) == expected['provide_data']
    assert _descs(it.provide_label) == expected['provide_label']
    assert _epochs(it, 2) == expected['epochs']


@pytest.fixture
def csv_files(tmp_path):
    data_csv, label_csv = tmp_path / 'd.csv', tmp_path / 'l.csv'
    np.savetxt(data_csv, np.arange(30).reshape(10, 3), delimiter=',', fmt='%g')
    np.savetxt(label_csv, np.arange(10) + 100, delimiter=',', fmt='%g')
    return str(data_csv), str(label_csv)


@pytest.mark.parametrize('key', ['round1_b4', 'round1_b3', 'round1_b12', 'round0_b4',
                                 'round0_b3'])
def test_reference_csv(reference, csv_files, key):
    round_batch, batch_size = key[5] == '1', int(key.split('_b')[1])
    it = io.CSVIter(data_csv=csv_files[0], data_shape=(3,), label_csv=csv_files[1],
                    batch_size=batch_size, round_batch=round_batch)
    expected = reference['csv_n10'][key]
    assert _descs(it.provide_data) == expected['provide_data']
    assert _descs(it.provide_label) == expected['provide_label']
    assert _epochs(it, 4) == expected['epochs']


def test_reference_csv_without_label(reference, csv_files):
    it = io.CSVIter(data_csv=csv_files[0], data_shape=(3, 1), batch_size=4, dtype='int32')
    expected = reference['csv_n10']['no_label_int32_b4']
    assert _descs(it.provide_data) == expected['provide_data']
    assert _descs(it.provide_label) == expected['provide_label']
    assert _epochs(it, 1) == expected['epochs']


# ---- CSVIter against a NumPy model -------------------------------------------------------------
def _csv_model(num_rows, batch_size, round_batch, epochs):
    """Expected (rows, pad) per batch per epoch, written from the documented semantics."""
    out, start, previous = [], 0, [i % num_rows for i in range(batch_size)]
    for _ in range(epochs):
        pos, batches = (start if round_batch else 0), []
        while pos < num_rows:
            if round_batch:
                rows = [(pos + i) % num_rows for i in range(batch_size)]
            else:
                valid = min(batch_size, num_rows - pos)
                rows = list(range(pos, pos + valid)) + previous[valid:]
            batches.append((rows, max(0, pos + batch_size - num_rows)))
            previous, pos = rows, pos + batch_size
        start = pos - num_rows if pos > num_rows else 0
        out.append(batches)
    return out


@pytest.mark.parametrize('round_batch', [True, False])
@pytest.mark.parametrize('batch_size', [2, 3, 5, 7])
def test_csv_round_batch_model(tmp_path, round_batch, batch_size):
    rows = np.arange(14, dtype=np.float32).reshape(7, 2) * 10
    np.savetxt(tmp_path / 'd.csv', rows, delimiter=',', fmt='%g')
    np.savetxt(tmp_path / 'l.csv', np.arange(7) + 0.5, delimiter=',', fmt='%g')
    it = io.CSVIter(data_csv=str(tmp_path / 'd.csv'), data_shape=(2,),
                    label_csv=str(tmp_path / 'l.csv'), batch_size=batch_size,
                    round_batch=round_batch)
    got = _epochs(it, 5)
    expected = _csv_model(7, batch_size, round_batch, 5)
    assert [[(b['index'], b['pad']) for b in epoch] for epoch in got] == expected
    for epoch, model in zip(got, expected):
        for batch, (index, _) in zip(epoch, model):
            assert batch['data'] == [rows[index].tolist()]
            assert batch['label'] == [(np.array(index) + 0.5).tolist()]


def test_csv_shapes_dtypes_and_errors(tmp_path):
    np.savetxt(tmp_path / 'd.csv', np.arange(24).reshape(4, 6), delimiter=',', fmt='%d')
    np.savetxt(tmp_path / 'l.csv', np.arange(8).reshape(4, 2), delimiter=',', fmt='%d')
    data_csv, label_csv = str(tmp_path / 'd.csv'), str(tmp_path / 'l.csv')
    it = io.CSVIter(data_csv=data_csv, data_shape=(2, 3), label_csv=label_csv, label_shape=(2,),
                    batch_size=2, dtype='int64')
    batch = it.next()
    assert batch.data[0].shape == (2, 2, 3) and batch.data[0].dtype == np.int64
    assert batch.label[0].asnumpy().tolist() == [[0, 1], [2, 3]]
    assert batch.index.dtype == np.uint64 and batch.index.tolist() == [0, 1]
    assert it.provide_label == [('softmax_label', (2, 2))]
    with pytest.raises(MXNetError, match='hold 6 values, but the shape'):
        io.CSVIter(data_csv=data_csv, data_shape=(4,), batch_size=2)
    with pytest.raises(MXNetError, match='dtype must be one of'):
        io.CSVIter(data_csv=data_csv, data_shape=(6,), batch_size=2, dtype='float16')
    with pytest.raises(MXNetError, match='Required parameter batch_size'):
        io.CSVIter(data_csv=data_csv, data_shape=(6,))
    with pytest.raises(MXNetError, match="round_batch expect boolean but value='x'"):
        io.CSVIter(data_csv=data_csv, data_shape=(6,), batch_size=2, round_batch='x')
    with pytest.raises(TypeError, match='CSVIter can only accept keyword arguments'):
        io.CSVIter(data_csv, data_shape=(6,), batch_size=2)
    with pytest.raises(MXNetError, match="cannot read data_csv 'missing.csv'"):
        io.CSVIter(data_csv='missing.csv', data_shape=(6,), batch_size=2)


def test_native_iterator_protocol(tmp_path):
    # as MXNet 1.9.1's MXDataIter: unknown keywords pass, values may be strings, the first batch
    # is loaded at construction and stays pending (iter_next does not move) until reset()
    np.savetxt(tmp_path / 'd.csv', np.arange(11), delimiter=',', fmt='%d')
    it = io.CSVIter(data_csv=str(tmp_path / 'd.csv'), data_shape='(1,)', batch_size='2',
                    input_shape=(3,), data_name='x', label_name='y')
    assert isinstance(it, io.MXDataIter) and it.batch_size == 2
    assert it.provide_data == [('x', (2, 1))] and it.provide_label == [('y', (2,))]
    assert [it.iter_next() and it.getindex().tolist() for _ in range(3)] == [[0, 1]] * 3
    assert isinstance(it.getdata(), mx.nd.NDArray) and it.getdata().shape == (2, 1)
    assert isinstance(it.getlabel(), mx.nd.NDArray) and it.getpad() == 0
    assert it.next().index.tolist() == [0, 1] and it.next().index.tolist() == [2, 3]
    assert [b.index.tolist() for b in it][-1] == [10, 0]
    it.reset()
    assert [it.iter_next() and it.getindex().tolist() for _ in range(3)] == [[1, 2], [3, 4],
                                                                              [5, 6]]
    assert it.next().index.tolist() == [7, 8]
    it.debug_skip_load()
    assert [it.next().index.tolist() for _ in range(3)] == [[7, 8]] * 3


def test_csv_batches_are_views_unless_wrapped(csv_files):
    it = io.CSVIter(data_csv=csv_files[0], data_shape=(3,), batch_size=4)
    first, second, wrapped = list(it)
    assert first.data[0]._tensor._base is second.data[0]._tensor._base is not None
    assert wrapped.data[0]._tensor._base is None


def test_csv_mid_epoch_reset_restarts_at_row_zero(csv_files):
    it = io.CSVIter(data_csv=csv_files[0], data_shape=(3,), batch_size=4)
    it.next()
    it.reset()
    assert [b.index.tolist() for b in it] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]


def test_csv_num_parts(tmp_path):
    np.savetxt(tmp_path / 'd.csv', np.arange(11), delimiter=',', fmt='%d')
    seen = []
    for part in range(3):
        it = io.CSVIter(data_csv=str(tmp_path / 'd.csv'), data_shape=(1,), batch_size=2,
                        round_batch=False, num_parts=3, part_index=part)
        batches = list(it)
        rows = [int(i) for b in batches for i in b.index[:len(b.index) - b.pad]]
        data = [float(v) for b in batches for v in b.data[0].asnumpy().ravel()[:2 - b.pad]]
        assert rows == list(range(11 * part // 3, 11 * (part + 1) // 3))
        assert data == [float(r) for r in rows]
        seen += rows
    assert seen == list(range(11))
    with pytest.raises(ValueError, match='part_index'):
        io.CSVIter(data_csv=str(tmp_path / 'd.csv'), data_shape=(1,), batch_size=2,
                   num_parts=3, part_index=3)


# ---- NDArrayIter: inputs, shuffle, sharding, views ---------------------------------------------
def test_input_forms_names_and_dtypes():
    columns = [np.full((6, 1), i, dtype=np.int64) for i in range(12)]
    it = io.NDArrayIter(columns, batch_size=2)
    names = [d.name for d in it.provide_data]
    assert names == sorted('_%d_data' % i for i in range(12))
    assert names[:3] == ['_0_data', '_10_data', '_11_data']
    batch = it.next()
    assert [int(d.asnumpy()[0, 0]) for d in batch.data] == [int(n.split('_')[1]) for n in names]
    assert all(d.dtype == np.float32 for d in batch.data)
    kept = mx.nd.array(np.arange(6), dtype='int32')
    it = io.NDArrayIter([kept], label=[np.arange(6)], batch_size=4, label_name='lab')
    assert it.provide_data == [('data', (4,))] and it.provide_data[0].dtype == np.int32
    assert it.provide_label == [('lab', (4,))]
    assert it.next().data[0].dtype == np.int32
    with pytest.raises(ValueError, match='data must be given'):
        io.NDArrayIter(None)
    with pytest.raises(TypeError, match='Input must be'):
        io.NDArrayIter('abc')
    with pytest.raises(TypeError, match="Invalid type str for 'a'"):
        io.NDArrayIter({'a': 'abc'})
    with pytest.raises(ValueError, match='last_batch_handle must be one of'):
        io.NDArrayIter(np.zeros(4), last_batch_handle='keep')
    with pytest.raises(ValueError, match='same number of samples'):
        io.NDArrayIter(np.zeros(4), np.zeros(3))


@pytest.mark.parametrize('handle', ['pad', 'discard', 'roll_over'])
def test_shuffle_covers_every_sample_once_per_epoch(handle):
    n, batch_size = 12, 4
    data = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    it = io.NDArrayIter(data, np.arange(n) * 10, batch_size=batch_size, shuffle=True,
                        last_batch_handle=handle)
    orders = []
    for _ in range(3):
        order = []
        for batch in it:
            rows, labels = batch.data[0].asnumpy(), batch.label[0].asnumpy()
            np.testing.assert_array_equal(rows, data[(labels / 10).astype(int)])
            order += labels.astype(int).tolist()
        assert sorted(order) == list(range(0, n * 10, 10))
        orders.append(order)
        it.reset()
    assert orders[0] != orders[1] or orders[1] != orders[2]
    assert orders[0] != sorted(orders[0])


def test_num_parts_shards_contiguously():
    n = 10
    data, label = np.arange(n * 2).reshape(n, 2), np.arange(n)
    shards = []
    for part in range(3):
        it = io.NDArrayIter(data, label, batch_size=2, last_batch_handle='discard',
                            num_parts=3, part_index=part)
        start, stop = n * part // 3, n * (part + 1) // 3
        assert it.num_data == stop - start
        got = [int(v) for b in it for v in b.label[0].asnumpy()]
        assert got == list(range(start, start + (stop - start) // 2 * 2))
        shuffled = io.NDArrayIter(data, label, batch_size=1, shuffle=True, num_parts=3,
                                  part_index=part)
        shards.append(sorted(int(b.label[0].asscalar()) for b in shuffled))
    assert shards == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    with pytest.raises(ValueError, match='num_parts'):
        io.NDArrayIter(data, num_parts=0)
    with pytest.raises(ValueError, match='is empty'):
        io.NDArrayIter(np.zeros(2), num_parts=3, part_index=0)


def test_batches_are_views_and_padding_copies():
    source = mx.nd.array(np.arange(10))
    it = io.NDArrayIter(source, batch_size=4)
    first = it.next()
    first.data[0][0] = 42          # a view: writes through to the source
    assert source.asnumpy()[0] == 42
    it.next()
    padded = it.next()
    assert padded.pad == 2 and padded.data[0].asnumpy().tolist() == [8, 9, 42, 1]
    padded.data[0][0] = -1
    assert source.asnumpy()[8] == 8


def test_layout_batch_axis():
    data = np.arange(5 * 3 * 2).reshape(3, 5, 2)         # T, N, C
    it = io.NDArrayIter(data, batch_size=2, layout='TNC', last_batch_handle='pad')
    assert it.provide_data == [('data', (3, 2, 2))] and it.provide_data[0].layout == 'TNC'
    batches = [b.data[0].asnumpy() for b in it]
    assert len(batches) == 3
    np.testing.assert_array_equal(batches[2], data[:, [4, 0]])
    it = io.NDArrayIter(np.zeros((5, 3, 4, 6)), batch_size=2, layout='NHWC')
    assert repr(it.provide_data) == "[DataDesc[data,(2, 3, 4, 6),<class 'numpy.float32'>,NHWC]]"
    with pytest.raises(ValueError, match="layout must contain 'N'"):
        io.NDArrayIter(np.zeros(4), layout='TC')


def test_roll_over_hard_reset_forgets_held_samples():
    it = io.NDArrayIter(np.arange(10), batch_size=4, last_batch_handle='roll_over')
    assert len(list(it)) == 2
    it.hard_reset()
    assert [b.data[0].asnumpy().tolist() for b in it] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert it.getpad() == 0
    assert not it.iter_next()
    with pytest.raises(MXNetError, match='call reset'):
        it.getdata()


# ---- DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter ---------------------------------
def test_data_desc():
    desc = io.DataDesc('data', (4, 3))
    assert repr(desc) == "DataDesc[data,(4, 3),<class 'numpy.float32'>,NCHW]"
    assert desc == ('data', (4, 3))
    name, shape = desc
    assert (name, shape, desc.dtype, desc.layout) == ('data', (4, 3), np.float32, 'NCHW')
    assert pickle.loads(pickle.dumps(io.DataDesc('x', (1,), np.int32, 'NC'))).layout == 'NC'
    assert io.DataDesc.get_batch_axis(None) == 0
    assert io.DataDesc.get_batch_axis('TNC') == 1
    assert io.DataDesc.get_batch_axis('TC') == -1
    descs = io.DataDesc.get_list([('a', (1, 2)), ('b', (3,))], [('a', np.int32), ('b', 'float16')])
    assert [(d.name, d.shape, d.dtype) for d in descs] == [('a', (1, 2), np.int32),
                                                           ('b', (3,), 'float16')]
    assert io.DataDesc.get_list([('a', (1, 2))], None)[0].dtype == np.float32


def test_data_batch():
    batch = io.DataBatch([mx.nd.zeros((2, 3))], [mx.nd.zeros((2,))], pad=1, bucket_key=5)
    assert str(batch) == 'DataBatch: data shapes: [(2, 3)] label shapes: [(2,)]'
    assert str(io.DataBatch([mx.nd.zeros((2, 3))], [])).endswith('label shapes: None')
    assert (batch.pad, batch.index, batch.bucket_key, batch.provide_data) == (1, None, 5, None)
    with pytest.raises(AssertionError, match='Data must be list of NDArrays'):
        io.DataBatch(mx.nd.zeros((2, 3)))
    with pytest.raises(AssertionError, match='Label must be list of NDArrays'):
        io.DataBatch([mx.nd.zeros((2, 3))], mx.nd.zeros((2,)))


def test_data_iter_protocol():
    class Countdown(io.DataIter):
        def __init__(self):
            super().__init__(batch_size=2)
            self.left = 3

        def iter_next(self):
            self.left -= 1
            return self.left >= 0

        def getdata(self):
            return [mx.nd.full((2,), self.left)]

        def getlabel(self):
            return []

        def getpad(self):
            return 0

    it = Countdown()
    assert iter(it) is it and it.batch_size == 2
    batches = list(it)
    assert [b.data[0].asnumpy()[0] for b in batches] == [2, 1, 0]
    assert batches[0].index is None
    assert list(io.DataIter()) == []


def test_resize_against_model():
    inner = io.NDArrayIter(np.arange(7), batch_size=3, last_batch_handle='discard')
    it = io.ResizeIter(inner, 5, reset_internal=False)
    assert it.provide_data == inner.provide_data and it.batch_size == 3
    # the inner iterator yields the batches starting at 0 and 3, and restarts when it runs out;
    # without reset_internal the second epoch continues where the first one stopped
    firsts = [[int(b.data[0].asnumpy()[0]) for b in epoch] for epoch in _epochs_raw(it, 2)]
    assert firsts == [[0, 3, 0, 3, 0], [3, 0, 3, 0, 3]]


def test_prefetching_single_iter_and_errors():
    it = io.PrefetchingIter(io.NDArrayIter(np.arange(10), batch_size=4))
    assert it.provide_label == [] and it.batch_size == 4
    for _ in range(2):
        batches = list(it)
        assert [b.data[0].asnumpy().tolist() for b in batches] == [
            [0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 0, 1]]
        assert [b.pad for b in batches] == [0, 0, 2] and batches[0].label == []
        it.reset()
    assert it.getpad() == 2 and it.getindex() is None

    uneven = io.PrefetchingIter([io.NDArrayIter(np.arange(10), batch_size=4),
                                 io.NDArrayIter(np.arange(10), batch_size=4,
                                                last_batch_handle='discard')])
    with pytest.raises(MXNetError, match='different points'):
        list(uneven)

    class Broken(io.DataIter):
        provide_data = [io.DataDesc('data', (1,))]
        provide_label = []

        def next(self):
            raise RuntimeError('disk on fire')

    with pytest.raises(RuntimeError, match='disk on fire'):
        io.PrefetchingIter(Broken()).next()


# ---- MNISTIter (fixtures made by tests/fixtures/gen_mnist_recordio.py) -------------------------
MNIST_IMAGES = FIXTURES / 'mnist-images-idx3-ubyte'
MNIST_LABELS = FIXTURES / 'mnist-labels-idx1-ubyte'


def _mnist(**kwargs):
    kwargs = dict(dict(image=str(MNIST_IMAGES), label=str(MNIST_LABELS), silent=True), **kwargs)
    return io.MNISTIter(**kwargs)


def _mnist_file_arrays():
    """The fixture's images (N, rows, cols) and labels, read independently of MNISTIter."""
    raw = MNIST_IMAGES.read_bytes()
    count, rows, cols = (int.from_bytes(raw[i:i + 4], 'big') for i in (4, 8, 12))
    images = np.frombuffer(raw[16:], np.uint8).reshape(count, rows, cols)
    return images, np.frombuffer(MNIST_LABELS.read_bytes()[8:], np.uint8)


@pytest.fixture(scope='module')
def mnist_reference():
    with np.load(FIXTURES / 'mnist.npz') as ref:
        return {key: ref[key] for key in ref.files}


@pytest.mark.parametrize('case', ['b8', 'b16_flat', 'b4_part1of3', 'b7_named'])
def test_reference_mnist(mnist_reference, case):
    meta = json.loads(str(mnist_reference['meta']))['cases'][case]
    it = _mnist(shuffle=False, **meta['kwargs'])
    assert [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_data] == \
        meta['provide_data']
    assert [[d.name, list(d.shape), np.dtype(d.dtype).name] for d in it.provide_label] == \
        meta['provide_label']
    for epoch in _epochs_raw(it, 2):
        assert [b.pad for b in epoch] == meta['pads']
        data = np.stack([b.data[0].asnumpy() for b in epoch])
        label = np.stack([b.label[0].asnumpy() for b in epoch])
        assert data.dtype == label.dtype == np.float32
        np.testing.assert_array_equal(data, mnist_reference[case + '.data'])
        np.testing.assert_array_equal(label, mnist_reference[case + '.label'])


def test_mnist_scaling_index_and_dropped_tail():
    images, labels = _mnist_file_arrays()
    batches = list(_mnist(shuffle=False, batch_size=16))
    assert len(batches) == 3                                # 50 samples: the last 2 are dropped
    for i, batch in enumerate(batches):
        rows = np.arange(16 * i, 16 * (i + 1))
        assert batch.index.dtype == np.uint64 and batch.index.tolist() == rows.tolist()
        np.testing.assert_array_equal(batch.data[0].asnumpy()[:, 0], images[rows] / 256.0)
        np.testing.assert_array_equal(batch.label[0].asnumpy(), labels[rows])
    assert batches[0].data[0].asnumpy()[0, 0, 0, :3].tolist() == [0, 0.5, 255 / 256]


@pytest.mark.parametrize('num_parts', [1, 3])
def test_mnist_shuffle_is_a_seeded_permutation(num_parts):
    images, labels = _mnist_file_arrays()
    for part in range(num_parts):
        start, stop = 50 * part // num_parts, 50 * (part + 1) // num_parts
        batch_size = 5 if num_parts == 1 else 4

        def order(seed, it=None):
            it = it or _mnist(shuffle=True, seed=seed, batch_size=batch_size,
                              num_parts=num_parts, part_index=part)
            rows = []
            for batch in it:
                index = batch.index.astype(np.int64)
                np.testing.assert_array_equal(batch.data[0].asnumpy()[:, 0], images[index] / 256.)
                np.testing.assert_array_equal(batch.label[0].asnumpy(), labels[index])
                rows += index.tolist()
            return rows

        it = _mnist(shuffle=True, seed=3, batch_size=batch_size, num_parts=num_parts,
                    part_index=part)
        first = order(3, it)
        assert len(first) == (stop - start) // batch_size * batch_size
        assert len(set(first)) == len(first) and set(first) <= set(range(start, stop))
        if (stop - start) % batch_size == 0:
            assert sorted(first) == list(range(start, stop))
        assert first != sorted(first)
        it.reset()
        assert order(3, it) == first == order(3)            # shuffled once, at construction
        assert order(4) != first


def test_mnist_gzip_and_silent(tmp_path, capsys):
    for name in ('images', 'labels'):
        (tmp_path / name).write_bytes(gzip.compress((FIXTURES / ('mnist-%s-idx%s-ubyte' % (
            name, 3 if name == 'images' else 1))).read_bytes()))
    it = io.MNISTIter(image=str(tmp_path / 'images'), label=str(tmp_path / 'labels'),
                      batch_size=10, shuffle=False, flat=True)
    assert 'load 50 images, shuffle=0, shape=(10,42)' in capsys.readouterr().err   # as MXNet
    for got, want in zip(it, _mnist(batch_size=10, shuffle=False, flat=True)):
        np.testing.assert_array_equal(got.data[0].asnumpy(), want.data[0].asnumpy())
        np.testing.assert_array_equal(got.label[0].asnumpy(), want.label[0].asnumpy())


def test_mnist_header_and_argument_errors(tmp_path):
    image, label = MNIST_IMAGES.read_bytes(), MNIST_LABELS.read_bytes()

    def fails(match, image_bytes=image, label_bytes=label, **kwargs):
        (tmp_path / 'i').write_bytes(image_bytes)
        (tmp_path / 'l').write_bytes(label_bytes)
        with pytest.raises(MXNetError, match=match):
            io.MNISTIter(image=str(tmp_path / 'i'), label=str(tmp_path / 'l'), silent=True,
                         **dict(dict(batch_size=4), **kwargs))

    huge = image[:4] + (2 ** 31).to_bytes(4, 'big') + image[8:]
    fails(r"image file .*/i' .* magic number 0x00000801, expected 0x00000803", label, label)
    fails(r"label file .*/l' .* magic number 0x00000803, expected 0x00000801", image, image)
    fails(r"image file .* shape \(2147483648, 7, 6\).* 90194313216 bytes .* holds 2100", huge)
    fails(r'shape \(50, 7, 6\), i.e. 2100 bytes .* holds 2099', image[:-1])
    fails(r'shape \(50, 7, 6\), i.e. 2100 bytes .* holds 2101', image + b'\0')
    fails(r"image file .* holds 10 bytes, too few for an IDX header of 16", image[:10])
    fails(r"label file .* holds 0 bytes", label_bytes=b'')
    fails(r'holds 50 images but label file .* holds 49 labels',
          label_bytes=label[:7] + b'\x31' + label[8:-1])
    fails('cannot read image file', image_bytes=b'\x1f\x8bnot gzip')
    fails('batch_size 20 is larger than the 16 samples of part 0 of 3', batch_size=20,
          num_parts=3)
    fails('only float32', dtype='float64')
    with pytest.raises(MXNetError, match="cannot read image file 'missing'"):
        io.MNISTIter(image='missing', label=str(MNIST_LABELS))
    with pytest.raises(ValueError, match='batch_size'):
        _mnist(batch_size=0)
    with pytest.raises(TypeError, match='MNISTIter can only accept keyword arguments'):
        io.MNISTIter(str(MNIST_IMAGES))
    # MXNet's MNISTIter ignores parameters it does not know, such as other iterators' shapes
    it = _mnist(batch_size=10, flat=1, shuffle=0, data_shape=(42,), input_shape=(1, 7, 6))
    assert it.provide_data == [('data', (10, 42))] and it.getdata().shape == (10, 42)
    with pytest.raises(ValueError, match='part_index'):
        _mnist(num_parts=2, part_index=2)


# ---- LibSVMIter (expected batches printed by MXNet 1.9.1) --------------------------------------
LIBSVM_DATA = '1.0 0:0.5 2:1.2\n-2.0\n-3.0 0:0.6 1:2.4 2:1.2\n4 2:-1.2\n'
LIBSVM_LABEL = '1.0\n-2.0 0:0.125\n-3.0 2:1.2\n4 1:1.0 2:-1.2\n'
LIBSVM_ROWS = [[0.5, 0, 1.2], [0, 0, 0], [0.6, 2.4, 1.2], [0, 0, -1.2]]
LIBSVM_LABEL_ROWS = [[0, 0, 0], [0.125, 0, 0], [0, 0, 1.2], [0, 1, -1.2]]


def _libsvm(tmp_path, text=LIBSVM_DATA, **kwargs):
    (tmp_path / 'data.t').write_text(text)
    (tmp_path / 'label.t').write_text(LIBSVM_LABEL)
    if kwargs.get('label_libsvm'):
        kwargs['label_libsvm'] = str(tmp_path / 'label.t')
    return io.LibSVMIter(data_libsvm=str(tmp_path / 'data.t'), **kwargs)


def test_libsvm_batches_wrap_and_resume(tmp_path):
    it = _libsvm(tmp_path, data_shape=(3,), batch_size=3)
    assert it.provide_data == [('data', (3, 3))] and it.provide_label == [('softmax_label', (3,))]
    for epoch in ([[0, 1, 2], [3, 0, 1]], [[2, 3, 0]]):
        batches = list(it)
        assert [b.index.tolist() for b in batches] == epoch
        assert [b.pad for b in batches] == [0, 2] if len(epoch) == 2 else [1]
        for batch, rows in zip(batches, epoch):
            data = batch.data[0]
            assert data.stype == 'csr' and data.dtype == np.float32
            data.check_format(True)
            np.testing.assert_allclose(data.asnumpy(), np.array(LIBSVM_ROWS)[rows], rtol=1e-6)
            assert batch.label[0].stype == 'default'
            assert batch.label[0].asnumpy().tolist() == [[1, -2, -3, 4][r] for r in rows]
        it.reset()


def test_libsvm_label_file_and_row_details(tmp_path):
    it = _libsvm(tmp_path, label_libsvm=True, data_shape=(3,), label_shape=(3,), batch_size=3)
    assert it.provide_label == [('softmax_label', (3, 3))]
    batches = list(it)
    for batch, rows in zip(batches, [[0, 1, 2], [3, 0, 1]]):
        assert batch.label[0].stype == 'csr'
        np.testing.assert_allclose(batch.label[0].asnumpy(), np.array(LIBSVM_LABEL_ROWS)[rows])
    # columns beyond data_shape are left out, unsorted columns land where they belong
    it = _libsvm(tmp_path, '1 0:0.5 5:9\n2 2:0.6 1:2.4\n', data_shape=(3,), batch_size=2)
    batch = it.next()
    batch.data[0].check_format(True)
    np.testing.assert_allclose(batch.data[0].asnumpy(), [[0.5, 0, 0], [0, 2.4, 0.6]], rtol=1e-6)


def test_libsvm_parts_split_by_bytes(tmp_path):
    # 53 bytes: part 1 of 2 starts at the first line after byte 27, i.e. holds only line 3
    parts = [[b.index.tolist() + b.label[0].asnumpy().tolist() for b in
              _libsvm(tmp_path, data_shape=(3,), batch_size=1, num_parts=2, part_index=p)]
             for p in range(2)]
    assert parts == [[[0, 1.0], [1, -2.0], [2, -3.0]], [[0, 4.0]]]


def test_libsvm_errors(tmp_path):
    def fails(match, text=LIBSVM_DATA, **kwargs):
        with pytest.raises(MXNetError, match=match):
            _libsvm(tmp_path, text, **dict(dict(data_shape=(3,), batch_size=3), **kwargs))
    fails('negative column index -1', '1.0 0:0.5\n-3.0 -1:0.6 1:2.4\n')
    fails('line 2 of data_libsvm is not', '1.0 0:0.5\n-3.0 x:0.6\n')
    fails("doesn't support round_batch == false", round_batch=False)
    fails('data_shape must have one dimension', data_shape=(3, 2))
    fails(r'label_shape must be \(1,\) without label_libsvm', label_shape=(2,))
    fails('with label_libsvm, label_shape must be', label_libsvm=True)
    fails('Invalid Parameter format for data_shape', data_shape=None)
    fails('only float32', dtype='float64')
    with pytest.raises(MXNetError, match='cannot read data_libsvm'):
        io.LibSVMIter(data_libsvm=str(tmp_path / 'missing'), data_shape=(3,), batch_size=3)
