"""mx.rnn: symbolic recurrent cells, sentence iterators and RNN checkpoints."""
from . import io, rnn, rnn_cell
from .io import BucketSentenceIter, encode_sentences
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, save_rnn_checkpoint
from .rnn_cell import (BaseConvRNNCell, BaseRNNCell, BidirectionalCell, ConvGRUCell,
                       ConvLSTMCell, ConvRNNCell, DropoutCell, FusedRNNCell, GRUCell, LSTMCell,
                       ModifierCell, RNNCell, RNNParams, ResidualCell, SequentialRNNCell,
                       ZoneoutCell, rnn_unroll)

__all__ = ['RNNParams', 'BaseRNNCell', 'RNNCell', 'LSTMCell', 'GRUCell', 'FusedRNNCell',
           'SequentialRNNCell', 'BidirectionalCell', 'DropoutCell', 'ModifierCell',
           'ZoneoutCell', 'ResidualCell', 'BaseConvRNNCell', 'ConvRNNCell', 'ConvLSTMCell',
           'ConvGRUCell', 'rnn_unroll', 'BucketSentenceIter', 'encode_sentences',
           'save_rnn_checkpoint', 'load_rnn_checkpoint', 'do_rnn_checkpoint']
