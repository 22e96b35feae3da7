"""mx.image.detection: the detection augmenters and ImageDetIter against MXNet 1.9.1.

The expected crops, pads and flips are what MXNet 1.9.1 gives after the same `random.seed`
(its augmenters draw from Python's `random`; tests/fixtures/gen_graph_hawkes_det.py prints
them); the iterator reads a small .lst / .rec / imglist
written by the test into a temporary folder.
"""
import json
import random

import numpy as np
import pytest

import mxtorch as mx

pytest.importorskip('cv2')
det = mx.image.det

LABEL = np.array([[0, 0.1, 0.2, 0.5, 0.6, 7], [1, 0.4, 0.3, 0.9, 0.95, 8],
                  [2, 0.05, 0.7, 0.2, 0.9, 9]], dtype=np.float32)


def _image():
    return mx.nd.array(np.random.RandomState(0).randint(0, 255, (40, 60, 3)), dtype='uint8')


def test_random_crop_matches_mxnet_with_a_seed():
    img = _image()
    random.seed(0)
    aug = det.DetRandomCropAug(min_object_covered=0.3, aspect_ratio_range=(0.5, 2.0),
                               area_range=(0.1, 1.0))
    x, y, w, h, label = aug._random_crop_proposal(LABEL, 40, 60)
    assert (x, y, w, h) == (8, 1, 44, 25)
    np.testing.assert_allclose(label, [[0, 0, 0.28, 0.5, 0.92, 7], [1, 0.363636, 0.44, 1, 1, 8]],
                               rtol=1e-5, atol=1e-6)
    out, label = aug(img, LABEL.copy())        # the next crop of the same stream
    assert out.shape == (26, 51, 3)
    np.testing.assert_allclose(label, [[0, 0.039216, 0.076923, 0.509804, 0.692308, 7],
                                       [1, 0.392157, 0.230769, 0.980392, 1, 8],
                                       [2, 0, 0.846154, 0.156863, 1, 9]], rtol=1e-4, atol=1e-6)
    random.seed(1)
    assert aug._random_crop_proposal(LABEL, 40, 60)[:4] == (7, 8, 14, 20)
    # the cropped pixels are the source's
    random.seed(2)
    x, y, w, h, _ = aug._random_crop_proposal(LABEL, 40, 60)
    random.seed(2)
    out, _ = aug(img, LABEL.copy())
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[y:y + h, x:x + w])


def test_random_pad_matches_mxnet_with_a_seed():
    img = _image()
    random.seed(0)
    aug = det.DetRandomPadAug(aspect_ratio_range=(0.5, 2.0), area_range=(1.0, 3.0),
                              pad_val=(1, 2, 3))
    out, label = aug(img, LABEL.copy())
    assert out.shape == (64, 113, 3)
    np.testing.assert_allclose(label, [[0, 0.070796, 0.328125, 0.283186, 0.578125, 7],
                                       [1, 0.230089, 0.390625, 0.495575, 0.796875, 8],
                                       [2, 0.044248, 0.640625, 0.123894, 0.765625, 9]],
                               rtol=1e-4)
    a = out.asnumpy()
    assert a[0, 0].tolist() == [1, 2, 3] and a[-1, -1].tolist() == [1, 2, 3]
    # the image sits where the new boxes say: xmin * w - old xmin * old w is the offset
    x0 = int(round(label[0, 1] * 113 - 0.1 * 60))
    y0 = int(round(label[0, 2] * 64 - 0.2 * 40))
    np.testing.assert_array_equal(a[y0:y0 + 40, x0:x0 + 60], img.asnumpy())
    random.seed(1)
    assert aug(img, LABEL.copy())[0].shape == (88, 62, 3)


def test_flip_moves_the_boxes():
    img = _image()
    random.seed(1)      # random.random() = 0.134 < 0.5: flipped
    out, label = det.DetHorizontalFlipAug(0.5)(img, LABEL.copy())
    np.testing.assert_allclose(label[:, 1:5], [[0.5, 0.2, 0.9, 0.6], [0.1, 0.3, 0.6, 0.95],
                                               [0.8, 0.7, 0.95, 0.9]], rtol=1e-6)
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[:, ::-1])
    random.seed(0)      # 0.844: not flipped
    out, label = det.DetHorizontalFlipAug(0.5)(img, LABEL.copy())
    np.testing.assert_array_equal(label, LABEL)


def test_multi_crop_select_and_create_det_augmenter():
    img = _image()
    expected = {2: (32, 26), 3: (35, 38), 5: (40, 48), 0: (40, 60)}     # 0: skipped
    for seed, (h, w) in expected.items():
        random.seed(seed)
        aug = det.CreateMultiRandCropAugmenter(
            min_object_covered=[0.1, 0.5, 0.9],
            area_range=[(0.1, 1.0), (0.3, 1.0), (0.5, 1.0)], skip_prob=0.2)
        assert aug(img, LABEL.copy())[0].shape == (h, w, 3)
    aug = det.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.5], area_range=(0.1, 1.0))
    name, crops = aug.dumps()
    assert name == 'detrandomselectaug' and len(crops) == 2
    assert json.loads(crops[1]) == ['detrandomcropaug', {
        'min_object_covered': 0.5, 'aspect_ratio_range': [0.75, 1.33], 'area_range': [0.1, 1.0],
        'min_eject_coverage': 0.3, 'max_attempts': 50}]
    augs = det.CreateDetAugmenter((3, 30, 30), resize=50, rand_crop=0.5, rand_pad=0.5,
                                  rand_mirror=True, mean=True, std=True, brightness=0.1,
                                  hue=0.1, pca_noise=0.1, rand_gray=0.1)
    assert [type(a).__name__ for a in augs] == [
        'DetBorrowAug', 'DetRandomSelectAug', 'DetHorizontalFlipAug', 'DetRandomSelectAug'] + \
        ['DetBorrowAug'] * 7
    assert augs[0].dumps() == ['detborrowaug', '["resizeaug", {"size": 50, "interp": 2}]']
    assert json.loads(augs[3].dumps()[1][0])[1]['area_range'] == [1.0, 3.0]
    assert augs[2].dumps() == '["dethorizontalflipaug", {"p": 0.5}]'
    with pytest.raises(TypeError):
        det.DetBorrowAug(det.DetHorizontalFlipAug(0.5))


def test_parse_label_header_widths():
    it = det.ImageDetIter.__new__(det.ImageDetIter)
    raw = [4, 6, 10, 11, 0, 0.1, 0.1, 0.5, 0.5, 3, 1, 0.2, 0.2, 0.1, 0.3, 4,
           2, 0.3, 0.3, 0.6, 0.7, 5]
    np.testing.assert_allclose(it._parse_label(mx.nd.array(raw)),   # object 1: empty box
                               [[0, 0.1, 0.1, 0.5, 0.5, 3], [2, 0.3, 0.3, 0.6, 0.7, 5]],
                               rtol=1e-6)
    for bad, message in (([2, 5, 0, 0.1, 0.1], 'Label shape is invalid'),
                         ([2, 5, 0, 0.1, 0.1, 0.5, 0.5, 1], 'inconsistent with annotation'),
                         ([2, 5, 0, 0.5, 0.1, 0.1, 0.5], 'no valid label')):
        with pytest.raises(RuntimeError, match=message):
            it._parse_label(np.array(bad))


_LABELS = [[2, 5, 0, 0.1, 0.1, 0.5, 0.6, 1, 0.3, 0.2, 0.9, 0.8],
           [3, 5, 99, 1, 0.0, 0.0, 1.0, 1.0],
           [2, 5, 2, 0.2, 0.2, 0.4, 0.4, 0, 0.5, 0.5, 0.7, 0.9, 1, 0.1, 0.6, 0.3, 0.8],
           [2, 5, 1, 0.05, 0.1, 0.95, 0.9]]
_PAD = [-1] * 5
_OBJECTS = [[[0, 0.1, 0.1, 0.5, 0.6], [1, 0.3, 0.2, 0.9, 0.8], _PAD],
            [[1, 0, 0, 1, 1], _PAD, _PAD],
            [[2, 0.2, 0.2, 0.4, 0.4], [0, 0.5, 0.5, 0.7, 0.9], [1, 0.1, 0.6, 0.3, 0.8]],
            [[1, 0.05, 0.1, 0.95, 0.9], _PAD, _PAD]]


@pytest.fixture
def det_files(tmp_path):
    import cv2
    rng = np.random.RandomState(0)
    images = []
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / 'det.idx'), str(tmp_path / 'det.rec'),
                                        'w')
    with open(tmp_path / 'det.lst', 'w') as lst:
        for i, label in enumerate(_LABELS):
            img = rng.randint(0, 255, (16, 20, 3)).astype(np.uint8)
            images.append(img[:, :, ::-1].transpose(2, 0, 1).astype(np.float32))   # RGB CHW
            cv2.imwrite(str(tmp_path / ('img%d.png' % i)), img)
            lst.write('\t'.join([str(i)] + ['%g' % v for v in label] + ['img%d.png' % i]) + '\n')
            header = mx.recordio.IRHeader(0, np.array(label, dtype=np.float32), i, 0)
            rec.write_idx(i, mx.recordio.pack_img(header, img, img_fmt='.png'))
    rec.close()
    return tmp_path, images


def _batches(it):
    return [(b.pad, b.label[0].asnumpy(), b.data[0].asnumpy()) for b in it]


def test_image_det_iter_sources_agree(det_files):
    path, images = det_files
    iters = [det.ImageDetIter(2, (3, 16, 20), path_imglist=str(path / 'det.lst'),
                              path_root=str(path)),
             det.ImageDetIter(2, (3, 16, 20), path_imgrec=str(path / 'det.rec')),
             det.ImageDetIter(2, (3, 16, 20), path_imgrec=str(path / 'det.rec'),
                              path_imgidx=str(path / 'det.idx')),
             det.ImageDetIter(2, (3, 16, 20), path_root=str(path), label_name='lbl',
                              imglist=[lab + ['img%d.png' % i] for i, lab in enumerate(_LABELS)])]
    for it in iters:
        assert it.label_shape == (3, 5)
        assert it.provide_label[0][1] == (2, 3, 5) and it.provide_data[0][1] == (2, 3, 16, 20)
        for _ in range(2):
            batches = _batches(it)
            assert [b[0] for b in batches] == [0, 0]
            np.testing.assert_allclose(np.concatenate([b[1] for b in batches]), _OBJECTS,
                                       rtol=1e-6)
            np.testing.assert_array_equal(np.concatenate([b[2] for b in batches]), images)
            it.reset()
    assert iters[3].provide_label[0][0] == 'lbl'


def test_image_det_iter_last_batch_and_label_shapes(det_files):
    path, _ = det_files
    lst = str(path / 'det.lst')
    it = det.ImageDetIter(3, (3, 16, 20), path_imglist=lst, path_root=str(path),
                          last_batch_handle='discard')
    assert len(_batches(it)) == 1
    it = det.ImageDetIter(3, (3, 16, 20), path_imglist=lst, path_root=str(path),
                          last_batch_handle='roll_over')
    assert [b[0] for b in _batches(it)] == [0]
    it.reset()
    pad, label, _ = _batches(it)[0]              # the rolled-over image, then the next epoch
    assert pad == 2
    np.testing.assert_allclose(label[:, 0, 0], [1, 0, 1])
    small = det.ImageDetIter(2, (3, 16, 20), path_root=str(path),
                             imglist=[lab + ['img%d.png' % i] for i, lab in enumerate(_LABELS)
                                      if i in (1, 3)])
    assert small.label_shape == (1, 5)
    big = det.ImageDetIter(2, (3, 16, 20), path_imglist=lst, path_root=str(path))
    assert big.sync_label_shape(small) is small and small.label_shape == (3, 5)
    assert _batches(small)[0][1].shape == (2, 3, 5)
    big.reshape((3, 8, 10), (5, 5))
    assert big.provide_data[0][1] == (2, 3, 8, 10) and big.provide_label[0][1] == (2, 5, 5)
    for bad in [(2, 5), (5, 6), (5,)]:
        with pytest.raises(ValueError):
            big.reshape(None, bad)


def test_image_det_iter_augments_boxes(det_files):
    path, images = det_files
    random.seed(1)
    it = det.ImageDetIter(2, (3, 16, 20), rand_mirror=True, path_root=str(path),
                          imglist=[lab + ['img%d.png' % i] for i, lab in enumerate(_LABELS[:2])])
    (pad, label, data), = _batches(it)
    np.testing.assert_allclose(label[0, :2], [[0, 0.5, 0.1, 0.9, 0.6], [1, 0.1, 0.2, 0.7, 0.8]],
                               rtol=1e-6)
    np.testing.assert_array_equal(data[0], images[0][:, :, ::-1])
    # every augmenter of CreateDetAugmenter runs, boxes stay inside the image
    random.seed(3)
    it = det.ImageDetIter(2, (3, 12, 12), path_imglist=str(path / 'det.lst'),
                          path_root=str(path), resize=20, rand_crop=1, rand_pad=1, rand_gray=0.1,
                          rand_mirror=True, mean=True, std=np.array([1.1, 1.03, 1.05]),
                          brightness=0.1, contrast=0.1, saturation=0.1, pca_noise=0.1, hue=0.1,
                          inter_method=10, min_object_covered=0.5, area_range=(0.1, 4.0))
    for pad, label, data in _batches(it):
        assert data.shape == (2, 3, 12, 12)
        boxes = label[label[:, :, 0] >= 0]
        assert len(boxes) and (boxes[:, 1:5] >= 0).all() and (boxes[:, 1:5] <= 1).all()
