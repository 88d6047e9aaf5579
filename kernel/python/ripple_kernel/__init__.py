"""ripple's Python kernel: the process the Go side starts for each kernel,
and the execution engine it serves (kernel/PROTOCOL.md).

The package is imported through its own loader (loader.py), never from
sys.path.
"""
