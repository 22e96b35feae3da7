"""mx.gluon.contrib: experimental layers, recurrent cells, samplers and the training
Estimator."""
from . import nn
from . import rnn
from . import cnn
from . import data
from . import estimator
