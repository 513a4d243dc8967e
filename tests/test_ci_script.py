"""`.ci/run` does what a newcomer does: the README's two commands, in the README's order, in
one clone, so a test that reads what the main job leaves behind fails in CI, not on a laptop."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme_commands() -> list[str]:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        section = f.read().split("## Two commands", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```\n(.*?)\n```", section, flags=re.DOTALL)
    return [part.strip() for block in blocks for part in block.split("&&")]


def _ci_commands() -> list[str]:
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]


def test_readme_states_the_main_job_then_the_tests():
    commands = _readme_commands()
    assert commands == ['pip install .', 'minigrad train gpt', 'pip install -e ".[test,torch]"', 'pytest']


def test_ci_runs_the_readme_commands_in_the_readme_order():
    ci = _ci_commands()
    where = []
    for command in _readme_commands():
        assert command in ci, f".ci/run does not run the README's `{command}`"
        where.append(ci.index(command))
    assert where == sorted(where), f".ci/run runs the README's commands out of order: {where}"
    assert ci[-1] == "pytest", ".ci/run must end with the README's test command"
