"""Constants of the text datasets (gluon.contrib.data.text): the end-of-sentence token."""
from ....contrib.text._constants import EOS_TOKEN  # noqa: F401
