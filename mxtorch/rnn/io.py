"""Sentence data for recurrent models: encode_sentences (words -> integer ids) and
BucketSentenceIter (batches of equal-length, padded sentences with a bucket key)."""
import bisect
import random

import numpy as np

from .. import ndarray as nd
from ..base import MXNetError
from ..io import DataBatch, DataDesc, DataIter


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key='\n', start_label=0,
                     unknown_token=None):
    """(sentences as lists of ids, vocab): each word gets the id of `vocab[word]`.

    Without a vocab a new one is built, {invalid_key: invalid_label} plus one id per new word,
    counted from start_label and skipping invalid_label. With a vocab, unknown words are an
    error unless unknown_token is given; then, as in MXNet, each unknown word gets the next
    free id, stored under unknown_token (which ends up with the id of the last one).
    The given vocab is updated in place.
    """
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    next_id = start_label
    encoded = []
    for sentence in sentences:
        codes = []
        for word in sentence:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise MXNetError('encode_sentences: word %r is not in the given vocab; give '
                                     'unknown_token to map unknown words' % (word,))
                if next_id == invalid_label:
                    next_id += 1
                if unknown_token:
                    word = unknown_token
                vocab[word] = next_id
                next_id += 1
            codes.append(vocab[word])
        encoded.append(codes)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of encoded sentences grouped by length.

    Each sentence goes into the smallest bucket (a length) that holds it, padded with
    invalid_label; longer sentences are dropped. The buckets default to every sentence length
    with at least batch_size sentences. A batch comes from one bucket: data (N, T) for layout
    'NT' or (T, N) for 'TN', the label being the data shifted one step left with invalid_label
    last, and bucket_key = the bucket's length. reset() shuffles the batch order (Python's
    random) and the sentences inside each bucket (NumPy's).
    """

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name='data',
                 label_name='softmax_label', dtype='float32', layout='NT'):
        super().__init__(batch_size)
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, count in enumerate(counts) if count >= batch_size]
        if not buckets:
            raise MXNetError('BucketSentenceIter: no bucket: give buckets, or at least '
                             'batch_size=%d sentences of one length' % batch_size)
        self.major_axis = layout.find('N')
        if self.major_axis not in (0, 1):
            raise MXNetError("BucketSentenceIter: layout must be 'NT' (batch major) or 'TN' "
                             "(time major), given %r" % layout)
        self.buckets = sorted(buckets)
        self.batch_size = batch_size
        self.invalid_label = invalid_label
        self.data_name = data_name
        self.label_name = label_name
        self.dtype = dtype
        self.layout = layout
        self.data = self._pad_into_buckets(sentences)
        self.default_bucket_key = max(self.buckets)
        self.provide_data = [self._desc(data_name, self.default_bucket_key)]
        self.provide_label = [self._desc(label_name, self.default_bucket_key)]
        self.idx = [(bucket, start) for bucket, rows in enumerate(self.data)
                    for start in range(0, len(rows) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.nddata, self.ndlabel = [], []
        self.reset()

    def _pad_into_buckets(self, sentences):
        rows = [[] for _ in self.buckets]
        discarded = 0
        for sentence in sentences:
            bucket = bisect.bisect_left(self.buckets, len(sentence))
            if bucket == len(self.buckets):
                discarded += 1
                continue
            row = np.full((self.buckets[bucket],), self.invalid_label, dtype=self.dtype)
            row[:len(sentence)] = sentence
            rows[bucket].append(row)
        print('WARNING: discarded %d sentences longer than the largest bucket.' % discarded)
        return [np.asarray(r, dtype=self.dtype).reshape(len(r), length)
                for r, length in zip(rows, self.buckets)]

    def _desc(self, name, length):
        shape = (self.batch_size, length) if self.major_axis == 0 else (length, self.batch_size)
        return DataDesc(name=name, shape=shape, layout=self.layout)

    def reset(self):
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata, self.ndlabel = [], []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1:] = self.invalid_label
            self.nddata.append(nd.array(rows, dtype=self.dtype))
            self.ndlabel.append(nd.array(label, dtype=self.dtype))

    def next(self):
        if self.curr_idx == len(self.idx):
            raise StopIteration
        bucket, start = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[bucket][start:start + self.batch_size]
        label = self.ndlabel[bucket][start:start + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        length = self.buckets[bucket]
        return DataBatch([data], [label], pad=0, bucket_key=length,
                         provide_data=[self._desc(self.data_name, length)],
                         provide_label=[self._desc(self.label_name, length)])
