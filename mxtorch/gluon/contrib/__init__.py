"""mx.gluon.contrib: experimental layers, recurrent cells and the training Estimator."""
from . import rnn
