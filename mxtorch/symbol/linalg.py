"""mx.sym.linalg: operators registered as `_linalg_<name>`, under `<name>`."""
