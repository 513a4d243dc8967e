"""Every checkpoint is checked before anything in it is used: hostile or damaged files (a .npy
header that lies, a member that inflates past the memory limit, a meta that is not an object,
fields missing or of the wrong type, a config from a newer version or of impossible sizes, a
resume without its random state) are refused with one line naming the file and the field, and
the command exits 2. Also: a run killed before its first checkpoint is told a way on that
works, and a garbled train.lock is taken over."""

import io
import json
import os
import zipfile

import numpy as np
import pytest

import minigrad as mg
import minigrad.serialization as serialization
from minigrad import cli
from minigrad.models.runs import CHECKPOINT_FORMAT, RunLock, read_checkpoint

TEXT = "the quick brown fox jumps over the lazy dog.\n" * 60


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A real checkpoint of a tiny GPT trained for 2 steps (the command run in its own folder)."""
    folder = tmp_path_factory.mktemp("trained")
    (folder / "text.txt").write_text(TEXT)
    before = os.getcwd()
    os.chdir(folder)
    try:
        code = cli.main(["train", "gpt", "--preset", "tiny", "--steps", "2", "--data", "text.txt",
                         "--out", "run", "--quiet"])
    finally:
        os.chdir(before)
    assert code == 0
    return folder / "run" / "checkpoint.npz"


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the command never sees the caller's folder


def run(argv, capsys):
    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.err


def refused(argv, capsys, *words):
    """Run the command; it must exit 2 with one line on stderr holding each of `words`."""
    code, err = run(argv, capsys)
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, (word, err)
    return err


def rewrite(src, dst, meta=None, **arrays):
    """A copy of checkpoint `src` at `dst`, its meta replaced by `meta(old_meta)` (the raw
    value stored as the JSON text) and arrays replaced or added."""
    state = mg.load(src)
    if meta is not None:
        state["meta"] = np.array(json.dumps(meta(json.loads(str(state["meta"])))))
    state.update(arrays)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    mg.save(state, dst)
    return str(dst)


def changed(**fields):
    """A meta edit: set (value) or remove (None) top-level fields."""
    def edit(meta):
        for k, v in fields.items():
            if v is None:
                meta.pop(k, None)
            else:
                meta[k] = v
        return meta
    return edit


def config_changed(**fields):
    def edit(meta):
        meta["recipe"]["config"].update(fields)
        return meta
    return edit


# ----------------------------------------------------------------------------- the arrays


def _npy_header(shape, descr="<f4"):
    f = io.BytesIO()
    np.lib.format.write_array_header_1_0(f, {"descr": descr, "fortran_order": False, "shape": shape})
    return f.getvalue()


def test_a_header_claiming_a_huge_shape_in_a_small_file_is_refused_before_reading(trained, tmp_path,
                                                                                 capsys, monkeypatch):
    path = tmp_path / "f.npz"
    with zipfile.ZipFile(trained) as src, zipfile.ZipFile(path, "w") as zf:
        for info in src.infolist():
            if info.filename != "model/tok_emb.weight.npy":
                zf.writestr(info.filename, src.read(info))
        zf.writestr("model/tok_emb.weight.npy", _npy_header((2**40, 32)) + bytes(200_000))

    def never(*args, **kwargs):
        raise AssertionError("an array was read before the file was checked")

    monkeypatch.setattr(np.lib.format, "read_array", never)
    refused(["sample", str(path)], capsys, str(path), "damaged", "'model/tok_emb.weight'",
            "(1099511627776, 32)")


def test_a_member_that_inflates_beyond_the_limit_is_refused_before_it_is_read(tmp_path, capsys,
                                                                               monkeypatch):
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:  # 8 MiB of zeros in a few kB
        zf.writestr("meta.npy", _npy_header((2 * 2**20,)) + bytes(8 * 2**20))
    assert path.stat().st_size < 100_000
    monkeypatch.setattr(serialization, "MAX_LOAD_BYTES", 2**20)  # stands for the machine's memory

    def never(*args, **kwargs):
        raise AssertionError("the member was inflated before the limit was checked")

    monkeypatch.setattr(np.lib.format, "read_array", never)
    refused(["sample", str(path)], capsys, str(path), "8.0 MiB", "1.0 MiB", "MAX_LOAD_BYTES")


def test_the_limit_follows_the_address_space_limit(tmp_path):
    """Under `ulimit -v` the budget is what the limit leaves, not the machine's memory."""
    import subprocess
    import sys

    code = ("import resource, minigrad.serialization as s\n"
            "resource.setrlimit(resource.RLIMIT_AS, (s.mapped_bytes() + 2**30, resource.RLIM_INFINITY))\n"
            "print(s.memory_budget())\n")
    pytest.importorskip("resource")
    root = os.path.dirname(os.path.dirname(serialization.__file__))  # the minigrad under test
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": root}, check=True)
    assert 0 < int(done.stdout) <= 2**30


# ----------------------------------------------------------------------------- the meta


@pytest.mark.parametrize("meta", [[1, 2], 3.5, "text", None], ids=["list", "float", "string", "null"])
def test_a_meta_that_is_not_an_object_is_refused(trained, tmp_path, capsys, meta):
    path = rewrite(trained, tmp_path / "f.npz", meta=lambda old: meta)
    refused(["sample", path], capsys, path, "meta is", "expected an object")


@pytest.mark.parametrize("field", ["model", "recipe", "step", "train"])
def test_a_meta_without_a_field_every_checkpoint_has_is_refused(trained, tmp_path, capsys, field):
    path = rewrite(trained, tmp_path / "f.npz", meta=changed(**{field: None}))
    refused(["eval", path], capsys, path, f"no {field!r} field", "expected")


def test_a_format_field_naming_another_format_is_refused(trained, tmp_path, capsys):
    path = rewrite(trained, tmp_path / "f.npz", meta=changed(format="other-checkpoint-7"))
    with pytest.raises(ValueError, match="unknown checkpoint format 'other-checkpoint-7'") as e:
        read_checkpoint(path)
    assert type(e.value).__name__ == "CheckpointError"  # a ValueError: the command's one-line errors
    refused(["sample", path], capsys, path, "'other-checkpoint-7'", CHECKPOINT_FORMAT)


def test_a_meta_stored_as_numbers_is_refused(trained, tmp_path, capsys):
    state = mg.load(trained)
    state["meta"] = np.arange(3)
    mg.save(state, tmp_path / "f.npz")
    path = str(tmp_path / "f.npz")
    refused(["sample", path], capsys, path, "meta is a int64 array of shape (3,)", "JSON text")


# ----------------------------------------------------------------------------- the model config


def test_a_config_field_from_a_newer_version_names_the_version_and_the_field(trained, tmp_path, capsys):
    path = rewrite(trained, tmp_path / "f.npz",
                   meta=lambda m: {**config_changed(rope_theta=10000.0)(m), "version": "9.1.0"})
    refused(["sample", path], capsys, path, "recipe.config", "'rope_theta'", "minigrad 9.1.0",
            f"minigrad {mg.__version__}")
    path = rewrite(trained, tmp_path / "g.npz",
                   meta=lambda m: changed(version=None)(config_changed(rope_theta=1.0)(m)))
    refused(["sample", path], capsys, path, "'rope_theta'", "does not say which")


@pytest.mark.parametrize("field,value,expected", [
    ("num_heads", 0, "an integer >= 1"),
    ("num_heads", -2, "an integer >= 1"),
    ("embed_dim", 1e7, "an integer >= 1"),  # JSON's 1e7 is a float
    ("vocab_size", "96", "an integer >= 1"),
    ("dropout", 1.5, "a number in [0, 1)"),
    ("tie_weights", 1, "true or false"),
    ("num_heads", 3, "not divisible by num_heads 3"),  # the model's own check, 32 % 3
])
def test_a_config_value_out_of_range_is_refused(trained, tmp_path, capsys, field, value, expected):
    path = rewrite(trained, tmp_path / "f.npz", meta=config_changed(**{field: value}))
    refused(["sample", path], capsys, path, "recipe", field, expected)


@pytest.mark.parametrize("sizes", [dict(embed_dim=10_000_000), dict(num_layers=1_000_000)],
                         ids=["embed_dim-1e7", "num_layers-1e6"])
def test_sizes_whose_parameters_would_not_fit_are_refused_before_the_model_is_built(
        trained, tmp_path, capsys, monkeypatch, sizes):
    import minigrad.models.gpt as gpt

    path = rewrite(trained, tmp_path / "f.npz", meta=config_changed(**sizes))

    def never(self, config):
        raise AssertionError(f"the model was built: {config}")

    monkeypatch.setattr(gpt.GPT, "__init__", never)
    refused(["sample", path], capsys, path, "recipe.config", "parameters", "fit in memory")


# model name -> (module, model class, config class) under minigrad.models
MODELS = {"gpt": ("gpt", "GPT", "GPTConfig"), "bert": ("bert", "BERT", "BERTConfig"),
          "vit": ("vit", "ViT", "ViTConfig"), "cnn": ("cnn", "CNN", "CNNConfig"),
          "seq2seq": ("seq2seq", "Seq2Seq", "Seq2SeqConfig"),
          "rnn": ("rnn_seq2seq", "RNNSeq2Seq", "RNNConfig"),
          "caption": ("caption", "Captioner", "CaptionConfig")}
VARIANTS = {"gpt": dict(tie_weights=False, num_layers=3, mlp_ratio=2),
            "bert": dict(type_vocab_size=3, num_layers=3),
            "vit": dict(patch_size=4, in_channels=3), "cnn": dict(in_channels=3, channels=(2, 3, 5)),
            "seq2seq": dict(learned_positions=True, norm_first=False), "rnn": dict(attention=False),
            "caption": dict(channels=(4,), image_height=8, image_width=16)}


def _classes(name):
    import importlib

    module, model, config = MODELS[name]
    module = importlib.import_module(f"minigrad.models.{module}")
    return getattr(module, model), getattr(module, config)


def _configs():
    from dataclasses import fields

    from minigrad.models.recipes import RECIPES, recipe_class

    assert sorted(MODELS) == sorted(RECIPES)
    for name in RECIPES:
        names = {f.name for f in fields(_classes(name)[1])}
        for preset, options in recipe_class(name).presets.items():
            yield pytest.param(name, {k: v for k, v in options.items() if k in names}, id=f"{name}-{preset}")
        yield pytest.param(name, VARIANTS[name], id=f"{name}-variant")


@pytest.mark.parametrize("name,options", list(_configs()))
def test_the_parameter_count_from_the_sizes_is_the_built_models(name, options):
    """num_parameters() is what the memory check relies on: it must be exact."""
    model, config = _classes(name)
    config = config(**options)
    assert config.num_parameters() == model(config).num_parameters()


# ----------------------------------------------------------------------------- --resume


@pytest.mark.parametrize("edit,words", [
    pytest.param(changed(rng=None), ["no 'rng' field", "resuming needs"], id="no-rng"),
    pytest.param(changed(sched=None), ["no 'sched' field", "resuming needs"], id="no-sched"),
    pytest.param(changed(data_rng=None), ["no 'data_rng' field"], id="no-data-rng"),
    pytest.param(changed(step="abc"), ["'step'", "'abc' (str)", "an integer >= 0"], id="step-abc"),
    pytest.param(changed(step=-1), ["'step'", "an integer >= 0"], id="step-negative"),
    pytest.param(changed(rng={"bit_generator": "MT19937", "state": 3}), ["'rng'", "PCG64"], id="rng-garbage"),
    pytest.param(changed(sched={"last_epoch": "x"}), ["'sched'", "last_epoch"], id="sched-garbage"),
    pytest.param(lambda m: {**m, "train": {**m["train"], "batch_size": "abc"}},
                 ["train: batch_size", "an integer >= 1"], id="train-batch-size"),
])
def test_resume_of_a_checkpoint_without_its_state_is_refused(trained, tmp_path, capsys, edit, words):
    path = rewrite(trained, tmp_path / "case" / "checkpoint.npz", meta=edit)
    refused(["train", "gpt", "--resume", path, "--steps", "4", "--quiet"], capsys, path, *words)
    assert sorted(os.listdir(tmp_path / "case")) == ["checkpoint.npz"]  # nothing was written


def test_sample_needs_no_training_state_but_resume_refuses_unknown_settings(trained, tmp_path, capsys):
    edit = changed(rng=None, sched=None, data_rng=None)
    path = rewrite(trained, tmp_path / "f.npz",
                   meta=lambda m: {**edit(m), "train": {**m["train"], "ema": 0.9}})
    code, err = run(["sample", path, "--prompt", "the ", "--max-new-tokens", "3"], capsys)
    assert code == 0, err
    resumed = rewrite(trained, tmp_path / "case" / "checkpoint.npz",
                      meta=lambda m: {**m, "train": {**m["train"], "ema": 0.9}})
    refused(["train", "gpt", "--resume", resumed, "--steps", "4", "--quiet"], capsys, resumed,
            "unknown TrainConfig field 'ema'")  # a setting resuming would drop


# ----------------------------------------------------------------------------- damaged, not ours


def test_a_damaged_checkpoint_is_called_damaged_and_a_foreign_one_not_ours(trained, tmp_path, capsys):
    data = trained.read_bytes()
    cut = tmp_path / "cut.npz"
    cut.write_bytes(data[: len(data) // 2])
    err = refused(["sample", str(cut)], capsys, str(cut), "is damaged")
    assert "not a minigrad checkpoint" not in err
    other = tmp_path / "other.npz"
    mg.save({"weights": np.zeros(3)}, other)
    refused(["sample", str(other)], capsys, str(other), "not a minigrad checkpoint", "no meta entry")


# ----------------------------------------------------------------------------- run folders


def test_a_run_killed_before_its_first_checkpoint_is_told_a_way_that_works(tmp_path, capsys):
    (tmp_path / "text.txt").write_text(TEXT)
    folder = tmp_path / "runs" / "k9"
    folder.mkdir(parents=True)
    (folder / "log.csv").write_text("step,train_loss,val_loss,lr,seconds\n1,4.50000,,1.000e-03,0.50\n")
    argv = ["train", "gpt", "--preset", "tiny", "--steps", "2", "--data", "text.txt", "--out", "runs/k9",
            "--quiet"]
    err = refused(argv, capsys, "runs/k9", "before its first checkpoint", "--force")
    assert "--resume" not in err  # the way that does not work is not offered
    err = refused(["train", "gpt", "--resume", "runs/k9", "--quiet"], capsys, "runs/k9", "no checkpoint.npz",
                  "--out runs/k9 --force")
    code, err = run(argv + ["--force"], capsys)  # the way offered works
    assert code == 0, err
    assert read_checkpoint(str(folder))[0]["step"] == 2


@pytest.mark.parametrize("content", ["99999999999999999999", "-5", "garbage\n", ""])
def test_a_garbled_lock_is_taken_over_with_a_note(tmp_path, content):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / RunLock.NAME).write_text(content)
    notes = []
    with RunLock(str(folder), say=notes.append):
        assert (folder / RunLock.NAME).read_text() == f"{os.getpid()}\n"
    assert len(notes) == 1 and "holds no process id" in notes[0]
    assert not serialization.pid_running(99999999999999999999)
