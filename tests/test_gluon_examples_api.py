"""API that MXNet's Gluon example scripts use (each test: one behaviour they rely on)."""
import numpy as np

import mxtorch as mx
from mxtorch import gluon


def test_contrib_io_dataloaderiter_pads_last_batch():
    x = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)
    y = np.arange(10, dtype=np.int32)
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=4)
    it = mx.contrib.io.DataLoaderIter(loader)
    assert it.provide_data[0].name == 'data' and it.provide_data[0].shape == (4, 3)
    assert it.provide_label[0].name == 'softmax_label' and it.provide_label[0].shape == (4,)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    assert batches[2].data[0].shape == (4, 3) and batches[2].data[0].dtype == np.float32
    np.testing.assert_array_equal(batches[2].data[0].asnumpy()[:2], x[8:])
    np.testing.assert_array_equal(batches[1].label[0].asnumpy(), y[4:8])
    it.reset()
    assert len(list(it)) == 3
