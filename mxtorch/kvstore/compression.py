"""MXNet's 2-bit gradient compression with error feedback.

Per key and per pushing device a residual r (initially 0) accumulates the gradient; each
element is sent as +t where r >= t, -t where r <= -t, else 0, and what was sent is subtracted
from r. So at most +-t per element leaves a device per push and nothing is lost over time.
"""
import torch

from ..base import MXNetError
from ..ndarray.ndarray import _wrap


def quantize_2bit(residual, grad, threshold):
    """Add grad into residual (in place) and return the dequantised message {-t, 0, +t}."""
    residual.add_(grad)
    sent = torch.where(residual >= threshold, threshold,
                       torch.where(residual <= -threshold, -threshold, 0.0)).to(residual.dtype)
    residual.sub_(sent)
    return sent


class TwoBitCompression:
    def __init__(self, threshold):
        self.threshold = float(threshold)
        self._residuals = {}

    @classmethod
    def from_params(cls, params):
        if not isinstance(params, dict):
            raise TypeError('compression_params must be a dict, got %s' % type(params).__name__)
        kind = params.get('type')
        if kind != '2bit':
            raise MXNetError("Unknown gradient compression type %r; supported: '2bit'" % (kind,))
        threshold = float(params.get('threshold', 0.5))
        if threshold <= 0:
            raise MXNetError('2bit compression needs threshold > 0, got %s' % threshold)
        return cls(threshold)

    def compress(self, key, device, array):
        """The dequantised message this device sends for key (updates its residual)."""
        residual = self._residuals.get((key, device))
        if residual is None or residual.shape != array._tensor.shape:
            residual = self._residuals[(key, device)] = torch.zeros_like(array._tensor)
        with torch.no_grad():
            return _wrap(quantize_2bit(residual, array._tensor, self.threshold), array.context)
