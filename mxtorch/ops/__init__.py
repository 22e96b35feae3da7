"""The operator registry and every operator family (importing this registers them all)."""
from .registry import OpDef, register, defop, get_op, find_op, all_ops, canonical_ops
# each module registers its operators on import
from . import elemwise, tensor, nn, loss, random  # noqa: F401
from . import conv, norm, activation, matrix, reduce, indexing  # noqa: F401
from . import rnn, custom  # noqa: F401
from . import linalg  # noqa: F401
from . import optimizer_ops  # noqa: F401
from . import legacy  # noqa: F401
from . import detection, contrib  # noqa: F401  (mx.contrib operators)
from . import resize, attention, roi_align, misc_contrib, batch_norm_variants, deformable  # noqa: F401,E501
from . import proposal, deformable_psroi  # noqa: F401  (detection outputs, Deformable R-FCN)
from . import control_flow  # noqa: F401  (_foreach, _while_loop, _cond over subgraphs)
from . import image  # noqa: F401  (mx.nd.image and the OpenCV operators of mx.image)
from . import quantization, quantized_nn, mkldnn_subgraph  # noqa: F401  (int8 ops, MKL-DNN fused)
from . import sparse  # noqa: F401  (storage-type rules over the ops above)
from . import graph  # noqa: F401  (DGL graph operators on csr graphs)
from . import hawkes  # noqa: F401  (contrib hawkesll)
from . import internal  # noqa: F401  (_CrossDeviceCopy, _Native, _NoGradient, ...)
