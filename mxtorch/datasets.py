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


_SUBJECTS = ['the cat', 'a dog', 'the old man', 'my sister', 'the teacher', 'a small bird',
             'the farmer', 'our neighbour', 'the child', 'a stranger']
_VERBS = ['sees', 'likes', 'follows', 'finds', 'paints', 'calls', 'helps', 'watches']
_OBJECTS = ['the river', 'a red ball', 'the garden', 'an old book', 'the city', 'the moon',
            'a green hat', 'the market', 'a long letter', 'the mountain']
_ADVERBS = ['quietly', 'every morning', 'in the rain', 'after dinner', 'with great care',
            'before sunrise', 'near the sea', 'without a word']


def synthetic_sentences(count=2000, seed=0):
    """Sentences of a small random grammar (lists of words, 4 to about 30 long): subjects,
    verbs and objects joined by 'and' / 'because' clauses and adverbs. A generated corpus for
    the language-model example; its structure makes perplexity fall well below the vocabulary
    size as a model learns it."""
    rng = np.random.RandomState(seed)

    def pick(words):
        return words[rng.randint(len(words))].split()

    sentences = []
    for _ in range(count):
        words = pick(_SUBJECTS) + pick(_VERBS) + pick(_OBJECTS)
        for _ in range(rng.poisson(0.8)):
            joiner = ['and'] if rng.rand() < 0.5 else ['because']
            words += joiner + pick(_SUBJECTS) + pick(_VERBS) + pick(_OBJECTS)
        if rng.rand() < 0.5:
            words += pick(_ADVERBS)
        sentences.append(words)
    return sentences
