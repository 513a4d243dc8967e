"""Grading a student's file in a child process of its own, with a time and a memory limit.

    report = grade_in_child("softmax_backward", "alice/softmax_backward.py", Limits(timeout=10))

The child is forked from a small server process (`serve`: a fresh interpreter that has imported
the grader and numpy once and never runs a student's code), so it inherits none of the grading
process's state and starts in milliseconds, not the 0.4 s of a new interpreter. It puts itself in a
process group of its own, limits its address space (RLIMIT_AS), sends what the student's code
prints to a file, grades, and writes the Report as JSON to a second file that the parent reads
only after the child has ended. A child that runs past the timeout is killed with its whole
group; one that crashes, exits, or raises SystemExit or KeyboardInterrupt before writing its
report, or runs out of memory, gives a failed Report (`Report.stopped` says why) that scores 0.

Not yet guaranteed: the checks run inside the child, next to the student's code, so code that
patches the grader or numpy there can still forge its own verdict (the next step: the child
computes only the student's outputs, and the parent decides the verdict).
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass

from minigrad.serialization import mapped_bytes

from .catalogue import get_task
from .grader import CheckResult, Report, where_raised

# The defaults, measured on 2 cores: grading every task's reference file (tests/exercises/
# correct/) takes at most 0.06 s a task, and the slowest --train run 10 s (softmax_backward);
# a grading process peaks at 224 MB of address space (VmPeak), --train included.
DEFAULT_TIMEOUT = 60.0  # seconds: 6x the slowest --train run
DEFAULT_MEMORY_MB = 2048  # beyond the fork's own address space; 9x a whole grading's peak
OUTPUT_LIMIT = 2000  # characters of the student's output kept in the report
OUTPUT_FILE_LIMIT = 16 * 2**20  # bytes the child may print before it is stopped (RLIMIT_FSIZE)
POLL = 0.05  # seconds between the parent's looks at which of a child's reports are written


@dataclass(frozen=True)
class Limits:
    """A file's wall-clock limit (seconds), and the address space (MiB) a child may add to what
    it starts with."""

    timeout: float = DEFAULT_TIMEOUT
    memory_mb: int = DEFAULT_MEMORY_MB

    def memory_text(self) -> str:
        mb = self.memory_mb
        return f"{mb / 1024:g} GiB" if mb % 1024 == 0 else f"{mb} MiB"


DEFAULT_LIMITS = Limits()


def parse_memory(text: str) -> int:
    """`--memory`: MiB, as a number (2048) or with a unit (512M, 2G)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([MmGg]?)[iI]?[Bb]?\s*", text)
    if m is None or float(m.group(1)) <= 0:
        raise ValueError(f"--memory {text!r}: give MiB (2048) or a size with a unit (512M, 2G)")
    return int(float(m.group(1)) * (1024 if m.group(2).lower() == "g" else 1))


def parse_timeout(text: str) -> float:
    """`--timeout`: seconds, more than 0."""
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise ValueError(f"--timeout {text!r}: give the seconds a file may run, e.g. 60")
    return seconds


# ----------------------------------------------------------------------------- the child


def _child(jobs: list[dict], memory: int) -> None:
    """Runs in the child: limits, then for each job (task, path, train, report_path, output_path)
    in turn, the student's output to the job's file, grade, the report as JSON. The jobs are
    one student's files; a job's report exists only once complete (a rename), so the parent
    knows which job a child that ended early was running."""
    os.setpgid(0, 0)  # a group of its own: the parent kills whatever the student starts, too
    signal.signal(signal.SIGINT, signal.default_int_handler)  # (the server ignores Ctrl-C)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the server's request pipe: not the student's to read
    os.close(devnull)
    import resource  # POSIX only, as os.fork: grade_in_child refuses other systems first

    # `memory` is what grading may add to the address space the fork starts with (numpy's and
    # BLAS's buffers, which grow with the machine's cores), so a limit means the same anywhere
    limit = mapped_bytes() + memory
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_FSIZE, (OUTPUT_FILE_LIMIT, OUTPUT_FILE_LIMIT))
    sys.stdin = open(os.devnull)
    from .grader import grade

    for job in jobs:
        fd = os.open(job["output_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # one stream: print order
        result: dict = {}
        out_of_memory = False
        try:
            result = {"report": asdict(grade(job["task"], job["path"], train=job["train"]))}
        except MemoryError:
            out_of_memory = True  # (the traceback, and the memory it holds, go with this block)
        except BaseException as e:  # SystemExit, KeyboardInterrupt: the code ended the run
            where = where_raised(e, job["path"])
            result = {"raised": f"{type(e).__name__}({', '.join(map(repr, e.args))})"
                                + (f" ({where})" if where else "")}
        if out_of_memory:
            result = {"out_of_memory": True}
        sys.stdout.flush()
        with open(job["report_path"] + ".part", "w") as f:
            json.dump(result, f)
        os.replace(job["report_path"] + ".part", job["report_path"])
    os._exit(0)  # no atexit handler or finalizer of the student's runs after the reports


# ----------------------------------------------------------------------------- the server


def serve() -> None:
    """The fork server: for each request line (JSON: the arguments of _child) fork a child,
    answer {"pid"}, wait for it, answer {"exitcode"} (negative: the signal that ended it)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    import gc

    import numpy.ma  # noqa: F401  (what the checks import late, imported once here)

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

    def start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "from minigrad.exercises.isolation import serve; serve()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)  # select sees every line
        return self.proc

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

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
                pid = json.loads(proc.stdout.readline())["pid"]
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
                return json.loads(answer)["exitcode"], timed_out
            except BaseException as e:  # Ctrl-C, or the server died (the student's code killed it)
                if pid is not None:
                    _kill_group(pid)
                self.stop()
                if isinstance(e, (OSError, ValueError, KeyError, TypeError)):
                    return None, False
                raise


_SERVER = _Server()


# ----------------------------------------------------------------------------- the parent


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # no group (yet, or any more)
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _read_output(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(4 * OUTPUT_LIMIT + 4)
            more = os.fstat(f.fileno()).st_size
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    if len(text) > OUTPUT_LIMIT or more > len(data):
        text = text[:OUTPUT_LIMIT] + f"\n... (cut: {more:,} bytes printed in all)"
    return text


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _report_from(data: dict, task: str, source: str) -> Report:
    """The child's Report, rebuilt; a malformed one raises (KeyError, TypeError, ValueError)."""
    d = dict(data)
    checks = [CheckResult(**c) for c in d.pop("checks")]
    report = Report(**d, checks=checks)
    if report.task != task or not all(isinstance(c.passed, bool) for c in checks):
        raise ValueError("not this task's report")
    report.source, report.stopped = source, ""
    return report


def _why(exitcode: int | None, timed_out: bool, result: dict | None, limits: Limits) -> str:
    if timed_out:
        return (f"stopped after {limits.timeout:g} s: the code was still running (an endless loop? "
                f"every task's reference takes under a second; --timeout changes the limit)")
    if result is not None and result.get("out_of_memory"):
        return f"ran out of memory (limit {limits.memory_text()}; --memory changes it)"
    if result is not None and "raised" in result:
        return f"the code raised {result['raised']}, which ends the run: no check could finish"
    if exitcode is None:
        return "the grading process was killed (by the code?) before the report was complete"
    if exitcode < 0:
        name = _signal_name(-exitcode)
        what = {"SIGSEGV": " (a segmentation fault)", "SIGXFSZ": f" (it printed more than "
                f"{OUTPUT_FILE_LIMIT // 2**20} MB)", "SIGKILL": " (killed from outside, perhaps for memory)"}
        return f"the process crashed: {name}{what.get(name, '')}, before its report was complete"
    return (f"the process ended without a report (exit code {exitcode}): the code exited "
            "(os._exit, sys.exit in a thread, ...) before grading finished")


def grade_in_child(task: str, path: str, train: bool = False, limits: Limits | None = None) -> Report:
    """grader.grade(task, path, train) in a child process of its own; never raises for the
    student's code (FileNotFoundError for a missing file, KeyboardInterrupt passes through after
    the child is killed). The student's output is in `report.output`."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no file {path}: run `minigrad exercise start {get_task(task).name}` to "
                                "write the stub")
    return grade_files_in_child([(task, path)], train, limits)[0]


def grade_files_in_child(files: list[tuple[str, str]], train: bool = False,
                         limits: Limits | None = None) -> list[Report]:
    """One student's files [(task, path)] graded in a child process of their own, one after the
    other, each within `limits.timeout` (the memory limit is the child's): a report per file, in
    order. A file whose run ends the child (a timeout, a crash, an exit, out of memory) gets a
    failed Report saying why, and the files after it go on in a new child. One child per
    student, not per file: a fork costs a grading several times its own time (measured on 2
    cores: 4.5 ms a file in a child of its own, against 1.7 ms warm), and one student's files
    can harm only that student's grades."""
    limits = limits or DEFAULT_LIMITS
    if os.name != "posix":
        raise ValueError("grading in a child process needs fork and resource limits (Linux, macOS): on "
                         "this system grade in the notebook with minigrad.exercises.check, without limits")
    files = [(get_task(task).name, path) for task, path in files]
    reports: list[Report] = []
    with tempfile.TemporaryDirectory(prefix="minigrad-grade-") as tmp:
        while len(reports) < len(files):
            first = len(reports)
            jobs = [{"task": task, "path": os.path.abspath(path), "train": train,
                     "report_path": os.path.join(tmp, f"report-{i}.json"),
                     "output_path": os.path.join(tmp, f"output-{i}.txt")}
                    for i, (task, path) in enumerate(files[first:], start=first)]
            exitcode, timed_out = _SERVER.run({"jobs": jobs, "memory": limits.memory_mb * 2**20},
                                              limits.timeout)
            for job, (task, path) in zip(jobs, files[first:]):
                result = _read_report(job["report_path"])
                output = _read_output(job["output_path"])
                if result is None:  # the job the child was running when it ended
                    why = _why(exitcode, timed_out, None, limits)
                    reports.append(Report(task, path, stopped=why, output=output))
                    break
                reports.append(_report_of(result, task, path, output, limits))
    return reports


def _read_report(path: str) -> dict | None:
    try:
        with open(path) as f:
            result = json.load(f)
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) else None


def _report_of(result: dict, task: str, path: str, output: str, limits: Limits) -> Report:
    """The Report of one job's complete result: the child's report, or why it has none."""
    if "report" in result:
        try:
            report = _report_from(result["report"], task, path)
            report.output = output
            return report
        except (KeyError, TypeError, ValueError, AttributeError):
            return Report(task, path, stopped="the grading process wrote a damaged report", output=output)
    return Report(task, path, stopped=_why(0, False, result, limits), output=output)
