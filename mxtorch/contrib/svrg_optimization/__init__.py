"""mx.contrib.svrg_optimization: Stochastic Variance Reduced Gradient training for Modules.

SVRGModule trains like Module but replaces each mini-batch gradient g(w) by
g(w) - g(w~) + mean g(w~), where w~ is a snapshot of the weights taken every `update_freq`
epochs and mean g(w~) the gradient over the whole data set at that snapshot.
"""
from . import svrg_module, svrg_optimizer
from .svrg_module import SVRGModule
from .svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer

__all__ = ['SVRGModule', 'svrg_module', 'svrg_optimizer']
