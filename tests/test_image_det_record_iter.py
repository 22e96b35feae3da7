"""mx.io.ImageDetRecordIter: batches equal to MXNet 1.9.1's under deterministic settings
(fixtures made by tests/fixtures/gen_image_det_record_iter.py), label layout, parameter errors,
and the random augmentations' invariants."""
import json
import os

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.io.det_augmenter import DetAugmenter, DetLabel

HERE = os.path.join(os.path.dirname(__file__), 'fixtures', 'image_det_rec')
REC = os.path.join(HERE, 'det.rec')
with open(os.path.join(HERE, 'cases.json')) as _f:
    CASES = json.load(_f)


def _iter(**kw):
    args = dict(path_imgrec=REC, batch_size=2, data_shape=(3, 16, 20), verbose=False)
    args.update(kw)
    return mx.io.ImageDetRecordIter(**args)


@pytest.mark.parametrize('k', range(len(CASES)))
def test_batches_match_mxnet(k):
    want = np.load(os.path.join(HERE, 'batches.npz'))
    it = _iter(**CASES[k])
    assert it.provide_label[0].shape == tuple(want['%d.label_shape' % k])
    for epoch in range(2):
        count = 0
        for j, batch in enumerate(it):
            key = '%d.%d.%d' % (k, epoch, j)
            np.testing.assert_allclose(batch.data[0].asnumpy(), want[key + '.data'], atol=1e-4)
            np.testing.assert_allclose(batch.label[0].asnumpy(), want[key + '.label'],
                                       atol=1e-6)
            assert [batch.pad] + list(batch.index) == list(want[key + '.pad_index'])
            count += 1
        assert '%d.%d.%d.data' % (k, epoch, count) not in want
        it.reset()


def test_label_layout():
    it = _iter(batch_size=5, label_pad_width=30, label_pad_value=-2)
    label = next(iter(it)).label[0].asnumpy()
    assert label.shape == (5, 34)
    row = label[2]          # third record: 3 objects of width 5 after a [2, 5] header
    assert list(row[:6]) == [3, 16, 20, 17, 2, 5]
    assert (row[4 + 17:] == -2).all()


def test_parameter_errors():
    with pytest.raises(mx.MXNetError, match='label_pad_width: 10 smaller than estimated'):
        _iter(label_pad_width=10)
    with pytest.raises(mx.MXNetError, match='label_width is set to 7'):
        next(iter(_iter(label_width=7)))
    with pytest.raises(mx.MXNetError, match='resize_mode'):
        _iter(resize_mode="stretch")
    with pytest.raises(mx.MXNetError, match='crop samplers'):
        _iter(num_crop_sampler=2, min_crop_scales=(0.1, 0.2, 0.3))
    with pytest.raises(mx.MXNetError, match='data_shape'):
        mx.io.ImageDetRecordIter(path_imgrec=REC, batch_size=2)


def _params(**kw):
    it = _iter(**kw)
    return it._p


def test_random_augmentations_keep_valid_boxes():
    it = _iter(batch_size=5, rand_crop_prob=1, num_crop_sampler=2,
               min_crop_scales=(0.3, 0.5), min_crop_overlaps=(0.1, 0.5), rand_pad_prob=0.5,
               max_pad_scale=3, rand_mirror_prob=0.5, random_hue_prob=0.5, max_random_hue=18,
               random_contrast_prob=0.5, max_random_contrast=0.5, inter_method=10,
               shuffle=True, seed=5, mean_r=123, mean_g=117, mean_b=104)
    for batch in it:
        label = batch.label[0].asnumpy()
        for row in label:
            n = int(row[3])
            objs = row[6:4 + n].reshape(-1, 5)
            assert len(objs) >= 1 and (row[4 + n:] == -1).all()
            boxes = objs[:, 1:]
            assert (boxes >= 0).all() and (boxes <= 1).all()
            assert (boxes[:, 2] >= boxes[:, 0]).all() and (boxes[:, 3] >= boxes[:, 1]).all()
    again = _iter(batch_size=5, rand_mirror_prob=0.5, seed=5)
    first = [b.label[0].asnumpy() for b in again]
    again = _iter(batch_size=5, rand_mirror_prob=0.5, seed=5)
    assert all((a == b.label[0].asnumpy()).all() for a, b in zip(first, again))


def test_crop_and_pad_update_boxes():
    label = DetLabel([2, 5, 0, 0.2, 0.2, 0.4, 0.4, 1, 0.7, 0.7, 0.9, 0.9])
    sampler = {'min_crop_overlaps': 0, 'max_crop_overlaps': 1,
               'min_crop_sample_coverages': 0, 'max_crop_sample_coverages': 1,
               'min_crop_object_coverages': 0.5, 'max_crop_object_coverages': 1}
    assert label.try_crop((0.0, 0.0, 0.5, 0.5), sampler, 'center', 0.3)
    np.testing.assert_allclose(label.objects, [[0, 0.4, 0.4, 0.8, 0.8]], rtol=1e-6)
    label.project((-1.0, 0.0, 1.0, 1.0))      # padding: twice as wide, image on the right
    np.testing.assert_allclose(label.objects, [[0, 0.7, 0.4, 0.9, 0.8]], rtol=1e-6)
    missed = DetLabel([2, 5, 0, 0.2, 0.2, 0.4, 0.4, 1, 0.5, 0.5, 0.5, 0.9])   # 2nd is empty
    assert len(missed.objects) == 1
    assert not missed.try_crop((0.6, 0.6, 1.0, 1.0), sampler, 'center', 0.3)
    # the centre is inside, but only a quarter of the object: object coverage below 0.5
    assert not missed.try_crop((0.3, 0.3, 1.0, 1.0), sampler, 'center', 0.3)
    np.testing.assert_allclose(missed.boxes(), [[0.2, 0.2, 0.4, 0.4]])
    assert missed.try_crop((0.3, 0.3, 1.0, 1.0), dict(sampler, min_crop_object_coverages=0),
                           'center', 0.3)
    np.testing.assert_allclose(missed.boxes(), [[0, 0, 0.1 / 0.7, 0.1 / 0.7]], rtol=1e-6)


def test_fit_modes_keep_aspect_ratio():
    p = _params(resize_mode='fit', data_shape=(3, 30, 40))
    rng = np.random.RandomState(0)
    img = np.zeros((20, 10, 3), np.uint8)
    out, _ = DetAugmenter(p)(img, np.array([2, 5, 0, 0, 0, 1, 1], np.float32), rng)
    assert out.shape == (30, 15, 3)
    p = dict(p, resize_mode='shrink')
    out, _ = DetAugmenter(p)(img, np.array([2, 5, 0, 0, 0, 1, 1], np.float32), rng)
    assert out.shape == (20, 10, 3)


def test_image_list_replaces_record_labels(tmp_path):
    rows = ['0\t2\t5\t1\t0.1\t0.1\t0.5\t0.5\ta.png',
            '1\t2\t5\t0\t0.2\t0.2\t0.6\t0.6\t1\t0.1\t0.1\t0.3\t0.3\tb.png',
            '2\t2\t5\t2\t0.0\t0.0\t0.9\t0.9\tc.png']
    rows += ['%d\t2\t5\t1\t0.1\t0.1\t0.5\t0.5\tx.png' % i for i in (3, 4)]
    path = tmp_path / 'det.lst'
    path.write_text('\n'.join(rows) + '\n')
    it = _iter(path_imglist=str(path), batch_size=5, data_shape=(3, 8, 8))
    assert it.provide_label[0].shape == (5, 16)       # longest list label: 12 values
    label = next(iter(it)).label[0].asnumpy()
    np.testing.assert_allclose(label[1], [3, 8, 8, 12, 2, 5, 0, .2, .2, .6, .6, 1, .1, .1, .3, .3],
                               rtol=1e-6)
    np.testing.assert_allclose(label[2], [3, 8, 8, 7, 2, 5, 2, 0, 0, .9, .9] + [-1] * 5)


def test_grayscale():
    batch = next(iter(_iter(batch_size=5, data_shape=(1, 8, 8))))
    assert batch.data[0].shape == (5, 1, 8, 8)
    assert batch.label[0].asnumpy()[:, 0].tolist() == [1] * 5
    assert float(batch.data[0].asnumpy().astype(np.float64).sum()) == 41091.0   # MXNet's
