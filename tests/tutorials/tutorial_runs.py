"""Running the numbered tutorials: every one as a script and in a Jupyter kernel, each in its
own Python with an empty working directory, two at a time, on the machine's own code ("native");
and, where the CPU has AVX2, every one as a script once more on the AVX2 code ("avx2"). OpenBLAS
and numpy pick their kernels by the CPU, and the kernels round differently, so a trained figure
moves with the CPU: what the tutorials state about one must hold on both. `run_all` runs one
code path once per test session (the fixtures of conftest.py); the test modules read the runs."""

import functools
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = ROOT / "tutorials"
SCRIPTS = sorted(p.name for p in TUTORIALS.glob("[0-9][0-9]_*.py"))
RUN_NOTEBOOK = Path(__file__).resolve().with_name("run_notebook.py")
CONCURRENCY = 2  # the machines this runs on have 2 cores; every run is single-threaded
TIMEOUT = 300  # seconds for one run; a tutorial should take well under a minute
PATHS = ("native", "avx2")  # the code paths the tutorials run on
CODE_SELECTION = ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")  # what `avx2_kernels` sets


@dataclass
class Run:
    """One run of a tutorial: as a "script" or in a "kernel"."""

    returncode: int
    stdout: str
    stderr: str
    left: list[str]  # files left in its working directory
    seconds: float
    figures: list[str] = field(default_factory=list)  # script: PNGs saved to MINIGRAD_FIGURES
    notebook: dict = field(default_factory=dict)  # kernel: the executed notebook


@functools.cache  # the same for every run of a session
def avx2_kernels() -> dict[str, str] | None:
    """The environment that makes an x86-64 CPU with AVX-512 compute as a CPU with only AVX2
    does: OpenBLAS's Haswell kernels and none of numpy's AVX-512 loops. Both pick their code by
    the CPU, and the AVX-512 code rounds differently: with it, tutorial 07's greedy decoding,
    half-way, was right for 60.5% (OpenBLAS's SkylakeX kernels) or 68.5% (an AMD CPU's AVX-512
    numpy loops) of the sources, with the AVX2 code for 66.0%. On a CPU without AVX2 and FMA,
    or not x86-64, there is no AVX2 code: None."""
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return None
    if not {"avx2", "fma"} <= set(flags):
        return None
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # numpy 1.x
        from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    env = {"OPENBLAS_CORETYPE": "Haswell"}
    avx512 = [f for f in __cpu_dispatch__ if f.startswith("AVX512") or f == "X86_V4"]
    if any(__cpu_features__.get(f) for f in avx512):
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(f for f in avx512 if __cpu_features__.get(f))
    return env


def code_path_env(path: str) -> dict[str, str]:
    """The environment of a code path: "native" picks nothing (whatever the caller's environment
    picked is dropped), "avx2" the settings of `avx2_kernels`."""
    env = {key: value for key, value in os.environ.items() if key not in CODE_SELECTION}
    if path == "avx2":
        kernels = avx2_kernels()
        if kernels is None:
            raise ValueError("code path 'avx2': this CPU has no AVX2 and FMA")
        env.update(kernels)
    elif path != "native":
        raise ValueError(f"code path {path!r}: expected one of {PATHS}")
    return env


def run_one(kind: str, name: str, base: Path, path: str = "native") -> Run:
    """Run one tutorial in its own Python (and, for "kernel", its own Jupyter kernel), with an
    empty working directory, one BLAS thread and the code of `path` ("native" or "avx2")."""
    work, out = base / "work", base / "out"
    work.mkdir(parents=True)
    out.mkdir()
    env = dict(code_path_env(path), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               MINIGRAD_FIGURES=str(out / "figures"))
    if kind == "script":
        env["MPLBACKEND"] = "Agg"
        command = [sys.executable, str(TUTORIALS / name)]
    else:
        env.pop("MPLBACKEND", None)  # the kernel picks its inline backend
        env.pop("MINIGRAD_FIGURES", None)
        command = [sys.executable, str(RUN_NOTEBOOK), str(TUTORIALS / name), str(work),
                   str(out / "run.ipynb")]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        code, stdout = -1, e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr = f"(killed after {TIMEOUT} s)"
    seconds = time.perf_counter() - t0
    run = Run(code, stdout, stderr, sorted(p.name for p in work.iterdir()), seconds)
    if kind == "script" and (out / "figures").is_dir():
        run.figures = sorted(p.name for p in (out / "figures").iterdir())
    if kind == "kernel" and (out / "run.ipynb").exists():
        run.notebook = json.loads((out / "run.ipynb").read_text())
    return run


def children_cpu() -> float:
    """CPU seconds used by finished child processes (and theirs): the work, whatever the load."""
    try:
        import resource
    except ImportError:  # not on Windows
        return float("nan")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_all(tmp_path_factory, path: str = "native", kinds: tuple[str, ...] = ("kernel", "script")) -> dict:
    """Every tutorial in each of `kinds` ("kernel", "script") on the code path `path`,
    CONCURRENCY runs at a time (the slowest tutorials first). Returns {(kind, name): Run};
    prints the time of every run."""
    jobs = [(kind, name) for name in SCRIPTS for kind in kinds]
    jobs.sort(key=lambda job: -(TUTORIALS / job[1]).stat().st_size)  # longer files train more
    t0, cpu0 = time.perf_counter(), children_cpu()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        futures = {job: pool.submit(run_one, *job, tmp_path_factory.mktemp(f"{path}-{job[0]}-{job[1][:2]}"),
                                    path) for job in jobs}
        results = {job: future.result() for job, future in futures.items()}
    total, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    print(f"\n{len(jobs)} tutorial runs on the {path} code, {CONCURRENCY} at a time: {total:.0f} s "
          f"({cpu:.0f} s of CPU)")
    for (kind, name), run in sorted(results.items(), key=lambda item: item[0][::-1]):
        print(f"  {name:34s} {kind:6s} {run.seconds:6.1f} s")
    return results


def lines(runs, name, pattern):
    """The matches of a pattern in what a tutorial printed as a script (at least one)."""
    found = re.findall(pattern, runs["script", name].stdout, flags=re.MULTILINE)
    assert found, f"{name}: no line matches {pattern!r}"
    return found
