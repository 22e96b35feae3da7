"""mx.contrib: MXNet's experimental namespace.

`mx.contrib.nd` (`mx.contrib.ndarray`) and `mx.contrib.sym` (`mx.contrib.symbol`) are
mxtorch's `mx.nd.contrib` and `mx.sym.contrib`: the operators registered as `_contrib_<name>`,
under `<name>`. They are also importable as `mxtorch.contrib.ndarray` etc.
`mx.contrib.autograd` is MXNet's first autograd interface (train_section, grad_and_loss).
`mx.contrib.onnx` imports and exports ONNX models, `mx.contrib.tensorboard` logs metrics to
TensorBoard, `mx.contrib.torch.to_torch` makes a Symbol a torch.nn.Module.
`mx.contrib.io.DataLoaderIter` makes a Gluon DataLoader a DataIter; `mx.contrib.text` counts,
indexes (Vocabulary) and embeds tokens.
`mx.contrib.quantization` (`mx.contrib.quant`) makes int8 models from float32 ones.
"""
import sys

from . import autograd
from . import io
from . import text
from . import quantization
from . import quantization as quant
from . import onnx, tensorboard, torch  # noqa: F401 (optional packages imported on use)
from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol

nd = ndarray
sym = symbol

for _short, _module in (('ndarray', ndarray), ('nd', ndarray), ('symbol', symbol),
                        ('sym', symbol)):
    sys.modules.setdefault('%s.%s' % (__name__, _short), _module)
