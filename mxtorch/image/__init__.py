"""mx.image (also mx.img): image decoding, augmenters and image iterators."""
from . import image
from .image import *  # noqa: F401,F403
from . import detection
from . import detection as det
from .detection import *  # noqa: F401,F403
