"""Grading a student's file in a child process of its own, with a time and a memory limit.

    report = grade_in_child("softmax_backward", "alice/softmax_backward.py", Limits(timeout=10))

The child is forked from a small server process (forkserver.serve: a fresh interpreter that has
imported the grader and numpy once and never runs a student's code), so it inherits none of the
grading process's state and starts in milliseconds, not the 0.4 s of a new interpreter. It puts itself in a
process group of its own, limits its address space (RLIMIT_AS), sends what the student's code
prints to a file, and runs the checks in record mode (transcript.py): what the student's code
returned to each of them goes to a transcript file. The parent decides the verdict by replaying
the checks on that transcript, with its own inputs and references; nothing the child prints,
patches, exits with or registers reaches it. Before any of that the parent reads the file's text
(grader.read_submission): a syntax error, or the library's own op handed in, is decided there.

A child that runs past the timeout is killed with its whole group; one that crashes, exits, or
raises SystemExit or KeyboardInterrupt before its transcript is complete, or runs out of memory,
gives a failed Report (`Report.stopped` says why) that scores 0. In the child the grader's
references (minigrad.exercises.references) cannot be imported.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
from dataclasses import dataclass

from minigrad.serialization import mapped_bytes

from .catalogue import get_task
from .forkserver import _ABORTED, _SERVERS
from .grader import Report, read_submission, replay
from .transcript import Transcript, where_raised

# The defaults, measured on 2 cores: grading every task's reference file (tests/exercises/
# correct/) takes at most 0.06 s a task, and the slowest --train run 10 s (softmax_backward);
# a grading process peaks at 224 MB of address space (VmPeak), --train included.
DEFAULT_TIMEOUT = 60.0  # seconds: 6x the slowest --train run
DEFAULT_MEMORY_MB = 2048  # beyond the fork's own address space; 9x a whole grading's peak
OUTPUT_LIMIT = 2000  # characters of the student's output kept in the report
OUTPUT_FILE_LIMIT = 16 * 2**20  # bytes the child may print before it is stopped (RLIMIT_FSIZE)


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


# ----------------------------------------------------------------------------- the child


def _child(jobs: list[dict], memory: int) -> None:
    """Runs in the child: limits, then for each job (task, path, train, report_path, output_path)
    in turn, the student's output to the job's file, the checks recorded (the transcript next to
    the report), the outcome as JSON. The jobs are one student's files; a job's report exists
    only once complete (a rename), so the parent knows which job a child that ended early was
    running."""
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
    from minigrad.runtime import compiled

    from . import grader

    # The numpy kernels, always: loading numba and LLVM would take about 120 MB of the file's limit
    # (and seconds of its time), and the numpy forms are the readable references anyway.
    compiled.set_enabled(False)

    _seal_references()
    for job in jobs:
        fd = os.open(job["output_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # one stream: print order
        result: dict = {}
        out_of_memory = False
        try:
            recorded = grader.record(job["task"], job["path"], train=job["train"])
            recorded.save(job["report_path"] + ".transcript")
            result = {"recorded": True}
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


def _seal_references() -> None:
    """In the child, before a student's code runs: the grader's references cannot be imported
    (the checks keep the functions they already hold)."""
    from . import references  # noqa: F401  (loaded, so the checks' own names are bound)

    sys.modules["minigrad.exercises.references"] = None  # type: ignore[assignment]  (import fails)
    package = sys.modules["minigrad.exercises"]
    if "references" in vars(package):
        delattr(package, "references")


# ----------------------------------------------------------------------------- the parent


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
    order, decided here (verdicts) on what the child recorded (record_files_in_child)."""
    return verdicts(record_files_in_child(files, train, limits), train)


@dataclass
class Recorded:
    """One file's run in a child: the transcript of its checks and what it printed, or, when it
    has none, its Report already (decided from its text, or stopped)."""

    task: str
    path: str
    output: str = ""
    transcript: Transcript | None = None
    report: Report | None = None


def record_files_in_child(files: list[tuple[str, str]], train: bool = False,
                          limits: Limits | None = None) -> list[Recorded]:
    """The child's half of grade_files_in_child. A file whose run ends the child (a timeout, a
    crash, an exit, out of memory) gets a failed Report saying why, and the files after it go on
    in a new child. One child per student, not per file: a fork costs a grading several times
    its own time (measured on 2 cores: 4.5 ms a file in a child of its own, against 1.7 ms warm),
    and one student's files can harm only that student's grades."""
    limits = limits or DEFAULT_LIMITS
    if os.name != "posix":
        raise ValueError("grading in a child process needs fork and resource limits (Linux, macOS): on "
                         "this system grade in the notebook with minigrad.exercises.check, without limits")
    files = [(get_task(task).name, path) for task, path in files]
    # The files decided from their text alone (a syntax error, the library's op) never run.
    done = [Recorded(task, path, report=read_submission(get_task(task), path)) for task, path in files]
    pending = [i for i, r in enumerate(done) if r.report is None]
    with tempfile.TemporaryDirectory(prefix="minigrad-grade-") as tmp:
        while pending and not _ABORTED.is_set():
            jobs = [{"task": files[i][0], "path": os.path.abspath(files[i][1]), "train": train,
                     "report_path": os.path.join(tmp, f"report-{i}.json"),
                     "output_path": os.path.join(tmp, f"output-{i}.txt")} for i in pending]
            request = {"jobs": jobs, "memory": limits.memory_mb * 2**20}
            with _SERVERS.server() as server:
                exitcode, timed_out = server.run(request, limits.timeout)
            ran = 0
            for job, i in zip(jobs, pending):
                task, path = files[i]
                result = _read_report(job["report_path"])
                output = _read_output(job["output_path"])
                ran += 1
                if result is None:  # the job the child was running when it ended
                    why = _why(exitcode, timed_out, None, limits)
                    done[i] = Recorded(task, path, output, report=Report(task, path, stopped=why))
                    break
                done[i] = _recorded(result, job, task, path, output, limits)
            pending = pending[ran:]
    for i in pending:  # (grading was interrupted)
        done[i] = Recorded(*files[i], report=Report(*files[i], stopped="grading was interrupted"))
    return done


def verdicts(recorded: list[Recorded], train: bool = False) -> list[Report]:
    """The grading process's half: each file's checks replayed on its transcript (the student's
    code does not run here), or the Report it already has; the student's output attached."""
    reports = []
    for r in recorded:
        report = r.report
        if report is None:
            try:
                report = replay(r.task, r.path, r.transcript, train)
            except Exception as e:  # the transcript's first entry (the import) is not what it should be
                report = Report(r.task, r.path, stopped=f"the grading process wrote a transcript the checks "
                                                        f"could not read ({type(e).__name__})")
        report.output = r.output
        reports.append(report)
    return reports


def _read_report(path: str) -> dict | None:
    try:
        with open(path) as f:
            result = json.load(f)
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) else None


def _recorded(result: dict, job: dict, task: str, path: str, output: str, limits: Limits) -> Recorded:
    """One job's complete result: its transcript, or why there is none."""
    if result.get("recorded") is not True:
        return Recorded(task, path, output, report=Report(task, path, stopped=_why(0, False, result, limits)))
    try:
        transcript = Transcript.load(job["report_path"] + ".transcript", path)
    except Exception:  # (a damaged zip, a damaged JSON head, a foreign dtype: any of numpy's errors)
        return Recorded(task, path, output,
                        report=Report(task, path, stopped="the grading process wrote a damaged transcript"))
    return Recorded(task, path, output, transcript)
