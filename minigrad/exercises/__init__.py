"""Exercises: students write the kernels of the course, and a grader names their mistakes.

    minigrad exercise list                        # the tasks in order, each with its status
    minigrad exercise start softmax_backward      # writes ./exercises/softmax_backward.py
    minigrad exercise check softmax_backward      # grades it (exit 0: every check passed)

or, in a notebook, `from minigrad.exercises import check; check("softmax_backward", MySoftmax)`.

Layout: catalogue.py (the course order, the Task record), grader.py (loading a file, running
checks, the report and its JSON), gradients.py (the shared gradient checks: worked case with
analytic/numeric/difference arrays, gradcheck over fixed random shapes, the reference),
diagnose.py (the diagnosis codes, their hints, and the matching of predicted mistakes),
references.py (the reference solutions: the library's own kernels), task_<name>.py (one task
each), stubs/<name>.py (what students get; package data), transcript.py (the line between the
checks and the student's code: run_student, recorded in the student's process and replayed in
the grading one), submission.py (what a file writes itself), isolation.py (grading a file in a
child process of its own, with limits), forkserver.py (the servers those children are forked
from), engine_graphs.py (the graphs of the backprop_engine task), instructor.py (grading a
class folder, points, Gradescope's results.json and autograder zip), cli.py (the `exercise`
command).

How to add a task <name>:
1. stubs/<name>.py: the statement and the math in the module docstring, the shapes, the
   forward given when the task is a backward, `raise NotImplementedError` where the student
   writes, and the line `minigrad exercise check <name>`. numpy and minigrad only.
2. references.py: a function calling the library's kernel the way the stub's object is called.
3. task_<name>.py, ending in `TASK = Task(name, title, defines, checks, train=None)`:
   - `defines`: the names the stub defines (check(name, *objects) takes them in this order);
   - `library`: the names of minigrad's own implementation of what the task asks (`softmax`,
     `Softmax`): a file that uses one as an attribute or imports it scores 0;
   - `checks(sub)` returns [(check name, function)] in order: forward against the reference on
     fixed cases, the forward's properties, then `gradients.gradient_checks(student, reference,
     worked_case, cases, op=<the student's Function class>, mistakes=...)`. A check returns
     None or a short note, and raises `transcript.Fail(message, detail, [codes])` to fail.
     A check calls the student's objects only inside `transcript.run_student(label, fn)`,
     where fn takes no arguments and returns plain data (arrays, numbers, strings, None, and
     lists, tuples and dicts of them: never a Tensor or an object of the student's); every
     comparison and diagnosis happens outside fn, on what it returned. A file is graded by
     running the checks twice: in the student's process, which records what each fn
     returned, and in the grading process, where the student's objects are absent (`sub` is
     a placeholder) and each run_student gives the recorded result instead
     (`gradients.student_output` and `student_backward` do this for a Case);
   - `mistakes(case, g, ref_grads) -> [diagnose.Mistake(code, {input name: predicted grad})]`:
     for each mistake the task is known for, the numbers it would give, computed from the
     reference's numbers (never by reading the student's source). The grader tries them
     first, then `diagnose.generic_mistakes` (ignores_upstream_grad, swapped_grads,
     transposed_grad, sign_error, factor_error). A new code needs its entry (code, title, the
     tasks that give it, the hint) in the catalogue: diagnoses_core/_attention/_layers.py;
   - `train(sub)` (pieces of a transformer): returns one check that trains the tiny GPT with
     the student's op swapped in (see task_attention_forward.py) and compares loss curves.
4. catalogue.ORDER: put the name at its place in the course.
5. tests/exercises/: correct/<name>.py written out (must pass; a wrapper of the library's
   kernel scores 0), and for every diagnosis code the task can give, an entry in a WRONG
   table of a test module
   (test_exercise_diagnoses.py and its siblings: the body that replaces the stub's `raise
   NotImplementedError`); the test asserts the grader returns exactly that code.
   test_exercise_cli.py runs every task's correct file (exit 0) and unmodified stub ("not
   implemented yet", exit 1) by itself.
"""

from .catalogue import TASKS, get_task
from .grader import Report, check, grade

__all__ = ["Report", "TASKS", "check", "get_task", "grade"]
