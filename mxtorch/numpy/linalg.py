"""mx.np.linalg: NumPy's linear algebra on torch.linalg (differentiable under mx.autograd)."""
import torch

from ..base import MXNetError
from .multiarray import wrap, _grad_scope


def _run(fn, *arrays, **kwargs):
    try:
        with _grad_scope():
            return fn(*[a._tensor for a in arrays], **kwargs)
    except RuntimeError as err:
        raise MXNetError('linalg: %s' % err) from None


def _one(fn):
    def func(a, *args, **kwargs):
        return wrap(_run(lambda t: fn(t, *args, **kwargs), a), a.context)
    func.__name__ = func.__qualname__ = fn.__name__
    return func


def norm(x, ord=None, axis=None, keepdims=False):  # pylint: disable=redefined-builtin
    t = x._tensor
    if axis is None and ord is None:
        with _grad_scope():
            result = torch.sqrt(torch.sum(t * t))
            if keepdims:
                result = result.reshape((1,) * t.dim())
        return wrap(result, x.context)
    return wrap(_run(lambda t: torch.linalg.norm(t, ord, axis, keepdims), x), x.context)


inv = _one(torch.linalg.inv)
pinv = _one(torch.linalg.pinv)
det = _one(torch.linalg.det)
cholesky = _one(torch.linalg.cholesky)
eigvals = _one(torch.linalg.eigvals)
eigvalsh = _one(torch.linalg.eigvalsh)
matrix_rank = _one(torch.linalg.matrix_rank)
matrix_power = _one(torch.linalg.matrix_power)
cond = _one(torch.linalg.cond)


def slogdet(a):
    sign, logdet = _run(torch.linalg.slogdet, a)
    return wrap(sign, a.context), wrap(logdet, a.context)


def svd(a):
    u, s, vh = _run(lambda t: torch.linalg.svd(t, full_matrices=False), a)
    return wrap(u, a.context), wrap(s, a.context), wrap(vh, a.context)


def qr(a, mode='reduced'):
    q, r = _run(lambda t: torch.linalg.qr(t, mode=mode), a)
    return wrap(q, a.context), wrap(r, a.context)


def eigh(a, UPLO='L'):  # pylint: disable=invalid-name
    w, v = _run(lambda t: torch.linalg.eigh(t, UPLO=UPLO), a)
    return wrap(w, a.context), wrap(v, a.context)


def eig(a):
    w, v = _run(torch.linalg.eig, a)
    return wrap(w, a.context), wrap(v, a.context)


def solve(a, b):
    return wrap(_run(torch.linalg.solve, a, b), a.context)


def lstsq(a, b, rcond='warn'):
    res = _run(lambda x, y: torch.linalg.lstsq(x, y), a, b)
    return (wrap(res.solution, a.context), wrap(res.residuals, a.context),
            int(res.rank) if res.rank.numel() else 0, wrap(res.singular_values, a.context))


def tensorinv(a, ind=2):
    return wrap(_run(lambda t: torch.linalg.tensorinv(t, ind), a), a.context)


def tensorsolve(a, b, axes=None):
    return wrap(_run(lambda x, y: torch.linalg.tensorsolve(x, y, axes), a, b), a.context)


def multi_dot(arrays):
    return wrap(_run(lambda *ts: torch.linalg.multi_dot(list(ts)), *arrays), arrays[0].context)
