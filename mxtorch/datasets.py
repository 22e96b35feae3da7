"""Small data sets that ship with mxtorch (no network needed)."""
import gzip
import os

import numpy as np

_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data')


def load_digits():
    """The UCI 8x8 handwritten digits: (images (1797, 1, 8, 8) float32 in [0, 1], labels
    (1797,) float32 in 0..9). See mxtorch/data/README.md for the source and licence."""
    with gzip.open(os.path.join(_DATA, 'digits.csv.gz'), 'rt') as f:
        table = np.loadtxt(f, delimiter=',', dtype=np.float32)
    if table.shape != (1797, 65):
        raise ValueError('digits.csv.gz holds %s values, expected 1797 rows of 65' % (table.shape,))
    images = (table[:, :64] / 16.0).reshape(-1, 1, 8, 8)
    return images, table[:, 64]


def split(images, labels, val_fraction=0.2, seed=0):
    """(train_x, train_y, val_x, val_y): a fixed shuffle, the last val_fraction held out."""
    order = np.random.RandomState(seed).permutation(len(labels))
    n_val = int(round(len(labels) * val_fraction))
    train, val = order[:-n_val], order[-n_val:]
    return images[train], labels[train], images[val], labels[val]
