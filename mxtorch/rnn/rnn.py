"""Checkpoints of models built from RNN cells: saved with every cell's weights unpacked into
per-gate arrays (so fused and unfused cells can load each other's files), packed on load."""
from ..model import load_checkpoint, save_checkpoint
from .rnn_cell import BaseRNNCell, rnn_unroll  # noqa: F401  (MXNet defines rnn_unroll here)


def _as_list(cells):
    return [cells] if isinstance(cells, BaseRNNCell) else list(cells)


def save_rnn_checkpoint(cells, prefix, epoch, symbol, arg_params, aux_params):
    """save_checkpoint with arg_params unpacked by each cell's unpack_weights."""
    for cell in _as_list(cells):
        arg_params = cell.unpack_weights(arg_params)
    save_checkpoint(prefix, epoch, symbol, arg_params, aux_params)


def load_rnn_checkpoint(cells, prefix, epoch):
    """(symbol, arg_params, aux_params) of load_checkpoint, arg_params packed by each cell."""
    sym, arg_params, aux_params = load_checkpoint(prefix, epoch)
    for cell in _as_list(cells):
        arg_params = cell.pack_weights(arg_params)
    return sym, arg_params, aux_params


def do_rnn_checkpoint(cells, prefix, period=1):
    """An epoch-end callback saving an RNN checkpoint every `period` epochs (numbered from 1)."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            save_rnn_checkpoint(cells, prefix, iter_no + 1, sym, arg, aux)
    return _callback
