"""Text utilities: counting tokens in a string."""
import collections
import re

__all__ = ['count_tokens_from_str']


def count_tokens_from_str(source_str, token_delim=' ', seq_delim='\n', to_lower=False,
                          counter_to_update=None):
    """Count the tokens of `source_str`, split at the regular expressions `token_delim` and
    `seq_delim` (empty tokens dropped). Returns a collections.Counter: `counter_to_update`,
    updated, when given."""
    tokens = [t for t in re.split(token_delim + '|' + seq_delim, source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
