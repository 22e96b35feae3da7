"""Vocabulary: the mapping between tokens and their integer indices."""
import collections

from . import _constants as C

__all__ = ['Vocabulary']


class Vocabulary:
    """Indexes tokens: the unknown token first (index 0), then `reserved_tokens` in their order,
    then the keys of `counter` by decreasing frequency (ties in token order), keeping those seen
    at least `min_freq` times, at most `most_freq_count` of them."""

    def __init__(self, counter=None, most_freq_count=None, min_freq=1, unknown_token='<unk>',
                 reserved_tokens=None):
        if reserved_tokens is not None:
            assert unknown_token not in set(reserved_tokens), \
                '`reserved_token` cannot contain `unknown_token`.'
            assert len(set(reserved_tokens)) == len(reserved_tokens), \
                '`reserved_tokens` cannot contain duplicate reserved tokens.'
        assert min_freq > 0, '`min_freq` must be set to a positive value.'
        self._unknown_token = unknown_token
        self._reserved_tokens = None if reserved_tokens is None else list(reserved_tokens)
        self._idx_to_token = [unknown_token] + list(reserved_tokens or [])
        self._token_to_idx = {token: idx for idx, token in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter(counter, most_freq_count, min_freq)

    def _index_counter(self, counter, most_freq_count, min_freq):
        assert isinstance(counter, collections.Counter), \
            '`counter` must be an instance of collections.Counter.'
        special = set(self._idx_to_token)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        by_freq = sorted(sorted(counter.items(), key=lambda kv: kv[0]),
                         key=lambda kv: kv[1], reverse=True)
        for token, freq in by_freq:
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token not in special:
                self._token_to_idx[token] = len(self._idx_to_token)
                self._idx_to_token.append(token)

    def __len__(self):
        return len(self._idx_to_token)

    def __contains__(self, token):
        return token in self._token_to_idx

    @property
    def token_to_idx(self):
        return self._token_to_idx

    @property
    def idx_to_token(self):
        return self._idx_to_token

    @property
    def unknown_token(self):
        return self._unknown_token

    @property
    def reserved_tokens(self):
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token, or the list of indices of a list of tokens (unknown ones: 0)."""
        if not isinstance(tokens, list):
            return self._token_to_idx.get(tokens, C.UNKNOWN_IDX)
        return [self._token_to_idx.get(token, C.UNKNOWN_IDX) for token in tokens]

    def to_tokens(self, indices):
        """The token of an index, or the list of tokens of a list of indices."""
        single = not isinstance(indices, list)
        indices = [indices] if single else indices
        for idx in indices:
            if not isinstance(idx, int) or idx >= len(self._idx_to_token):
                raise ValueError('Token index %d in the provided `indices` is invalid.' % idx)
        tokens = [self._idx_to_token[idx] for idx in indices]
        return tokens[0] if single else tokens
