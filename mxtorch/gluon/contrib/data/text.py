"""Language-model datasets: WikiText-2 and WikiText-103 as (data, label) rows of `seq_len` token
indices, the label being the data shifted by one token; '<eos>' ends every line."""
import os
import shutil
import zipfile

import numpy as np

from .... import base, nd
from ....contrib import text
from ...data import dataset
from ...utils import _get_repo_file_url, check_sha1, download

__all__ = ['WikiText2', 'WikiText103']


class _WikiText(dataset._DownloadedDataset):
    _namespace = None
    _archive_file = None
    _data_file = None

    def __init__(self, root, segment, vocab, seq_len):
        self._segment, self._seq_len = segment, seq_len
        self._vocab, self._counter = vocab, None
        super().__init__(root, None)

    @property
    def vocabulary(self):
        return self._vocab

    @property
    def frequencies(self):
        return self._counter

    def _build_vocab(self, content):
        if not self._counter:
            self._counter = text.utils.count_tokens_from_str(content)
        if not self._vocab:
            self._vocab = text.vocab.Vocabulary(counter=self._counter,
                                                reserved_tokens=[text._constants.EOS_TOKEN])

    def _fetch(self):
        name, sha1 = self._data_file[self._segment]
        path = os.path.join(self._root, name)
        if not os.path.exists(path) or not check_sha1(path, sha1):
            archive = download(_get_repo_file_url('gluon/dataset/' + self._namespace,
                                                  self._archive_file[0]),
                               path=self._root, sha1_hash=self._archive_file[1])
            with zipfile.ZipFile(archive) as zf:
                for member in zf.namelist():
                    filename = os.path.basename(member)
                    if filename:
                        with zf.open(member) as src, \
                                open(os.path.join(self._root, filename), 'wb') as dst:
                            shutil.copyfileobj(src, dst)
        return path

    def _get_data(self):
        with open(self._fetch(), 'r', encoding='utf8') as fin:
            content = fin.read()
        self._build_vocab(content)
        tokens = [tok for line in content.splitlines() for tok in
                  (line.split() + [text._constants.EOS_TOKEN] if line.split() else [])]
        ids = np.array(self._vocab.to_indices(tokens), dtype=np.int32)
        usable = (len(ids) - 1) // self._seq_len * self._seq_len
        self._data = nd.array(ids[:usable], dtype=np.int32).reshape((-1, self._seq_len))
        self._label = nd.array(ids[1:usable + 1], dtype=np.int32).reshape((-1, self._seq_len))

    def __getitem__(self, idx):
        return self._data[idx], self._label[idx]


class WikiText2(_WikiText):
    """WikiText-2 (Merity et al.), segment 'train', 'validation' or 'test'; a new Vocabulary
    is built from the segment's text unless `vocab` is given."""
    _namespace = 'wikitext-2'
    _archive_file = ('wikitext-2-v1.zip', '3c914d17d80b1459be871a5039ac23e752a53cbe')
    _data_file = {'train': ('wiki.train.tokens', '863f29c46ef9d167fff4940ec821195882fe29d1'),
                  'validation': ('wiki.valid.tokens', '0418625c8b4da6e4b5c7a0b9e78d4ae8f7ee5422'),
                  'test': ('wiki.test.tokens', 'c7b8ce0aa086fb34dab808c5c49224211eb2b172')}

    def __init__(self, root=os.path.join(base.data_dir(), 'datasets', 'wikitext-2'),
                 segment='train', vocab=None, seq_len=35):
        super().__init__(root, segment, vocab, seq_len)


class WikiText103(_WikiText):
    """WikiText-103, in WikiText-2's format."""
    _namespace = 'wikitext-103'
    _archive_file = ('wikitext-103-v1.zip', '0aec09a7537b58d4bb65362fee27650eeaba625a')
    _data_file = {'train': ('wiki.train.tokens', 'b7497e2dfe77e72cfef5e3dbc61b7b53712ac211'),
                  'validation': ('wiki.valid.tokens', 'c326ac59dc587676d58c422eb8a03e119582f92b'),
                  'test': ('wiki.test.tokens', '8a5befc548865cec54ed4273cf87dbbad60d1e47')}

    def __init__(self, root=os.path.join(base.data_dir(), 'datasets', 'wikitext-103'),
                 segment='train', vocab=None, seq_len=35):
        super().__init__(root, segment, vocab, seq_len)
