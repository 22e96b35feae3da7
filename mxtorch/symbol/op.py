"""mx.sym.op: one generated function per registered operator name and alias."""
