"""mx.nd._internal: the generated functions of operators whose names start with '_'."""
