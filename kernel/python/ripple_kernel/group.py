"""The kernel's process group: nothing user code starts outlives the kernel.

The kernel runs in a process group of its own; its tree also carries a tag
in every process's environment (kernel/proctree.go), which survives
setsid() and orphaning. At exit the kernel kills what is left
(ProcessGroup.kill_members); the sentinel, a shell that waits on the death
pipe, kills the group when the Go server is gone even if the kernel cannot.
"""

from __future__ import annotations

import os
import signal
from typing import Callable, List, Mapping, Optional

from .signals import State

# The kernel's tag (kernel/proctree.go): every process of its tree has it in
# its environment, also after setsid() or when orphaned.
TAG_ENV = "RIPPLE_KERNEL_TAG"


class ProcessGroup:
    """The kernel's process group and its sentinel."""

    def __init__(self, state: State, log: Callable[[str], None]) -> None:
        self.state = state
        self.log = log
        self.tag = os.environ.get(TAG_ENV, "")
        self.sentinel = 0  # pid of the sentinel (spawn_sentinel), 0 if none

    def spawn_sentinel(self, fd: int) -> None:
        """Start the sentinel: a shell in the kernel's process group that
        waits on the death pipe (fd, whose write end only the Go server
        holds) and SIGKILLs the whole group when the server is gone. It is
        the line that holds when Linux's parent-death signal kills this
        kernel before it can kill its children, or when the kernel is stuck
        in C code holding the GIL. It ignores SIGINT: interrupts address the
        whole group."""
        script = "trap '' INT; read _ <&%d; " % fd
        env: Mapping[str, str] = os.environ
        if self.tag:
            # First every process of the kernel's tree that left the group
            # (setsid) or was orphaned: they carry the kernel's tag (kernel/
            # proctree.go). The sentinel and its grep do not.
            script += (
                "for _ in 1 2 3 4 5 6 7 8; do set -- $(grep -lzx '%s=%s' /proc/[0-9]*/environ 2>/dev/null); "
                "[ $# -eq 0 ] && break; for f; do p=${f#/proc/}; kill -9 ${p%%/environ} 2>/dev/null; done; done; "
                % (TAG_ENV, self.tag)
            )
            env = {k: v for k, v in os.environ.items() if k != TAG_ENV}
        script += "kill -9 0"
        try:
            self.sentinel = os.posix_spawn("/bin/sh", ["sh", "-c", script], env)
        except OSError as e:
            self.log("cannot start the sentinel: %s" % e)
        finally:
            os.close(fd)  # user code's children have no business with it

    def kill_members(self) -> None:
        """SIGKILL every other process of the kernel's process group
        (children started by user code), so nothing outlives the kernel. The
        sentinel goes last: when the server dies, Linux's parent-death
        signal may kill this kernel midway through, and the sentinel is then
        the one left to kill the rest of the group."""
        if self.state.forked:
            return  # a forked child exiting is not the kernel exiting
        me = os.getpid()
        try:
            if os.getpgrp() != me:
                return  # not our group: leave it alone
        except OSError:
            return
        names: Optional[List[str]]
        try:
            names = os.listdir("/proc")
        except OSError:
            names = None
        if names is None:
            # No /proc: signal the whole group, this process included.
            try:
                os.killpg(me, signal.SIGKILL)
            except OSError:
                pass
            return
        try:
            for _ in range(2):  # a second pass catches children forked meanwhile
                if not self._kill_pass(names, me):
                    break  # no member left that could have forked another
                try:
                    names = os.listdir("/proc")
                except OSError:
                    break
        finally:
            if self.sentinel:
                try:
                    os.kill(self.sentinel, signal.SIGKILL)
                except OSError:
                    pass

    def _kill_pass(self, names: List[str], me: int) -> bool:
        """SIGKILL the processes of group me among /proc's names, and those
        carrying the kernel's tag (setsid() children, orphans), but this one
        and the sentinel; returns whether there were any."""
        found = False
        needle = ("%s=%s" % (TAG_ENV, self.tag)).encode() if self.tag else None
        for name in names:
            if not name.isdigit():
                continue
            pid = int(name)
            if pid == me or pid == self.sentinel:
                continue
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    stat = f.read()
                # pid (comm) state ppid pgrp ...; comm may hold spaces.
                fields = stat[stat.rindex(b")") + 2:].split()
                if int(fields[2]) == me:
                    found = True
                    os.kill(pid, signal.SIGKILL)
                    continue
            except (OSError, ValueError, IndexError):
                continue
            if needle is not None:
                try:
                    with open("/proc/%s/environ" % name, "rb") as f:
                        tagged = needle in f.read().split(b"\0")
                    if tagged:
                        found = True
                        os.kill(pid, signal.SIGKILL)
                except OSError:
                    continue
        return found
