"""mx.optimizer: optimizers, the registry behind `mx.optimizer.create`, and the Updater."""
from .optimizer import (Optimizer, register, create, SGD, ccSGD, LBSGD, NAG, Signum, FTML, LARS,
                        LAMB, DCASGD, SGLD, Adam, AdaGrad, RMSProp, AdaDelta, Ftrl, Adamax, Nadam, Test,
                        Updater, get_updater, NDabs)
from . import optimizer
from . import contrib

__all__ = ['Optimizer', 'register', 'create', 'SGD', 'ccSGD', 'LBSGD', 'NAG', 'Signum', 'FTML',
           'LARS', 'LAMB', 'DCASGD', 'SGLD', 'Adam', 'AdaGrad', 'RMSProp', 'AdaDelta', 'Ftrl', 'Adamax',
           'Nadam', 'Test', 'Updater', 'get_updater', 'NDabs']
