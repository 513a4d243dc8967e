"""`minigrad train` and its threads: `--threads auto` (the default) tunes the setting and says its
choice only with -v; a fixed `--threads` (before or after the subcommand) sets it for the run."""

import pytest
from threadpoolctl import threadpool_info

from minigrad.cli import build_parser
from minigrad.runtime import parallel


def blas_threads():
    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}


def test_train_with_auto_logs_the_count_it_chose(tmp_path, capsys, monkeypatch, one_thread_after):
    from minigrad.cli import main
    from minigrad.runtime import threads

    monkeypatch.setattr(threads, "available_cores", lambda: 2)  # a trial even on a 1-core machine
    out = tmp_path / "run"
    assert main(["-v", "train", "gpt", "--preset", "tiny", "--steps", "12", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "threads: " in text and "timed per step: 1:" in text and ", 2:" in text and ", blas:2:" in text
    assert main(["--threads", "1", "train", "gpt", "--preset", "tiny", "--steps", "12",
                 "--out", str(tmp_path / "fixed")]) == 0
    assert "timed per step" not in capsys.readouterr().out


def test_the_engine_and_the_command_set_a_fixed_setting(tmp_path, capsys, one_thread_after):
    from minigrad.cli import main
    from minigrad.models.train import Engine

    Engine(threads="blas:2")
    assert blas_threads() == {2} and parallel.get_threads() == 1
    Engine(threads=2)
    assert blas_threads() == {1} and parallel.get_threads() == 2
    assert main(["--threads", "blas:2", "train", "gpt", "--preset", "tiny", "--steps", "3",
                 "--out", str(tmp_path / "blas")]) == 0
    assert "timed per step" not in capsys.readouterr().out
    assert blas_threads() == {2} and parallel.get_threads() == 1


def test_the_tuners_lines_are_said_only_with_verbose(capsys, monkeypatch, one_thread_after):
    from minigrad.cli import main
    from minigrad.runtime import threads

    monkeypatch.setattr(threads, "available_cores", lambda: 2)  # so the tuner has settings to time
    argv = ["train", "gpt", "--preset", "tiny", "--steps", "12", "--quiet"]
    assert main([*argv, "--out", "quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gpt (tiny): ") and lines[2].startswith("step 12: val_loss ")
    assert not [line for line in lines if line.startswith("threads:")]
    for verbose in (["-v"], ["--verbose"]):
        assert main([*argv, "--out", f"loud{verbose[0]}", *verbose]) == 0
        said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("threads:")]
        assert said and all("timed per step: 1:" in line for line in said)


def test_threads_after_the_subcommand_set_the_run(capsys, one_thread_after):
    from minigrad.cli import main

    assert main(["train", "gpt", "--preset", "tiny", "--steps", "3", "--quiet", "--threads", "blas:2"]) == 0
    assert blas_threads() == {2} and parallel.get_threads() == 1
    assert main(["--threads", "blas:2", "train", "gpt", "--preset", "tiny", "--steps", "3", "--quiet",
                 "--out", "again", "--threads", "2"]) == 0  # the one after the subcommand wins
    assert blas_threads() == {1} and parallel.get_threads() == 2


def test_the_command_takes_a_count_blas_or_auto(capsys):
    parser = build_parser()
    assert parser.parse_args(["train", "gpt"]).threads == "auto"
    assert parser.parse_args(["--threads", "3", "train", "gpt"]).threads == 3
    assert parser.parse_args(["--threads", "blas:2", "train", "gpt"]).threads == "blas:2"
    for bad, says in (("0", "at least 1 thread"), ("two", "a number of threads, blas:N or auto"),
                      ("blas:0", "not 'blas:0'"), ("blas:x", "not 'blas:x'")):
        with pytest.raises(SystemExit):
            parser.parse_args(["--threads", bad, "train", "gpt"])
        assert says in capsys.readouterr().err
