"""Shared by the model-zoo definitions: the default weight folder and pretrained loading."""
import os

from .... import base
from ....context import cpu

DEFAULT_ROOT = os.path.join(base.data_dir(), 'models')


def load_pretrained(net, name, pretrained, ctx, root):
    """Load model `name`'s published weights into `net` when `pretrained`."""
    if pretrained:
        from ..model_store import get_model_file
        net.load_parameters(get_model_file(name, root=root), ctx=ctx if ctx is not None
                            else cpu())
    return net
