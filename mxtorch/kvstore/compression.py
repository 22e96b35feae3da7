"""MXNet's 2-bit gradient compression with error feedback.

Per key and per pushing device a residual r (initially 0) accumulates the gradient; each
element is sent as +t where r >= t, -t where r <= -t, else 0, and what was sent is subtracted
from r. So at most +-t per element leaves a device per push and nothing is lost over time.

On the wire (distributed stores) a message travels as 2-bit codes, four to a byte, the first
element in the byte's two high bits: 0b11 = +t, 0b10 = -t, 0b00 = 0 (MXNet's code values).
"""
import torch

from ..base import MXNetError
from ..ndarray.ndarray import _wrap


def quantize_2bit(residual, grad, threshold):
    """Add grad into residual (in place) and return the dequantised message {-t, 0, +t}."""
    residual.add_(grad)
    sent = (residual >= threshold).to(residual.dtype)
    sent.sub_((residual <= -threshold).to(residual.dtype)).mul_(threshold)
    residual.sub_(sent)
    return sent


_SHIFTS = torch.tensor([6, 4, 2, 0], dtype=torch.uint8)


def pack_2bit(message):
    """The uint8 codes of a message of {-t, 0, +t} values (any shape), four per byte, the last
    byte padded with zero codes."""
    flat = message.reshape(-1)
    codes = (flat > 0).to(torch.uint8).mul_(3).add_((flat < 0).to(torch.uint8).mul_(2))
    codes = torch.cat([codes, codes.new_zeros(-codes.numel() % 4)]).view(-1, 4)
    return (codes[:, 0] << 6) | (codes[:, 1] << 4) | (codes[:, 2] << 2) | codes[:, 3]


def unpack_2bit(packed):
    """The signs (int8 -1, 0, +1; the message divided by t) of all the codes in `packed`, four
    per byte, along its last axis."""
    codes = ((packed.unsqueeze(-1) >> _SHIFTS.to(packed.device)) & 3).flatten(-2)
    # 0b00 -> 0, 0b10 -> -1, 0b11 -> +1: (high bit) * (low bit ? +1 : -1)
    return (codes >> 1).to(torch.int8) * ((codes & 1).to(torch.int8) * 2 - 1)


class TwoBitCompression:
    def __init__(self, threshold):
        self.threshold = float(threshold)
        self._residuals = {}

    @classmethod
    def from_params(cls, params):
        if not isinstance(params, dict):
            raise TypeError('compression_params must be a dict such as {\'type\': \'2bit\', '
                            '\'threshold\': 0.5}, got %s' % type(params).__name__)
        if 'type' not in params:
            raise MXNetError("compression_params needs a 'type' (supported: '2bit'), got keys %s"
                             % sorted(map(str, params)))
        kind = params['type']
        if kind != '2bit':
            raise MXNetError("compression_params['type'] must be '2bit', got %r" % (kind,))
        given = params.get('threshold', 0.5)
        try:
            threshold = float(given)
        except (TypeError, ValueError):
            threshold = float('nan')
        if not threshold > 0:             # also refuses NaN and what is not a number
            raise MXNetError("compression_params['threshold'] must be a number > 0, got %r"
                             % (given,))
        return cls(threshold)

    def compress(self, key, device, array):
        """The dequantised message this device sends for key (updates its residual)."""
        residual = self._residuals.get((key, device))
        if residual is None or residual.shape != array._tensor.shape:
            residual = self._residuals[(key, device)] = torch.zeros_like(array._tensor)
        with torch.no_grad():
            return _wrap(quantize_2bit(residual, array._tensor, self.threshold), array.context)
