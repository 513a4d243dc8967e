"""What a student's file writes itself, and what it takes from the library: asked of its text
before it runs (written_here, in the grading process) and of the objects it made when it ran
(not_written_here, in the student's process)."""

from __future__ import annotations

import ast
import os
from typing import Any


def written_here(task: Any, text: str, path: str) -> list[str]:
    """What of the task's names the student's file (its text, read, never run) does not write
    itself: a name imported, or assigned from something other than a def or class of the file;
    a class without a method the stub's class asks for (forward, backward: inheriting the
    library's op); or a use of the library's own implementation of the task (`task.library`:
    names such as `softmax` as an attribute, `x.softmax(...)`, or imported from minigrad), and
    anything imported from minigrad.exercises (the grader and its references). A name that
    is not bound at all is left to the checks (`defines ...`: missing). SyntaxError propagates."""
    tree = ast.parse(text, path)
    stub = ast.parse(task.stub())
    found = []
    bound = _top_level(tree)
    for name in task.defines:
        node = bound.get(name)
        if node is None:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(f"{name} is imported (line {node.lineno}), not written in your file")
        elif isinstance(node, ast.Assign):
            source = node.value.id if isinstance(node.value, ast.Name) else None
            if not isinstance(bound.get(source), (ast.FunctionDef, ast.ClassDef)):
                found.append(f"{name} is assigned (line {node.lineno}), not defined by a def or class "
                             "statement of your file")
        elif isinstance(node, ast.ClassDef):
            asked = _methods(_top_level(stub).get(name))
            missing = [m for m in ("forward", "backward") if m in asked and m not in _methods(node)]
            if missing:
                found.append(f"class {name} (line {node.lineno}) does not define "
                             f"{' or '.join(missing)}: it would run another class's")
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("minigrad"):
            if (node.module or "").startswith("minigrad.exercises"):
                found.append(f"line {node.lineno} imports from {node.module}, the grader's own package")
            found += [f"line {node.lineno} imports minigrad's own {a.name}" for a in node.names
                      if a.name in task.library]
        elif isinstance(node, ast.Import):
            found += [f"line {node.lineno} imports {a.name}, the grader's own package" for a in node.names
                      if a.name.startswith("minigrad.exercises")]
        elif isinstance(node, ast.Attribute) and node.attr in task.library:
            found.append(f"line {node.lineno} uses minigrad's own {node.attr}")
    for name, names in task.library_inside.items():  # (sum_to_shape must not be unbroadcast)
        for node in ast.walk(bound.get(name) or ast.Module(body=[], type_ignores=[])):
            used = getattr(node, "id", None) or getattr(node, "attr", None)
            if isinstance(node, (ast.Name, ast.Attribute)) and used in names:
                found.append(f"line {node.lineno}: {name} uses minigrad's own {used}")
    return list(dict.fromkeys(found))


def _top_level(tree: ast.AST | None) -> dict[str, ast.stmt]:
    """Each name a module's top-level statements bind, with the last statement binding it."""
    bound: dict[str, ast.stmt] = {}
    for node in getattr(tree, "body", []):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                bound[(a.asname or a.name).split(".")[0]] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        bound[n.id] = node
    return bound


def _methods(node: ast.stmt | None) -> set[str]:
    body = getattr(node, "body", [])
    return {n.name for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


_WRITTEN = ("forward", "backward")  # the methods a task's class asks the student to write


def not_written_here(sub: Any, names: tuple[str, ...], path: str) -> list[str]:
    """The same question as written_here, asked of the objects the file made when it ran: a
    function or class from another file (minigrad's own op, a reference solution), or a class
    whose forward or backward comes from another file (a subclass of the library's op). Base
    classes' abstract methods (Function's, Module's) do not count: a class that leaves them
    is caught by its checks."""
    here = os.path.realpath(path)

    def origin(obj: Any) -> str | None:
        code = getattr(getattr(obj, "__func__", obj), "__code__", None)
        return None if code is None else os.path.realpath(code.co_filename)

    found = []
    for name in names:
        obj = getattr(sub, name)
        if isinstance(obj, type):
            if obj.__module__ != sub.__name__:
                found.append(f"{name} is {obj.__module__}.{obj.__qualname__}, not a class your file defines")
                continue
            for method in _WRITTEN:
                fn = getattr(obj, method, None)
                qualname = getattr(getattr(fn, "__func__", fn), "__qualname__", "")
                where = origin(fn)
                if where not in (None, here) and qualname.split(".")[0] not in ("Function", "Module"):
                    found.append(f"{name}.{method} comes from {qualname} in {os.path.basename(where)}, "
                                 "not from your file")
        elif callable(obj) and origin(obj) not in (None, here):
            found.append(f"{name} is {getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', name)}, "
                         "not a function your file defines")
    return found
