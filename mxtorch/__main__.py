"""`python -m mxtorch ...` is the `mxtorch` command."""
import sys

from .cli import main

sys.exit(main())
