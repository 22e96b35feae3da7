"""mx.gluon.utils: splitting batches over devices, gradient clipping, file checks, downloads."""
import hashlib
import os
import uuid
import warnings

import numpy as np

from .. import ndarray
from ..ndarray.ndarray import NDArray
from ..symbol import Symbol


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """`num_slice` slices of `data` along `batch_axis` (a list, even for one slice)."""
    size = data.shape[batch_axis]
    if even_split and size % num_slice != 0:
        raise ValueError('data with shape %s cannot be evenly split into %d slices along axis '
                         '%d. Use a batch size that\'s multiple of %d or set even_split=False '
                         'to allow uneven partitioning of data.'
                         % (str(data.shape), num_slice, batch_axis, num_slice))
    step, extras = divmod(size, num_slice)
    bounds = np.cumsum([0] + [step + 1] * extras + [step] * (num_slice - extras))
    if num_slice == 1:
        return [data]
    if batch_axis == 0:
        return [data[int(lo):int(hi)] for lo, hi in zip(bounds[:-1], bounds[1:])]
    return [ndarray.slice_axis(data, axis=batch_axis, begin=int(lo), end=int(hi))
            for lo, hi in zip(bounds[:-1], bounds[1:])]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split `data` along `batch_axis` and load slice i onto ctx_list[i]."""
    if not isinstance(data, NDArray):
        data = ndarray.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [s.as_in_context(c) for s, c in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scale `arrays` in place so that their joint 2-norm is at most `max_norm`; returns the
    norm before scaling (a float with check_isfinite, else an NDArray of shape (1,))."""
    assert len(arrays) > 0
    ctx = arrays[0].context
    # norm works on every storage type (row_sparse gradients included)
    squares = [ndarray.square(ndarray.norm(a).reshape((-1,))).as_in_context(ctx)
               for a in arrays]
    total_norm = ndarray.sqrt(ndarray.add_n(*squares))
    if check_isfinite and not np.isfinite(total_norm.asscalar()):
        warnings.warn(UserWarning('nan or inf is detected. Clipping results will be undefined.'),
                      stacklevel=2)
    scale = max_norm / (total_norm + 1e-8)
    scale = ndarray.min(ndarray.concat(scale, ndarray.ones(1, ctx=ctx), dim=0))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context)
    return total_norm.asscalar() if check_isfinite else total_norm


def _indent(text, num_spaces):
    lines = text.split('\n')
    if len(lines) == 1:
        return text
    return '\n'.join([lines[0]] + [' ' * num_spaces + line for line in lines[1:]])


def _brief_print_list(lst, limit=7):
    """'a', 'b', ..., 'z' for long lists."""
    lst = list(lst)
    if len(lst) > limit:
        return _brief_print_list(lst[:limit // 2], limit) + ', ..., ' + \
            _brief_print_list(lst[-limit // 2:], limit)
    return ', '.join(["'%s'" % str(i) for i in lst])


def check_sha1(filename, sha1_hash):
    """Whether the SHA-1 of the file's content equals `sha1_hash` (hex)."""
    sha1 = hashlib.sha1()
    with open(filename, 'rb') as f:
        for chunk in iter(lambda: f.read(1048576), b''):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Atomically move src onto dst."""
    os.replace(src, dst)


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Download `url` to `path` (a file or a folder); returns the file name. A file already
    there (with the right SHA-1 when given) is not downloaded again."""
    if path is None:
        fname = url.split('/')[-1]
        assert fname, "Can't construct file-name from this URL. Please set the `path` option."
    else:
        path = os.path.expanduser(path)
        fname = os.path.join(path, url.split('/')[-1]) if os.path.isdir(path) else path
    assert retries >= 0, "Number of retries should be at least 0, currently it's %d" % retries
    if not verify_ssl:
        warnings.warn('Unverified HTTPS request is being made (verify_ssl=False). Adding '
                      'certificate verification is strongly advised.')
    if not overwrite and os.path.exists(fname) and (
            not sha1_hash or check_sha1(fname, sha1_hash)):
        return fname
    dirname = os.path.dirname(os.path.abspath(fname))
    os.makedirs(dirname, exist_ok=True)
    import requests
    while retries + 1 > 0:
        try:
            print('Downloading %s from %s...' % (fname, url))
            r = requests.get(url, stream=True, verify=verify_ssl)
            if r.status_code != 200:
                raise RuntimeError('Failed downloading url %s' % url)
            tmp = '%s.%s' % (fname, uuid.uuid4())
            with open(tmp, 'wb') as f:
                for chunk in r.iter_content(chunk_size=1024):
                    if chunk:
                        f.write(chunk)
            if not os.path.exists(fname) or (sha1_hash and not check_sha1(fname, sha1_hash)):
                replace_file(tmp, fname)
            else:
                os.remove(tmp)
                warnings.warn('File %s exists in file system so the downloaded file is '
                              'deleted' % fname)
            if sha1_hash and not check_sha1(fname, sha1_hash):
                raise UserWarning('File %s is downloaded but the content hash does not match.'
                                  ' The repo may be outdated or download may be incomplete. '
                                  'If the "repo_url" is overridden, consider switching to the '
                                  'default repo.' % fname)
            break
        except Exception as err:    # noqa: BLE001  (retried, then re-raised as MXNet does)
            retries -= 1
            if retries <= 0:
                raise err
            print('download failed due to %r, retrying, %d attempt%s left'
                  % (err, retries, 's' if retries > 1 else ''))
    return fname


def _get_repo_url():
    default_repo = 'https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/'
    repo_url = os.environ.get('MXNET_GLUON_REPO', default_repo)
    return repo_url if repo_url.endswith('/') else repo_url + '/'


def _get_repo_file_url(namespace, filename):
    return '{base_url}{namespace}/{filename}'.format(base_url=_get_repo_url(),
                                                     namespace=namespace, filename=filename)


def shape_is_known(shape):
    """Whether every dimension of `shape` is known (0 means unknown, as in MXNet's legacy
    shapes)."""
    if shape is None or len(shape) == 0:
        return False
    return all(d > 0 for d in shape)


# ---- nested inputs and outputs of hybridized blocks ---------------------------------------------
def _flatten(args, inout_str):
    """(flat list, format): NDArray/Symbol -> 0 (a Symbol of k>1 outputs -> k), None -> -1,
    lists nest."""
    if isinstance(args, NDArray):
        return [args], 0
    if isinstance(args, Symbol):
        length = len(args.list_outputs())
        return [args], length if length > 1 else 0
    if args is None:
        return [None], -1
    if not isinstance(args, (list, tuple)):
        raise ValueError('When hybridized, the input of HybridBlock %s must be (nested) list of '
                         'Symbol or NDArray, but got %s of type %s'
                         % (inout_str, str(args), str(type(args))))
    flat, fmts = [], []
    for item in args:
        arg, fmt = _flatten(item, inout_str)
        flat.extend(arg)
        fmts.append(fmt)
    return flat, fmts


def _regroup(args, fmt):
    """Inverse of _flatten: (structured value, the rest of args)."""
    if isinstance(fmt, int):
        if fmt < -1:
            raise ValueError('Unsupported encoded format %s.' % fmt)
        if fmt == 0:
            return args[0], args[1:]
        if fmt == -1:
            if args[0] is not None:
                raise ValueError('We do not support passing types that are not None when the '
                                 'initial HybridBlock has received NoneType and has been '
                                 'hybridized. Received arg = %s, fmt = %s.' % (args[0], fmt))
            return None, args[1:]
        return args[:fmt], args[fmt:]
    if not isinstance(args, (list, tuple)):
        raise ValueError('When hybridized, the output of HybridBlock must be (nested) list of '
                         'Symbol or NDArray, but got %s of type %s' % (args, type(args)))
    ret = []
    for f in fmt:
        res, args = _regroup(args, f)
        ret.append(res)
    return ret, args


class HookHandle:
    """Removes a hook it was returned for (`handle.detach()`, or as a context manager)."""

    def __init__(self):
        self._hooks_dict_ref = None
        self._id = None

    def attach(self, hooks_dict, hook):
        import weakref
        assert not self._hooks_dict_ref, 'The same handle cannot be attached twice.'
        self._id = id(hook)
        hooks_dict[self._id] = hook
        self._hooks_dict_ref = weakref.ref(hooks_dict)

    def detach(self):
        hooks_dict = self._hooks_dict_ref() if self._hooks_dict_ref else None
        if hooks_dict is not None and self._id in hooks_dict:
            del hooks_dict[self._id]

    def __getstate__(self):
        return (self._hooks_dict_ref(), self._id)

    def __setstate__(self, state):
        import weakref
        if state[0] is None:
            self._hooks_dict_ref = weakref.ref(dict())
        else:
            self._hooks_dict_ref = weakref.ref(state[0])
        self._id = state[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.detach()
