"""Every test here runs in a temporary folder of its own: a command that writes or reads
`runs/MODEL` (the default --out) never sees what the caller's working directory holds, such
as the `runs/gpt` that the README's main job leaves behind."""

import pytest


@pytest.fixture(autouse=True)
def _own_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
