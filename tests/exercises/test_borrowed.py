"""A submission that hands in the library's own implementation of what the task asks it to
write (a re-export, a subclass that inherits the backward, a backward taken from another
module) scores 0 for the task with a message saying so, through `check` and `grade`."""

import json

import pytest

from minigrad.cli import main

FILES = {
    "re-export": ("softmax_backward", "from minigrad.ops.reduce import Softmax  # noqa: F401\n",
                  "Softmax is minigrad.ops.reduce.Softmax, not a class your file defines"),
    "subclass": ("softmax_backward", "from minigrad.ops import reduce\n\n\nclass Softmax(reduce.Softmax):\n"
                 "    pass\n",
                 "Softmax.backward comes from Softmax.backward in reduce.py, not from your file"),
    "borrowed-backward": ("reductions", "from minigrad import Function\nfrom minigrad.ops import reduce\n\n\n"
                          + "".join(f"class {n}(Function):\n    forward = staticmethod(reduce.{n}.forward)\n"
                                    f"    backward = staticmethod(reduce.{n}.backward)\n\n\n"
                                    for n in ("Sum", "Mean", "Max")),
                          "Sum.forward comes from Sum.forward in reduce.py"),
    "library-module": ("linear_layer", "from minigrad.nn import Linear  # noqa: F401\n",
                       "Linear is minigrad.nn.layers.Linear, not a class your file defines"),
}


@pytest.mark.parametrize("kind", list(FILES))
def test_the_librarys_own_implementation_scores_0(capsys, tmp_path, kind):
    task, text, words = FILES[kind]
    (tmp_path / f"{task}.py").write_text(text)
    assert main(["exercise", "check", task, "--file", str(tmp_path / f"{task}.py")]) == 1
    out = capsys.readouterr().out
    assert words in out and "the task is to write it, so it scores 0" in out
    assert main(["exercise", "grade", str(tmp_path), "--format", "json"]) == 0
    (grades,) = json.loads(capsys.readouterr().out).values()
    assert grades[task]["score"] == 0 and words in json.dumps(grades[task])
