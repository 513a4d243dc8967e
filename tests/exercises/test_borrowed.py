"""A submission that hands in the library's own implementation of what the task asks it to
write (a re-export, an assignment, a subclass that inherits the backward, a backward taken from
another module, a call of the library's op, a name made at run time) scores 0 for the task with
a message saying so, through `check` and `grade`."""

import json

import pytest

from minigrad.cli import main
from minigrad.exercises import TASKS

STUB = TASKS["softmax_backward"].stub()
FILES = {
    # read from the file's text, before it runs (submission.written_here)
    "re-export": ("softmax_backward", "from minigrad.ops.reduce import SoftmaxOp as Softmax  # noqa: F401\n",
                  "Softmax is imported (line 1), not written in your file"),
    "subclass": ("softmax_backward", "from minigrad.ops import reduce\n\n\nclass Softmax(reduce.SoftmaxOp):\n"
                 "    pass\n",
                 "class Softmax (line 4) does not define forward or backward: it would run another class's"),
    "borrowed-backward": ("reductions", "from minigrad import Function\nfrom minigrad.ops import reduce\n\n\n"
                          + "".join(f"class {n}(Function):\n    forward = staticmethod(reduce.{n}.forward)\n"
                                    f"    backward = staticmethod(reduce.{n}.backward)\n\n\n"
                                    for n in ("Sum", "Mean", "Max")),
                          "class Sum (line 5) does not define forward or backward"),
    "library-module": ("linear_layer", "from minigrad.nn import Linear  # noqa: F401\n",
                       "Linear is imported (line 1), not written in your file"),
    "assigned": ("softmax_backward", "import minigrad.ops.reduce as r\nSoftmax = r.SoftmaxOp\n",
                 "Softmax is assigned (line 2), not defined by a def or class statement of your file"),
    "library-call": ("softmax_backward", STUB.replace("raise NotImplementedError",
                                                      "return g  # then: Tensor(s).softmax(-1)\n"
                                                      "        import minigrad as mg\n"
                                                      "        return mg.Tensor(a).softmax(-1).numpy()"),
                     "line 40 uses minigrad's own softmax"),
    "sum_to_shape-is-unbroadcast": (
        "mul_broadcast",
        "import minigrad\n" + TASKS["mul_broadcast"].stub().replace(
            "def sum_to_shape(grad, shape):",
            "def sum_to_shape(grad, shape):\n    return minigrad.unbroadcast(grad, shape)"),
        "sum_to_shape uses minigrad's own unbroadcast"),
    # made when the file runs, out of sight of its text: the student's process finds it
    "made-at-run-time": ("softmax_backward", "import importlib\n"
                         "reduce = importlib.import_module('minigrad.ops.reduce')\n"
                         "globals()['Softmax'] = getattr(reduce, 'Soft' + 'maxOp')\n",
                         "Softmax is minigrad.ops.reduce.SoftmaxOp, not a class your file defines"),
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
