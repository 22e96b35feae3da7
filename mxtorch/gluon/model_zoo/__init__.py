"""mx.gluon.model_zoo: predefined networks (vision) and their pretrained weight files."""
from . import model_store
from . import vision
