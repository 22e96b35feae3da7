"""Dynamic loss scaling: start at 2**16, halve after a step whose gradients overflow (that
step's update is skipped), double after 2000 clean steps, never above 2**24."""
import logging

from ... import autograd
from ... import ndarray as nd


class LossScaler:
    def __init__(self):
        self._loss_scale = 2. ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2. ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self):
        return self._loss_scale

    def has_overflow(self, params):
        """Whether any gradient of `params` (Gluon Parameters) holds inf or NaN; moves the
        scale on for the next step."""
        grads = [g for p in params if p.grad_req != 'null' for g in p.list_grad()]
        finite = True
        with autograd.pause():
            for start in range(0, len(grads), 200):
                chunk = grads[start:start + 200]
                ok = nd.multi_all_finite(*chunk, num_arrays=len(chunk), init_output=True)
                finite = finite and bool(ok.asnumpy()[0])
        overflow = not finite
        self._loss_scale = self._next_loss_scale
        if overflow:
            self._next_loss_scale = self._loss_scale / 2.
            self._unskipped = 0
            logging.info('AMP: decreasing loss scale to %f', self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.)
            logging.info('AMP: increasing loss scale to %f', self._next_loss_scale)
        return overflow
