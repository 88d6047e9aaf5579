"""ripple's Python kernel: the process the Go side starts for each kernel,
and the execution engine it serves (kernel/PROTOCOL.md).

The package is imported through its own loader (loader.py), never from
sys.path.

Where a kernel starts: kernel/kernel.go's bootstrap runs loader.py's text,
then main.main(["kernel", PORT]) (main.py: the start-up phases), which
builds the one Kernel object (kernel.py) and serves requests. The process
side, by concept:

- main: start-up, as named phases; also the static readers (labels,
  affected) kernel/labels.go runs with the same bootstrap;
- kernel: the Kernel object, owner of the process's state, its request loop
  and the API the engine is given (api.KernelAPI);
- wire: frames, JSON payloads, the result cap, exceptions as the Go side
  reads them;
- capture: the connection's writer and fd-level output capture, with its
  pump thread;
- signals: the request state, SIGINT/SIGTERM, user-code regions, the
  nudger;
- group: the process group and its sentinel;
- api: the KernelAPI Protocol and the WireObject alias;
- pytest_plugin (with pytest_split, pytest_report, pytest_unittest),
  watchfn (with hotpatch), rewrite_cache: the kernel method "pytest".
"""
