"""A stand-in for the Kernel object (ripple_kernel/kernel.py), for engine tests.

StubKernel offers the API the engine uses (root, user_code(),
emit_progress(), flush_output()). Progress events are round-tripped through
strict JSON (NaN refused) so a test fails if the engine emits something the
Go side could not decode. Interrupts can be injected deterministically:
``interrupt_at_region(n)`` raises KeyboardInterrupt on entering the n-th
user_code() region, ``interrupt_at_line(n)`` raises it at the n-th line event
of project code (mid-statement, through a trace function).
"""

import contextlib
import json
import signal
import sys


class StubKernel:
    def __init__(self, root):
        self.root = root
        self.events = []
        self.regions = 0
        self._region_countdown = None
        self._line_countdown = None
        self._inside = 0
        self._sigint_pending = False
        self._previous_handler = None

    def install_sigint(self):
        """Handle SIGINT like the kernel (ripple_kernel/signals.py): raise only inside user_code()."""
        self._sigint_pending = False
        self._previous_handler = signal.signal(signal.SIGINT, self._on_sigint)

    def uninstall_sigint(self):
        signal.signal(signal.SIGINT, self._previous_handler)

    def _on_sigint(self, signum, frame):
        if self._inside:
            raise KeyboardInterrupt
        self._sigint_pending = True

    stop_after = None  # stop_requested() is true after this many more statements ran (tests)

    def stop_requested(self):
        if self.stop_after is None:
            return False
        self.stop_after -= 1
        return self.stop_after < 0

    def emit_progress(self, obj):
        self.events.append(json.loads(json.dumps(obj, allow_nan=False)))

    def flush_output(self):
        sys.stdout.flush()

    def set_expression(self, expression_id):
        self.expression = expression_id

    def interrupt_at_region(self, n):
        self._region_countdown = n

    def interrupt_at_line(self, n):
        self._line_countdown = n

    def clear_interrupts(self):
        self._region_countdown = None
        self._line_countdown = None

    @contextlib.contextmanager
    def user_code(self):
        self.regions += 1
        if self._region_countdown is not None:
            self._region_countdown -= 1
            if self._region_countdown <= 0:
                self._region_countdown = None
                raise KeyboardInterrupt
        if self._sigint_pending:
            self._sigint_pending = False
            raise KeyboardInterrupt
        tracing = self._line_countdown is not None and self._inside == 0
        if tracing:
            sys.settrace(self._trace)
        self._inside += 1
        try:
            yield
        finally:
            self._inside -= 1
            if tracing:
                sys.settrace(None)

    def _trace(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if not filename.startswith(self.root):
            return None
        return self._line

    def _line(self, frame, event, arg):
        if event == "line" and self._line_countdown is not None:
            self._line_countdown -= 1
            if self._line_countdown <= 0:
                self._line_countdown = None
                raise KeyboardInterrupt
        return self._line
