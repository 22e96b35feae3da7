"""mx.sym.contrib: operators registered as `_contrib_<name>`, under `<name>`."""
