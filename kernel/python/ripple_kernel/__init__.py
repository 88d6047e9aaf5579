"""ripple's Python kernel: the process the Go side starts for each kernel,
and the execution engine it serves (kernel/PROTOCOL.md).

The package is imported through its own loader (loader.py), never from
sys.path: user code does not see it.

Where a kernel starts: kernel/kernel.go's bootstrap runs loader.py's text,
then main.main(["kernel", PORT]) (main.py: the start-up phases), which
builds the one Kernel object (kernel.py) and serves requests.

Where a run starts: the engine's ``execute`` request (engine.Engine.execute)
enters the stack (calls.py) and runs each frame with runner.Runner.run; a
frame's pass (runner.FramePass) asks rerun.py which statements run again
(the caching invariant is written down there) and runs each one with
statement.StatementRunner.

The modules, by concept.

The process:
- main: start-up, as named phases; also the static readers (labels,
  affected) that kernel/labels.go runs with the same bootstrap;
- kernel: the Kernel object, owner of the process's state, its request
  loop and the API the engine is given;
- api: that API as a Protocol (KernelAPI) and the WireObject alias;
- wire: frames, JSON payloads, the result cap, exceptions as the Go side
  reads them;
- capture: the connection's writer and fd-level output capture, with its
  pump thread;
- signals: the request state, SIGINT/SIGTERM, user-code regions, the
  nudger;
- group: the process group and its sentinel;
- loader: the one loader of this package, with its code cache;
- complete: the transport methods complete and inspect (jedi, else
  rlcompleter), imported on their first call.

The engine (requests compile, execute, dropContext, status):
- engine: the Engine, its request handlers, register(api) and detach();
- request: the requests' params, checked, as dataclasses;
- calls: entering a stack item (the function a frame runs, its arguments,
  LocalCall);
- display: ripple.display, IPython's display() and the matplotlib backend's
  finder; mpl_backend: that backend;
- values: previews, type names, messages, diagnostics;
- visualize: visualizations of a statement's value;
- journal: the value journal (values kept on disk across kernels), with
  journalwriter (its writer thread);
- overwritten: values a later statement rebinds, let go of as Python does
  (into the journal) and read back when an edit needs them.

Project modules:
- modules: the module table (sources, loading, the import graph);
- records: one module's record and its states;
- importer: the project modules' finder and loader;
- versions: global versions and module hashes;
- lazydefs: long functions compiled on their first call;
- loadtimer: the compile timeout;
- text: parsed sources, code-point positions, incremental re-parsing.

Plans and runs:
- analysis: what each statement uses, defines and mutates;
- instrument: compiling statements so that they report their values;
- nested: the inner values of compound statements (their nested
  statements' last values and counts, recorded without calls);
- labelling: the label numbering that makes expression ids (once);
- labels, affected: static readers of a module's ids and of what an edit
  invalidates, run in short processes of their own;
- plan, scriptplan: the static view of a function body or a script;
- frame: a frame's cache and state (dataclasses: a reset is one
  assignment);
- rerun: which statements run again (the caching invariant);
- runner: one frame's run; statement: one statement's;
- notebook: get_ipython() for notebooks run as scripts and for ripple's
  Jupyter kernels (jupyter_boot.py): IPython magics and !shell lines on
  one IPython shell, bound to the caller's namespace;
- jupyter_shell, jupyter_comm: a Jupyter kernel's IPython variables (In,
  Out, _), user_expressions and comms (modes of jupyterCell);
- mutation: mutation through calls and the mutation log;
- observe: whether a statement's calls changed the objects they were given
  (their state before and after it ran);
- modstate: module globals a frame rebinds through calls;
- objects: run-time facts about user values the rules rely on.

pytest (the kernel method "pytest", ``ripple run --tests``):
- pytest_plugin (with pytest_split, pytest_report, pytest_unittest);
- pytest_console: each report rendered as pytest's terminal reporter would;
- watchfn (with hotpatch): --watch at function granularity;
- rewrite_cache: pytest's assertion rewriting kept across kernels.

Conventions, checked in CI (kernel/python/mypy.ini, pyflakes3):
- every function is annotated; ``from __future__ import annotations``
  first, since the kernel runs on Python 3.9+ (no ``X | Y`` evaluated at
  run time);
- ``Any`` only at the wire (api.WireObject: JSON objects from and to the
  Go side) and in objects.UserValue, the user's values in hot code that
  dispatches on a value's exact type, where ``object`` cannot be narrowed;
- one owner per piece of state: the Kernel object for the process, the
  Engine for the engine, the module table for project modules, a Frame for
  its cache; no module global is reassigned from a function;
- sizes a reader can hold: no module over ~700 lines, no class over ~500,
  no function over ~80 (``go run ./bench/sizes`` reports them).
"""
