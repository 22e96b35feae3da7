"""Token embeddings: vectors for the tokens of a Vocabulary, read from text files of
`token v1 v2 ...` lines (CustomEmbedding), downloaded (GloVe, FastText) or concatenated from
several embeddings (CompositeEmbedding)."""
import logging
import os
import tarfile
import warnings
import zipfile

from ... import base, ndarray as nd
from . import _constants as C
from . import vocab

__all__ = ['register', 'create', 'get_pretrained_file_names', 'GloVe', 'FastText',
           'CustomEmbedding', 'CompositeEmbedding']

_REGISTRY = {}
_REPO_URL = 'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/'


def register(embedding_cls):
    """Register a token embedding class under its lower-cased name, for `create`."""
    assert issubclass(embedding_cls, _TokenEmbedding), \
        'Can only register subclass of _TokenEmbedding'
    name = embedding_cls.__name__.lower()
    if name in _REGISTRY:
        warnings.warn('New token embedding %s is overriding existing one %s'
                      % (embedding_cls, _REGISTRY[name]))
    _REGISTRY[name] = embedding_cls
    return embedding_cls


def create(embedding_name, **kwargs):
    """An instance of the registered token embedding `embedding_name` (case-insensitive)."""
    name = embedding_name.lower()
    if name not in _REGISTRY:
        raise ValueError('Cannot find token embedding %s. Valid names: %s'
                         % (embedding_name, ', '.join(sorted(_REGISTRY))))
    return _REGISTRY[name](**kwargs)


def get_pretrained_file_names(embedding_name=None):
    """The pre-trained file names of `embedding_name`, or of every registered embedding."""
    if embedding_name is None:
        return {name: list(cls.pretrained_file_name_sha1) for name, cls in _REGISTRY.items()}
    if embedding_name not in _REGISTRY:
        raise KeyError('Cannot find `embedding_name` %s. Use `get_pretrained_file_names('
                       'embedding_name=None).keys()` to get all the valid embedding names.'
                       % embedding_name)
    return list(_REGISTRY[embedding_name].pretrained_file_name_sha1)


class _TokenEmbedding(vocab.Vocabulary):
    """A Vocabulary whose tokens have vectors: `idx_to_vec` (len(self), vec_len), row 0 for the
    unknown token."""
    pretrained_file_name_sha1 = {}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._idx_to_vec = None

    @property
    def vec_len(self):
        return None if self._idx_to_vec is None else self._idx_to_vec.shape[1]

    @property
    def idx_to_vec(self):
        return self._idx_to_vec

    def _load_embedding(self, path, elem_delim, init_unknown_vec, encoding='utf8'):
        path = os.path.expanduser(path)
        if not os.path.isfile(path):
            raise ValueError('`pretrained_file_path` must be a valid path to the pre-trained '
                             'token embedding file.')
        logging.info('Loading pre-trained token embedding vectors from %s', path)
        rows, unknown_vec, seen, vec_len = [], None, set(), None
        with open(path, 'r', encoding=encoding) as f:
            for line_num, line in enumerate(f, 1):
                elems = line.rstrip().split(elem_delim)
                assert len(elems) > 1, 'At line %d of the pre-trained text embedding file: ' \
                    'the data format of the pre-trained token embedding file %s is ' \
                    'unexpected.' % (line_num, path)
                token, vec = elems[0], [float(v) for v in elems[1:]]
                if token == self.unknown_token and unknown_vec is None:
                    unknown_vec = vec
                    seen.add(token)
                elif token in seen:
                    warnings.warn('At line %d of the pre-trained token embedding file: the '
                                  'embedding vector for token %s has been loaded and a '
                                  'duplicate embedding for the same token is seen and skipped.'
                                  % (line_num, token))
                elif len(vec) == 1:
                    warnings.warn('At line %d of the pre-trained text embedding file: token %s '
                                  'with 1-dimensional vector %s is likely a header and is '
                                  'skipped.' % (line_num, token, vec))
                else:
                    if vec_len is None:
                        vec_len = len(vec)
                    assert len(vec) == vec_len, 'At line %d of the pre-trained token embedding ' \
                        'file: the dimension of token %s is %d but the dimension of previous ' \
                        'tokens is %d. Dimensions of all the tokens must be the same.' \
                        % (line_num, token, len(vec), vec_len)
                    rows.append(vec)
                    self._token_to_idx[token] = len(self._idx_to_token)
                    self._idx_to_token.append(token)
                    seen.add(token)
        vec_len = vec_len or len(unknown_vec or [])
        self._idx_to_vec = nd.array([[0.0] * vec_len] + rows).reshape((-1, vec_len))
        self._idx_to_vec[C.UNKNOWN_IDX] = (init_unknown_vec(shape=vec_len)
                                           if unknown_vec is None else nd.array(unknown_vec))

    def _set_idx_to_vec_by_embeddings(self, token_embeddings, vocab_len, vocab_idx_to_token):
        width = sum(embed.vec_len for embed in token_embeddings)
        vecs = nd.zeros(shape=(vocab_len, width))
        start = 0
        for embed in token_embeddings:
            end = start + embed.vec_len
            vecs[0, start:end] = embed.idx_to_vec[0]
            if vocab_len > 1:
                vecs[1:, start:end] = embed.get_vecs_by_tokens(list(vocab_idx_to_token[1:]))
            start = end
        self._idx_to_vec = vecs

    def _index_tokens_from_vocabulary(self, vocabulary):
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        self._reserved_tokens = None if vocabulary.reserved_tokens is None \
            else list(vocabulary.reserved_tokens)

    def _build_embedding_for_vocabulary(self, vocabulary):
        if vocabulary is not None:
            assert isinstance(vocabulary, vocab.Vocabulary), \
                'The argument `vocabulary` must be an instance of ' \
                'mxnet.contrib.text.vocab.Vocabulary.'
            self._set_idx_to_vec_by_embeddings([self], len(vocabulary), vocabulary.idx_to_token)
            self._index_tokens_from_vocabulary(vocabulary)

    def get_vecs_by_tokens(self, tokens, lower_case_backup=False):
        """The vector of a token (1-D) or the vectors of a list of tokens (2-D); unknown
        tokens get row 0. With lower_case_backup, a token not found is looked up lower-cased."""
        single = not isinstance(tokens, list)
        tokens = [tokens] if single else tokens
        get = self._token_to_idx.get
        indices = [get(t, C.UNKNOWN_IDX) if not lower_case_backup or t in self._token_to_idx
                   else get(t.lower(), C.UNKNOWN_IDX) for t in tokens]
        vecs = nd.Embedding(nd.array(indices), self._idx_to_vec, self._idx_to_vec.shape[0],
                            self._idx_to_vec.shape[1])
        return vecs[0] if single else vecs

    def update_token_vectors(self, tokens, new_vectors):
        """Set the vectors of known `tokens` (a token with a 1-D or 2-D NDArray, or a list with
        a 2-D one)."""
        assert self._idx_to_vec is not None, \
            'The property `idx_to_vec` has not been properly set.'
        if not isinstance(tokens, list) or len(tokens) == 1:
            assert isinstance(new_vectors, nd.NDArray) and len(new_vectors.shape) in (1, 2), \
                '`new_vectors` must be a 1-D or 2-D NDArray if `tokens` is a singleton.'
            tokens = tokens if isinstance(tokens, list) else [tokens]
            if len(new_vectors.shape) == 1:
                new_vectors = nd.expand_dims(new_vectors, axis=0)
        else:
            assert isinstance(new_vectors, nd.NDArray) and len(new_vectors.shape) == 2, \
                '`new_vectors` must be a 2-D NDArray if `tokens` is a list of multiple strings.'
        assert new_vectors.shape == (len(tokens), self.vec_len), \
            'The length of new_vectors must be equal to the number of tokens and the width of ' \
            'new_vectors must be equal to the dimension of embeddings of the glossary.'
        indices = []
        for token in tokens:
            if token not in self._token_to_idx:
                raise ValueError('Token %s is unknown. To update the embedding vector for an '
                                 'unknown token, please specify it explicitly as the '
                                 '`unknown_token` %s in `tokens`. This is to avoid unintended '
                                 'updates.' % (token, self._idx_to_token[C.UNKNOWN_IDX]))
            indices.append(self._token_to_idx[token])
        self._idx_to_vec[nd.array(indices)] = new_vectors

    @classmethod
    def _check_pretrained_file_names(cls, pretrained_file_name):
        if pretrained_file_name not in cls.pretrained_file_name_sha1:
            name = cls.__name__.lower()
            raise KeyError('Cannot find pretrained file %s for token embedding %s. Valid '
                           'pretrained files for embedding %s: %s'
                           % (pretrained_file_name, name, name,
                              ', '.join(cls.pretrained_file_name_sha1)))

    @classmethod
    def _archive_name(cls, pretrained_file_name):
        return pretrained_file_name

    @classmethod
    def _get_pretrained_file(cls, embedding_root, pretrained_file_name):
        from ...gluon.utils import download
        folder = os.path.join(os.path.expanduser(embedding_root), cls.__name__.lower())
        path = os.path.join(folder, pretrained_file_name)
        if not os.path.exists(path):
            archive = cls._archive_name(pretrained_file_name)
            url = '%sgluon/embeddings/%s/%s' % (os.environ.get('MXNET_GLUON_REPO', _REPO_URL),
                                                cls.__name__.lower(), archive)
            downloaded = download(url, os.path.join(folder, archive))
            if archive.endswith('.zip'):
                with zipfile.ZipFile(downloaded) as zf:
                    zf.extractall(folder)
            elif archive.endswith('.gz'):
                with tarfile.open(downloaded, 'r:gz') as tar:
                    tar.extractall(folder)
        return path

    def _load_pretrained(self, pretrained_file_name, embedding_root, init_unknown_vec,
                         vocabulary, elem_delim=' ', encoding='utf8'):
        self._check_pretrained_file_names(pretrained_file_name)
        path = self._get_pretrained_file(embedding_root, pretrained_file_name)
        self._load_embedding(path, elem_delim, init_unknown_vec, encoding)
        self._build_embedding_for_vocabulary(vocabulary)


_EMBEDDING_ROOT = os.path.join(base.data_dir(), 'embeddings')


@register
class GloVe(_TokenEmbedding):
    """GloVe vectors (nlp.stanford.edu/projects/glove), downloaded under embedding_root/glove."""
    pretrained_file_name_sha1 = dict.fromkeys(
        ['glove.42B.300d.txt', 'glove.6B.50d.txt', 'glove.6B.100d.txt', 'glove.6B.200d.txt',
         'glove.6B.300d.txt', 'glove.840B.300d.txt', 'glove.twitter.27B.25d.txt',
         'glove.twitter.27B.50d.txt', 'glove.twitter.27B.100d.txt',
         'glove.twitter.27B.200d.txt'])

    _archives = {'42B': 'glove.42B.300d.zip', '6B': 'glove.6B.zip',
                 '840B': 'glove.840B.300d.zip', 'twitter': 'glove.twitter.27B.zip'}

    @classmethod
    def _archive_name(cls, pretrained_file_name):
        return cls._archives[pretrained_file_name.split('.')[1]]

    def __init__(self, pretrained_file_name='glove.840B.300d.txt',
                 embedding_root=_EMBEDDING_ROOT, init_unknown_vec=nd.zeros, vocabulary=None,
                 **kwargs):
        super().__init__(**kwargs)
        self._load_pretrained(pretrained_file_name, embedding_root, init_unknown_vec, vocabulary)


@register
class FastText(_TokenEmbedding):
    """fastText vectors (fasttext.cc), downloaded under embedding_root/fasttext."""
    pretrained_file_name_sha1 = dict.fromkeys(
        ['wiki.simple.vec', 'wiki.en.vec', 'crawl-300d-2M.vec', 'wiki-news-300d-1M.vec',
         'wiki-news-300d-1M-subword.vec'])

    @classmethod
    def _archive_name(cls, pretrained_file_name):
        return pretrained_file_name[:-len('.vec')] + '.zip'

    def __init__(self, pretrained_file_name='wiki.simple.vec', embedding_root=_EMBEDDING_ROOT,
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        super().__init__(**kwargs)
        self._load_pretrained(pretrained_file_name, embedding_root, init_unknown_vec, vocabulary)


class CustomEmbedding(_TokenEmbedding):
    """Vectors from a local text file of `token<elem_delim>v1<elem_delim>v2...` lines."""

    def __init__(self, pretrained_file_path, elem_delim=' ', encoding='utf8',
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """The tokens of `vocabulary`, each with the concatenated vectors of `token_embeddings`."""

    def __init__(self, vocabulary, token_embeddings):
        assert isinstance(vocabulary, vocab.Vocabulary), \
            'The argument `vocabulary` must be an instance of ' \
            'mxnet.contrib.text.indexer.Vocabulary.'
        if not isinstance(token_embeddings, list):
            token_embeddings = [token_embeddings]
        for embed in token_embeddings:
            assert isinstance(embed, _TokenEmbedding), \
                'The argument `token_embeddings` must be an instance or a list of instances of ' \
                '`mxnet.contrib.text.embedding.TextEmbedding` whose embedding vectors will be ' \
                'loaded or concatenated-then-loaded to map to the indexed tokens.'
        super().__init__()
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(token_embeddings, len(self), self.idx_to_token)
