"""The fork servers isolation.py's children come from: each a fresh interpreter that has
imported the grader and numpy once and never runs a student's code (`serve`), so a child starts
in milliseconds and inherits none of the grading process's state. One server per child running
at once (`_Pool`); abort_children kills them all (Ctrl-C)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Iterator

POLL = 0.05  # seconds between the parent's looks at which of a child's reports are written


def serve() -> None:
    """The fork server: for each request line (JSON: the arguments of _child) fork a child,
    answer {"pid"}, wait for it, answer {"exitcode"} (negative: the signal that ended it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import gc

    import numpy.ma  # noqa: F401  (what the checks import late, imported once here)

    from .isolation import _child

    gc.freeze()  # the children's collector leaves the server's objects (and their pages) alone
    requests, answers = sys.stdin.buffer, sys.stdout.fileno()
    for line in requests:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                _child(**request)
            finally:
                os._exit(70)  # _child ends in os._exit(0): here only if it could not start
        os.write(answers, (json.dumps({"pid": pid}) + "\n").encode())
        _, status = os.waitpid(pid, 0)
        os.write(answers, (json.dumps({"exitcode": os.waitstatus_to_exitcode(status)}) + "\n").encode())


class _Server:
    """The parent's handle on its fork server, started on first use and again if it dies."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.lock = threading.Lock()
        self.child: int | None = None  # the pid of the child running now

    def start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from minigrad.exercises.forkserver import serve; serve()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)  # select sees every line
        return self.proc

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def abort(self) -> None:
        """From another thread (Ctrl-C while `run` waits in a worker): kill the running child's
        group and the server; that `run` returns (None, False)."""
        if self.child is not None:
            _kill_group(self.child)
        proc = self.proc
        if proc is not None:
            proc.kill()

    def run(self, request: dict, timeout: float) -> tuple[int | None, bool]:
        """(exit code or None if unknown, timed out) of one child running the request's jobs:
        each job has `timeout` seconds from the end of the one before (its report appearing);
        the child's group is killed at the end."""
        reports = [job["report_path"] for job in request["jobs"]]
        with self.lock:
            proc = self.start()
            pid = None
            try:
                proc.stdin.write((json.dumps(request) + "\n").encode())
                proc.stdin.flush()
                pid = self.child = json.loads(proc.stdout.readline())["pid"]
                done, deadline, timed_out = 0, time.monotonic() + timeout, False
                while True:
                    ready, _, _ = select.select([proc.stdout], [], [], POLL)
                    if ready:
                        break
                    finished = sum(map(os.path.exists, reports))
                    if finished > done:  # the next job's time starts now
                        done, deadline = finished, time.monotonic() + timeout
                    elif time.monotonic() > deadline:
                        timed_out = True
                        _kill_group(pid)
                        break
                answer = proc.stdout.readline()
                _kill_group(pid)  # whatever the student's code left running
                self.child = None
                return json.loads(answer)["exitcode"], timed_out
            except BaseException as e:  # Ctrl-C, or the server died (the student's code killed it)
                if pid is not None:
                    _kill_group(pid)
                self.child = None
                self.stop()
                if isinstance(e, (OSError, ValueError, KeyError, TypeError)):
                    return None, False
                raise


class _Pool:
    """The fork servers: one per child running at once (grade_folder grades `jobs` students side
    by side), each started on first use and kept for the next grading."""

    def __init__(self) -> None:
        self.free: list[_Server] = []
        self.every: list[_Server] = []
        self.lock = threading.Lock()

    @contextlib.contextmanager
    def server(self) -> Iterator[_Server]:
        with self.lock:
            if not self.free:
                self.every.append(_Server())
                self.free.append(self.every[-1])
            server = self.free.pop()
        try:
            yield server
        finally:
            with self.lock:
                self.free.append(server)


_SERVERS = _Pool()
_ABORTED = threading.Event()  # set by abort_children: no child starts until allow_children()


def abort_children() -> None:
    """Kill the children grading now (from another thread: a Ctrl-C) and their fork servers; no
    further child starts until allow_children()."""
    _ABORTED.set()
    for server in list(_SERVERS.every):
        server.abort()


def allow_children() -> None:
    _ABORTED.clear()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # no group (yet, or any more)
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
