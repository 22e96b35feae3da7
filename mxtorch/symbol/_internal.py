"""mx.sym._internal: generated functions of operators whose names start with '_'."""
