"""The hierarchy drawn in ``app/core/errors.py`` is the one that exists: every AppError subclass
anywhere in the app is drawn there (the LLM family in ``app/llm/errors.py``) under its parent,
and every name drawn is a class of that parent."""

from __future__ import annotations

import importlib
import pkgutil
import re

import app
from app.core import errors as core_errors
from app.core.errors import AppError
from app.llm import errors as llm_errors

# "     ├── Name, Other (422)   comment": the names at the start of what follows the branch.
_BRANCH = re.compile(r"^(?P<indent>[ │]*)[├└]── (?P<names>[A-Z]\w+(?:, [A-Z]\w+)*)")
_ROOT = re.compile(r"^\s*(?P<name>[A-Z]\w+)(?: \(|\s*$)")


def _drawn(doc: str) -> dict[str, str]:
    """Every drawn class name -> the name of the class drawn as its parent."""
    parents: dict[str, str] = {}
    stack: list[tuple[int, str]] = []  # (column of the branch, its first name)
    for line in doc.splitlines():
        branch = _BRANCH.match(line)
        if branch is None:
            root = _ROOT.match(line)
            if root and not stack and root["name"].endswith("Error"):
                stack = [(-1, root["name"])]
            continue
        column = len(branch["indent"])
        while stack and stack[-1][0] >= column:
            stack.pop()
        names = branch["names"].split(", ")
        for name in names:
            parents[name] = stack[-1][1] if stack else "?"
        stack.append((column, names[0]))
    return parents


def _app_errors() -> set[type]:
    for module in pkgutil.walk_packages(app.__path__, "app."):
        importlib.import_module(module.name)
    found: set[type] = set()
    todo = [AppError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub.__module__.startswith("app.") and sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def test_the_drawing_is_the_hierarchy() -> None:
    drawn = _drawn(core_errors.__doc__ or "") | _drawn(llm_errors.__doc__ or "")
    classes = {cls.__name__: cls for cls in _app_errors()}
    assert set(drawn) == set(classes), (
        f"not drawn: {sorted(set(classes) - set(drawn))}; "
        f"drawn but no such class: {sorted(set(drawn) - set(classes))}"
    )
    for name, parent in drawn.items():
        assert classes[name].__mro__[1].__name__ == parent, f"{name} is drawn under {parent}"


_HOME = re.compile(r"\((?P<package>\w+)/errors\.py\)")


def test_each_drawn_class_lives_where_the_drawing_says() -> None:
    """A line that names its file ("(pdfs/errors.py)") names the module its classes are in."""
    classes = {cls.__name__: cls for cls in _app_errors()}
    homes = 0
    for line in (core_errors.__doc__ or "").splitlines():
        branch, home = _BRANCH.match(line), _HOME.search(line)
        if branch is None or home is None:
            continue
        for name in branch["names"].split(", "):
            homes += 1
            module = f"app.{home['package']}.errors"
            assert classes[name].__module__ == module, f"{name} is in {classes[name].__module__}"
    assert homes >= 10
