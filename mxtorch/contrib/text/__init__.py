"""mx.contrib.text: token counting (utils), token indexing (vocab.Vocabulary) and token
embeddings read from text files (embedding)."""
from . import _constants, embedding, utils, vocab  # noqa: F401
