"""A small mutation test: plant one one-line bug at a time and see whether the tests notice.

Each row of MUTATIONS names a file, the text of one line as it stands (stripped of its
indentation), the line that replaces it, and the tests that ought to catch the change. The
source tree is copied to a temporary folder once; each mutation is written into the copy,
the listed tests run there, and the file is put back. The real tree is never touched.

A mutation is *caught* when its tests fail, *survived* when they all pass (a missing test,
or a change that does not matter), and *not applied* when its line is no longer in the file
(the code moved on: update the row). Each set of tests is first run unmutated; a set that
fails as it stands makes its mutations *unusable* rather than caught.

    python benchmarks/mutation.py                    # every row
    python benchmarks/mutation.py clip no_grad       # rows whose name contains a word
    python benchmarks/mutation.py --list
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600  # seconds per test run; a mutation that hangs the tests counts as caught


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    original: str  # one line of `file`, without its indentation
    mutated: str  # what replaces it (same indentation)
    tests: tuple[str, ...]


def M(name: str, file: str, original: str, mutated: str, *tests: str) -> Mutation:
    return Mutation(name, file, original, mutated, tests)


CORE = ("tests/core/test_reliability.py",)
SAVE = ("tests/core/test_serialization.py", "tests/core/test_save_errors.py")
KERNELS = ("tests/nn/test_kernels.py", "tests/nn/test_kernel_extremes.py")

MUTATIONS = [
    # ---- core: the properties pinned by tests/core/test_reliability.py
    M("clip at the lower bound", "minigrad/ops/pointwise.py",
      "inside = x >= lo", "inside = x > lo", *CORE, "tests/core/test_ops_pointwise.py"),
    M("clip at the upper bound", "minigrad/ops/pointwise.py",
      "inside = inside & (x <= hi)", "inside = inside & (x < hi)", *CORE),
    M("clamp: tensor min's gradient when lo > hi", "minigrad/ops/pointwise.py",
      "below = below & (lo < hi)", "below = below", *CORE),
    M("no_grad nesting: leaving turns grad mode on", "minigrad/grad_mode.py",
      "s.grad_enabled = s.modes.pop()", "s.modes.pop(); s.grad_enabled = True",
      *CORE, "tests/core/test_engine.py"),
    M("unsigned index arrays not accumulated", "minigrad/ops/shape.py",
      'return any(isinstance(p, np.ndarray) and p.dtype.kind in "iu" for p in parts)',
      'return any(isinstance(p, np.ndarray) and p.dtype.kind in "i" for p in parts)',
      *CORE, "tests/core/test_ops_shape.py"),
    M("version counter starts at 1", "minigrad/versions.py",
      "self.version = 0", "self.version = 1", *CORE, "tests/core/test_inplace.py"),
    M("version counter counts twice", "minigrad/versions.py",
      "vc.version += 1", "vc.version += 2", *CORE, "tests/core/test_inplace.py"),
    M("optimizer step does not bump the version", "minigrad/optim/optimizer.py",
      "bump(p._data)  # so a backward through a graph made before this step raises", "pass",
      *CORE, "tests/core/test_optim.py"),
    M("clip_grad_norm_ ignores a NaN norm", "minigrad/optim/optimizers.py",
      "if scale < 1 or math.isnan(scale):", "if scale < 1:", *CORE, "tests/core/test_optim.py"),
    M("max spreads NaN", "minigrad/ops/reduce.py",
      "winners |= np.isnan(x) & np.isnan(z)", "pass", *CORE, "tests/core/test_ops_reduce.py"),
    M("maximum: tie not split", "minigrad/ops/pointwise.py",
      "g = np.where(tie, g * 0.5, g)", "g = g", *CORE, "tests/core/test_ops_pointwise.py"),
    M("0-d gradient left a numpy scalar", "minigrad/tensor.py",
      "if type(value) is not np.ndarray or value.dtype != self._data.dtype:", "if False:", *CORE),
    M("promotion: int64 with float32 is float64", "minigrad/ops/promotion.py",
      "return top, np.result_type(*[d for d in dtypes if category(d) == top])",
      "return top, np.result_type(*dtypes)", "tests/core/test_dtype_promotion.py"),
    M("int @ float not refused", "minigrad/ops/linalg.py",
      "if category(a.dtype) != category(b.dtype):", "if False:",
      "tests/core/test_dtype_promotion.py", "tests/core/test_ops_linalg.py"),
    # ---- serialization
    M("checkpoint written without fsync", "minigrad/serialization.py",
      "os.fsync(f.fileno())  # the bytes are on disk before the name points at them", "pass", *SAVE),
    M("load takes a plain .npy", "minigrad/serialization.py",
      "if magic.startswith(_NPY_MAGIC):", "if False:", *SAVE),
    # ---- kernels
    # (F.cross_entropy now hands the kernel the kept rows only, so planting "ignored rows get
    # a gradient" in the kernel changes nothing a user can call: not a useful row.)
    M("cross entropy: mean not divided by the row count", "nn/classification.py",
      "gi = g / max(ctx.count, 1)", "gi = g", *KERNELS, "tests/nn/test_losses_ignore.py"),
    M("cross entropy: label smoothing not spread over classes", "nn/classification.py",
      "dx -= ctx.eps / logp.shape[-1]", "dx -= ctx.eps", *KERNELS),
    M("layer norm: huge rows not redone scaled", "nn/normalization.py",
      "x_hat[big], rstd[big] = _normalize_rows_scaled(x[big], eps)", "pass", *KERNELS),
    M("GELU backward: x not clipped", "nn/activation.py",
      "other = np.clip(x, -GELU_CLIP, GELU_CLIP, out=np.empty_like(dx))", "other = x.copy()", *KERNELS),
    M("embedding: padding row gets a gradient", "nn/sparse.py",
      "dw[ctx.padding_idx] = 0", "pass", *KERNELS, "tests/nn/test_layers.py"),
    M("embedding: sorted repeats copied, not summed", "nn/sparse.py",
      "if np.all(ids[1:] > ids[:-1]):  # no repeats, in order (positions 0..T-1): a plain copy",
      "if np.all(ids[1:] >= ids[:-1]):", *KERNELS, "tests/nn/test_layers.py"),
    M("dropout: kept values not rescaled", "nn/dropout.py",
      "scaled = keep * x.dtype.type(1.0 / (1.0 - p))  # m / (1 - p), in x's dtype",
      "scaled = keep * x.dtype.type(1.0)", *KERNELS, "tests/nn/test_functional.py"),
    M("fused attention: no fallback on overflow", "nn/attention/one_block.py",
      "if not (total <= _max_total(total.dtype)).all() or not np.isfinite(out).all():", "if False:",
      "tests/nn/test_fused_attention.py", "tests/nn/test_kernel_extremes.py"),
]

# Run inside the copy: drop the editable install's finder, so that `import minigrad.nn` finds
# the copy's nn/ (through minigrad's own source-tree finder), not the real tree's.
BOOT = (
    "import sys; sys.meta_path[:] = [f for f in sys.meta_path if '__editable__' not in "
    "getattr(f, '__module__', type(f).__module__)]; import pytest; "
    "sys.exit(pytest.main(['-q', '-x', '-p', 'no:cacheprovider', *sys.argv[1:]]))"
)


def copy_tree(dest: Path) -> Path:
    ignore = shutil.ignore_patterns(".git", "__pycache__", ".hypothesis", "runs", "*.egg-info",
                                    ".pytest_cache", "build", "dist")
    shutil.copytree(ROOT, dest, ignore=ignore)
    return dest


def run_tests(tree: Path, tests: tuple[str, ...]) -> tuple[str, float]:
    """'pass', 'fail' or 'timeout', and the seconds it took."""
    env = dict(os.environ, HYPOTHESIS_PROFILE="ci", PYTHONDONTWRITEBYTECODE="1")
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-c", BOOT, *tests], cwd=tree, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - t0
    return ("pass" if r.returncode == 0 else "fail"), time.perf_counter() - t0


def apply(path: Path, m: Mutation) -> str | None:
    """The file's original text, after writing the mutation into it; None if the line is gone."""
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if line.strip() == m.original]
    if len(hits) != 1:
        return None
    i = hits[0]
    indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
    lines[i] = indent + m.mutated + "\n"
    path.write_text("".join(lines))
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("words", nargs="*", help="run only rows whose name contains one of these")
    parser.add_argument("--list", action="store_true", help="print the rows and stop")
    args = parser.parse_args()
    rows = [m for m in MUTATIONS if not args.words or any(w in m.name for w in args.words)]
    if args.list:
        for m in rows:
            print(f"{m.name:50s} {m.file}")
        return
    with tempfile.TemporaryDirectory(prefix="minigrad-mutation-") as tmp:
        tree = copy_tree(Path(tmp) / "tree")
        baseline: dict[tuple[str, ...], str] = {}
        results = []
        for m in rows:
            if m.tests not in baseline:
                baseline[m.tests] = run_tests(tree, m.tests)[0]
            path = tree / m.file
            original = apply(path, m)
            if original is None:
                verdict, secs = "not applied", 0.0
            elif baseline[m.tests] != "pass":
                verdict, secs = "unusable", 0.0
                path.write_text(original)
            else:
                try:
                    outcome, secs = run_tests(tree, m.tests)
                finally:
                    path.write_text(original)
                verdict = "survived" if outcome == "pass" else "caught"
            results.append((m, verdict))
            print(f"{verdict:12s} {secs:6.1f}s  {m.name}  ({m.file})", flush=True)
    counts = {v: sum(1 for _, r in results if r == v)
              for v in ("caught", "survived", "not applied", "unusable")}
    rest = ", ".join(f"{n} {v}" for v, n in counts.items() if v != "caught" and n)
    print(f"\n{counts['caught']} of {len(results)} caught" + (f"; {rest}" if rest else ""))
    for m, verdict in results:
        if verdict == "survived":
            print(f"  survived: {m.name}: {m.file}: {m.original!r} -> {m.mutated!r}")


if __name__ == "__main__":
    main()
