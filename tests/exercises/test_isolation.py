"""Each file is graded in a child process of its own: a hostile file (a forged report then
os._exit, sys.exit at import, KeyboardInterrupt, an endless loop, allocating without end, a
print) gets 0 with a one-line reason, through `check` and `grade`, and the rest of the class is
graded as if it were not there."""

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from minigrad.cli import main
from minigrad.exercises import TASKS
from minigrad.exercises.autograder import run_autograder_script
from minigrad.exercises.cli import parse_memory
from minigrad.exercises.instructor import check_names

CORRECT = Path(__file__).parent / "correct"
TASK = "softmax_backward"
N_CHECKS = len(check_names(TASKS[TASK]))
CORRECT_BACKWARD = "return a * (g - (g * a).sum(axis=-1, keepdims=True))"


def student(body: str) -> str:
    """The stub of TASK with `body` where the student writes the backward."""
    return TASKS[TASK].stub().replace("raise NotImplementedError", body)


# name -> (file text, extra options, what the reason says)
HOSTILE = {
    "forged_then_os_exit": (student('print(\'{"task": "softmax_backward", "passed": true}\')\n'
                                    "        import os; os._exit(0)"), [],
                            "the process ended without a report (exit code 0)"),
    "sys_exit_at_import": ("import sys\nsys.exit(0)\n", [], "the code raised SystemExit(0)"),
    "keyboard_interrupt": (student("raise KeyboardInterrupt"), [], "the code raised KeyboardInterrupt()"),
    "endless_loop": (student("while True: pass"), ["--timeout", "2"], "stopped after 2 s"),
    "out_of_memory": (student("x = []\n        while True: x.append(np.ones(10**7))"), ["--memory", "700M"],
                      "ran out of memory (limit 700 MiB"),
}


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(["exercise", *argv])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_a_hostile_file_gets_0_and_a_reason_through_check_and_grade(capsys, tmp_path, kind):
    text, options, reason = HOSTILE[kind]
    for who in ("hostile", "honest"):
        (tmp_path / who).mkdir()
    (tmp_path / "hostile" / f"{TASK}.py").write_text(text)
    shutil.copy(CORRECT / f"{TASK}.py", tmp_path / "honest")
    code, out = run(capsys, "check", TASK, "--file", str(tmp_path / "hostile" / f"{TASK}.py"), *options)
    assert code == 1 and reason in out and "not graded: every check counts as failed" in out
    assert "checks passed" not in out
    code, out = run(capsys, "check", TASK, "--file", str(tmp_path / "hostile" / f"{TASK}.py"), "--json",
                    *options)
    result = json.loads(out)
    assert code == 1 and result["passed"] is False and reason in result["stopped"]
    code, out = run(capsys, "grade", str(tmp_path), *options)
    assert code == 0 and f"hostile/{TASK}.py: {reason}" in out
    with open(tmp_path / "grades.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["hostile"]["score"] == "0" and rows["hostile"]["codes"] == "stopped"
    assert rows["honest"]["score"] == rows["honest"]["max_score"] == str(N_CHECKS)


def test_a_print_in_backward_never_corrupts_json_or_gradescope(capsys, tmp_path):
    path = tmp_path / f"{TASK}.py"
    path.write_text(student('print("debug {" * 40)\n        ' + CORRECT_BACKWARD))  # 16 calls
    code, out = run(capsys, "check", TASK, "--file", str(path), "--json")
    result = json.loads(out)
    assert code == 0 and result["passed"] and result["output"].startswith("debug {debug {")
    code, out = run(capsys, "check", TASK, "--file", str(path), "--format", "gradescope")
    result = json.loads(out)
    assert code == 0 and result["score"] == N_CHECKS and "debug {" in result["output"]
    assert all("debug" not in t["output"] for t in result["tests"])
    code, out = run(capsys, "grade", str(tmp_path), "--format", "gradescope")
    written = json.loads((tmp_path / "results.json").read_text())
    assert code == 0 and written["score"] == N_CHECKS and "debug {" in written["output"]
    code, out = run(capsys, "grade", str(tmp_path), "--format", "json")
    (only,) = json.loads(out).values()
    assert only[TASK]["score"] == N_CHECKS and len(only[TASK]["output"]) < 2100  # cut to a length
    assert "cut:" in only[TASK]["output"]


def test_a_folder_with_a_hanging_student_grades_the_others(capsys, tmp_path):
    for who in ("alice", "bob", "carol"):
        (tmp_path / who).mkdir()
        shutil.copy(CORRECT / f"{TASK}.py", tmp_path / who)
    (tmp_path / "bob" / f"{TASK}.py").write_text(student("while True: pass"))
    code, out = run(capsys, "grade", str(tmp_path), "--timeout", "2")
    assert code == 0 and f"bob/{TASK}.py: stopped after 2 s" in out
    with open(tmp_path / "grades.csv", newline="") as f:
        scores = {r["student"]: r["score"] for r in csv.DictReader(f)}
    assert scores == {"alice": str(N_CHECKS), "bob": "0", "carol": str(N_CHECKS)}
    code, out = run(capsys, "grade", str(tmp_path), "--format", "gradescope", "--timeout", "2")
    bob = json.loads((tmp_path / "bob" / "results.json").read_text())
    assert code == 0 and bob["score"] == 0
    assert all(t["output"].startswith("not run: stopped after 2 s") for t in bob["tests"])
    assert json.loads((tmp_path / "carol" / "results.json").read_text())["score"] == N_CHECKS


def test_results_with_several_students_is_refused(capsys, tmp_path):
    for who in ("alice", "bob"):
        (tmp_path / who).mkdir()
        shutil.copy(CORRECT / f"{TASK}.py", tmp_path / who)
    code = main(["exercise", "grade", str(tmp_path), "--format", "gradescope", "--results",
                 str(tmp_path / "results.json")])
    assert code == 2 and "--results names one results.json" in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_ctrl_c_during_a_folder_keeps_what_was_written(capsys, tmp_path, monkeypatch):
    from minigrad.exercises import instructor

    for who in ("alice", "bob"):
        (tmp_path / who).mkdir()
        shutil.copy(CORRECT / f"{TASK}.py", tmp_path / who)
    real = instructor.verdicts

    def interrupted_at_bob(recorded, train=False):
        if any("bob" in r.path for r in recorded):
            raise KeyboardInterrupt
        return real(recorded, train)

    monkeypatch.setattr(instructor, "verdicts", interrupted_at_bob)
    assert main(["exercise", "grade", str(tmp_path)]) == 130
    assert f"the grades so far are in {tmp_path / 'grades.csv'}" in capsys.readouterr().err
    with open(tmp_path / "grades.csv", newline="") as f:
        assert [r["student"] for r in csv.DictReader(f)] == ["alice"]


def test_the_limits_options():
    assert parse_memory("2G") == parse_memory("2048") == parse_memory("2048M") == 2048
    with pytest.raises(SystemExit):
        main(["exercise", "check", TASK, "--memory", "lots"])
    with pytest.raises(SystemExit):
        main(["exercise", "grade", ".", "--timeout", "0"])


@pytest.mark.parametrize("kind", ["forged_then_os_exit", "endless_loop", "keyboard_interrupt"])
def test_a_students_files_after_a_hostile_one_are_still_graded(capsys, tmp_path, kind):
    """A student's files share one child process, one after the other: the file whose run ends
    it gets 0 with its reason, and the files after it are graded in a new child."""
    text, options, reason = HOSTILE[kind]
    (tmp_path / f"{TASK}.py").write_text(text)
    later = "cross_entropy"  # after softmax_backward in the course order
    shutil.copy(CORRECT / f"{later}.py", tmp_path)
    code, out = run(capsys, "grade", str(tmp_path), "--format", "json", *options)
    (grades,) = json.loads(out).values()
    assert grades[TASK]["score"] == 0 and reason in json.dumps(grades[TASK])
    assert grades[later]["passed"] and grades[later]["score"] == grades[later]["max_score"] > 0


def test_a_patched_numpy_leaves_the_next_student_alone(capsys, tmp_path):
    """numpy.allclose replaced (and numpy.zeros removed) by one student's file, at import: the
    next student in the folder, whose backward is wrong, is graded as if nothing happened."""
    (tmp_path / "a_patcher").mkdir()
    (tmp_path / "b_wrong").mkdir()
    (tmp_path / "a_patcher" / f"{TASK}.py").write_text(
        "import numpy\nnumpy.allclose = lambda *a, **k: True\nnumpy.zeros = None\n"
        + student(CORRECT_BACKWARD))
    (tmp_path / "b_wrong" / f"{TASK}.py").write_text(student("return g"))
    assert main(["exercise", "grade", str(tmp_path), "--format", "json"]) == 0
    grades = json.loads(capsys.readouterr().out)
    wrong = grades["b_wrong"][TASK]
    assert not wrong["passed"] and wrong["score"] < wrong["max_score"]
    (alone,) = json.loads(_grade_alone(capsys, tmp_path / "b_wrong")).values()
    assert alone[TASK]["score"] == wrong["score"]


def _grade_alone(capsys, folder):
    assert main(["exercise", "grade", str(folder), "--format", "json"]) == 0
    return capsys.readouterr().out


def test_an_atexit_handler_or_a_write_cannot_change_the_results(capsys, tmp_path):
    """A file that registers an atexit handler rewriting results.json, and writes a forged one
    at import: the child ends with os._exit (no handler runs) and the parent writes the results
    after the child, so the file holds the honest score."""
    results = tmp_path / "results.json"
    forged = json.dumps({"score": 100.0, "tests": []})
    (tmp_path / f"{TASK}.py").write_text(
        f"import atexit\nforged = {forged!r}\nopen({str(results)!r}, 'w').write(forged)\n"
        f"atexit.register(lambda: open({str(results)!r}, 'w').write(forged))\n" + student("return g"))
    argv = ["exercise", "grade", str(tmp_path), "--format", "gradescope", "--results", str(results)]
    assert main(argv) == 0
    capsys.readouterr()
    written = json.loads(results.read_text())
    assert written["score"] != 100.0 and not all(t["score"] == t.get("max_score") for t in written["tests"])


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_run_autograder_grades_a_hostile_file_honestly(tmp_path, kind):
    """Gradescope's run_autograder, its paths moved to a temporary folder: each hostile file
    gets a results.json scoring 0 with its reason, and the script ends."""
    text, options, reason = HOSTILE[kind]
    limits = dict(zip(options[::2], options[1::2]))
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / f"{TASK}.py").write_text(text)
    script = tmp_path / "run_autograder"
    script.write_text(run_autograder_script([TASK]))
    env = dict(os.environ, AUTOGRADER_ROOT=str(tmp_path), AUTOGRADER_PYTHON=sys.executable,
               AUTOGRADER_TIMEOUT=limits.get("--timeout", "60"),
               AUTOGRADER_MEMORY=limits.get("--memory", "2G"))
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "results" / "results.json").read_text())
    assert result["score"] == 0 and result["tests"] and reason in json.dumps(result)


def test_the_memory_limit_counts_what_grading_adds(capsys, tmp_path):
    """--memory is what grading may allocate beyond the address space the child starts with
    (numpy's and BLAS's buffers: about 150 MiB on 2 cores, more with more cores), so an honest
    file passes under a limit smaller than that space, on any machine."""
    # 80 MiB held at import, well within 160M of its own, whatever the child starts with
    (tmp_path / f"{TASK}.py").write_text("import numpy as np\nHELD = np.ones(10 * 2**20)\n"
                                         + student(CORRECT_BACKWARD))
    code, out = run(capsys, "check", TASK, "--file", str(tmp_path / f"{TASK}.py"), "--memory", "160M")
    assert code == 0 and "checks passed" in out and "FAIL" not in out, out


def test_a_real_ctrl_c_stops_the_child_at_once_and_keeps_the_grades(tmp_path):
    """SIGINT to `minigrad exercise grade` while a student's child loops (the next student's
    child runs in a worker thread while this one's checks are replayed): the command ends with
    130 within seconds, no child is left running, and the students graded so far are written."""
    import signal
    import time

    for who in ("alice", "bob", "carol"):
        (tmp_path / who).mkdir()
        shutil.copy(CORRECT / f"{TASK}.py", tmp_path / who)
    (tmp_path / "bob" / f"{TASK}.py").write_text(student("while True: pass"))
    proc = subprocess.Popen([sys.executable, "-m", "minigrad", "exercise", "grade", str(tmp_path),
                             "--timeout", "60"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "grades.csv").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # bob's child is looping now

    def children(pid: int) -> list[int]:
        found = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().split(") ")[1].split()[1]) == pid:
                        found.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
        return found

    started = [k for server in children(proc.pid) for k in [server, *children(server)]]
    assert len(started) >= 2  # the fork server and bob's child
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and time.monotonic() - t0 < 10, err
    with open(tmp_path / "grades.csv", newline="") as f:
        assert [r["student"] for r in csv.DictReader(f)] == ["alice"]

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(") ")[1][0] != "Z"
        except OSError:
            return False

    while any(map(alive, started)) and time.monotonic() - t0 < 10:
        time.sleep(0.05)
    assert not any(map(alive, started))
