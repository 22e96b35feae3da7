"""mx.model: checkpoint files (`prefix-symbol.json`, `prefix-%04d.params`) and training helpers
shared by Module and the callbacks."""
import logging
from collections import namedtuple

from .ndarray import load as _load, save as _save
from .symbol import load as _load_symbol

BatchEndParam = namedtuple('BatchEndParams', ['epoch', 'nbatch', 'eval_metric', 'locals'])


def params_file(prefix, epoch):
    return '%s-%04d.params' % (prefix, epoch)


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write `prefix-symbol.json` and `prefix-%04d.params` (keys arg:<name> / aux:<name>).

    Each file is replaced atomically: a crash mid-save leaves the previous file intact.
    """
    if symbol is not None:
        symbol.save('%s-symbol.json' % prefix, remove_amp_cast=remove_amp_cast)
    save_dict = {('arg:%s' % k): v.as_in_context(_cpu()) for k, v in arg_params.items()}
    save_dict.update({('aux:%s' % k): v.as_in_context(_cpu()) for k, v in aux_params.items()})
    param_name = params_file(prefix, epoch)
    _save(param_name, save_dict)
    logging.info('Saved checkpoint to "%s"', param_name)


def _cpu():
    from .context import cpu
    return cpu()


def split_params(save_dict):
    """({name: array} for `arg:` keys, {name: array} for `aux:` keys); other keys are skipped."""
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, _, name = key.partition(':')
        if kind == 'arg':
            arg_params[name] = value
        elif kind == 'aux':
            aux_params[name] = value
    return arg_params, aux_params


def load_params(prefix, epoch):
    """(arg_params, aux_params) from `prefix-%04d.params`."""
    save_dict = _load(params_file(prefix, epoch))
    if not save_dict:
        logging.warning('Params file "%s" is empty', params_file(prefix, epoch))
        return {}, {}
    if isinstance(save_dict, list):
        raise ValueError('Params file "%s" holds a list, not named arrays'
                         % params_file(prefix, epoch))
    return split_params(save_dict)


def load_checkpoint(prefix, epoch):
    """(symbol, arg_params, aux_params) saved by save_checkpoint."""
    symbol = _load_symbol('%s-symbol.json' % prefix)
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
