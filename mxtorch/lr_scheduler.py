"""Learning-rate schedules (`mx.lr_scheduler`).

A scheduler is called with the optimizer's update count (1 for the first update) and returns the
learning rate to use. Schedulers are stateful: the step schedules lower `base_lr` in place as
updates go by, so a scheduler should drive one optimizer only. Attribute names are MXNet's, so a
scheduler pickled inside an optimizer reads back in either library.
"""
import logging
import math

__all__ = ['LRScheduler', 'FactorScheduler', 'MultiFactorScheduler', 'PolyScheduler',
           'CosineScheduler']


def _check_int(name, value, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError('%s must be an int >= %d, got %r' % (name, minimum, value))
    if value < minimum:
        raise ValueError('%s must be an int >= %d, got %d' % (name, minimum, value))


class LRScheduler:
    """Base scheduler: an optional warmup, then a constant `base_lr`.

    warmup_mode 'linear' ramps from `warmup_begin_lr` to `base_lr` over `warmup_steps` updates;
    'constant' stays at `warmup_begin_lr` until the warmup is over.
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode='linear'):
        self.base_lr = base_lr
        _check_int('warmup_steps', warmup_steps, 0)
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError('Base lr has to be higher than warmup_begin_lr, got base_lr=%r and '
                             'warmup_begin_lr=%r' % (base_lr, warmup_begin_lr))
        if warmup_mode not in ('linear', 'constant'):
            raise ValueError("Supports only linear and constant modes of warmup: warmup_mode must "
                             "be 'linear' or 'constant', got %r" % (warmup_mode,))
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        if num_update >= self.warmup_steps:
            raise ValueError('update %d is past the %d warmup steps'
                             % (num_update, self.warmup_steps))
        if self.warmup_mode == 'constant':
            return self.warmup_begin_lr
        ramp = (self.warmup_final_lr - self.warmup_begin_lr) * float(num_update) / self.warmup_steps
        return self.warmup_begin_lr + ramp

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        return self.base_lr


class FactorScheduler(LRScheduler):
    """Multiply the rate by `factor` every `step` updates, never going below `stop_factor_lr`.

    lr = base_lr * factor ** floor((num_update - 1) / step) for num_update >= 1.
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError('Schedule step must be greater or equal than 1 round, got step=%r'
                             % (step,))
        if factor > 1.0:
            raise ValueError('Factor must be no more than 1 to make lr reduce, got factor=%r'
                             % (factor,))
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info('Update[%d]: now learning rate arrived at %0.5e, will not '
                             'change in the future', num_update, self.base_lr)
            else:
                logging.info('Update[%d]: Change learning rate to %0.5e', num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by `factor` once the update count passes each entry of `step`."""

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, (list, tuple)) or not step:
            raise ValueError('step must be a non-empty list of increasing ints, got %r' % (step,))
        for i, boundary in enumerate(step):
            if i and boundary <= step[i - 1]:
                raise ValueError('Schedule step must be an increasing integer list, got %r'
                                 % (step,))
            if boundary < 1:
                raise ValueError('Schedule step must be greater or equal than 1 round, got %r'
                                 % (step,))
        if factor > 1.0:
            raise ValueError('Factor must be no more than 1 to make lr reduce, got factor=%r'
                             % (factor,))
        self.step = list(step)
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info('Update[%d]: Change learning rate to %0.5e', num_update, self.base_lr)
        return self.base_lr


class PolyScheduler(LRScheduler):
    """Polynomial decay from base_lr to final_lr over max_update updates (after the warmup):

        lr = final_lr + (base_lr - final_lr) * (1 - (n - warmup) / (max_update - warmup)) ** pwr

    The rate keeps its last value after max_update. `base_lr_orig` is the decay's start, so
    an optimizer's learning_rate overriding `base_lr` does not move it (as in MXNet).
    """

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_int('max_update', max_update, 1)
        self.power = pwr
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            remaining = 1 - float(num_update - self.warmup_steps) / float(self.max_steps)
            span = self.base_lr_orig - self.final_lr
            self.base_lr = self.final_lr + span * remaining ** self.power
        return self.base_lr


class CosineScheduler(LRScheduler):
    """Cosine decay from base_lr to final_lr over max_update updates (after the warmup):

        lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * progress)) / 2,
        progress = (n - warmup) / (max_update - warmup)

    The rate keeps its last value after max_update; `base_lr_orig` as in PolyScheduler.
    """

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode='linear'):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_int('max_update', max_update, 1)
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            angle = math.pi * (num_update - self.warmup_steps) / self.max_steps
            span = self.base_lr_orig - self.final_lr
            self.base_lr = self.final_lr + span * (1 + math.cos(angle)) / 2
        return self.base_lr
