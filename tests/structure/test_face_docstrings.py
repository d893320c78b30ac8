"""Every public name on a face has a docstring, and a function's docstring names each of its parameters.

A face's ``__all__`` is the API a user reads (and the API reference is generated from these docstrings), but a
linter checking docstrings sees only where a name is defined, not that a face re-exports it; this test walks each
face's ``__all__`` instead. The rule, per listed name:

* a class or a function has a docstring of its own (a class's is not inherited from its base; a dataclass's or a
  named tuple's generated ``Name(field, ...)`` does not count);
* a function's docstring names each of its parameters (but ``self`` and ``cls``) as a word, e.g. "``criterion``:
  the criterion to judge"; the house style puts them in backquotes, in plain sentences, and says what it returns.

Constants and type aliases are left out: they have no docstring of their own to read.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re

import pytest
from test_face_imports import faces

# every folder's face and the top-level ones, but the pytest plugin (its hooks are its API, to pytest) and the
# templates' data package (no names), as in test_exported_members.py
FACES = [face for face in faces() if face not in ("judgesdk.testing", "judgesdk.prompts")]


def own_docstring(value: object) -> str:
    """The docstring ``value`` itself carries: a class's own (not a base's), and none for the text a dataclass or a
    named tuple is given when it has none."""
    if inspect.isclass(value):
        doc = value.__dict__.get("__doc__") or ""
        generated = dataclasses.is_dataclass(value) or (issubclass(value, tuple) and hasattr(value, "_fields"))
        if generated and doc.startswith(f"{value.__name__}("):
            return ""
        return inspect.cleandoc(doc)
    return inspect.getdoc(value) or ""


def unnamed_parameters(function: object, doc: str) -> list[str]:
    """The parameters of ``function`` (but ``self`` and ``cls``) that ``doc`` does not name as a word."""
    names = [name for name in inspect.signature(function).parameters if name not in ("self", "cls")]  # type: ignore[arg-type]
    return [name for name in names if not re.search(rf"\b{re.escape(name)}\b", doc)]


def docstring_problems(face: str) -> list[str]:
    """What ``face``'s listed classes and functions lack: ``"name (home module): what"`` each."""
    module = importlib.import_module(face)
    problems = []
    for name in module.__all__:
        value = getattr(module, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        home = getattr(value, "__module__", "?")
        doc = own_docstring(value)
        if not doc.strip():
            problems.append(f"{name} ({home}): no docstring")
        elif inspect.isfunction(value) and (missing := unnamed_parameters(value, doc)):
            problems.append(f"{name} ({home}): its docstring does not name {', '.join(missing)}")
    return problems


def test_the_rule_reads_own_docstrings_and_parameter_names():
    @dataclasses.dataclass
    class Bare:
        field: int

    @dataclasses.dataclass
    class Told:
        """A told one."""

        field: int

    class Base:
        """The base's."""

    class Child(Base):
        pass

    def described(criterion: str, *, where: str = "") -> None:
        """Judge ``criterion``; ``where`` names it in errors."""

    def half_described(self, criterion: str, scale: str) -> None:
        """Judge ``criterion`` on its scales."""  # "scales" does not name ``scale``

    assert own_docstring(Bare) == "" and own_docstring(Told) == "A told one." and own_docstring(Child) == ""
    assert unnamed_parameters(described, own_docstring(described)) == []
    assert unnamed_parameters(half_described, own_docstring(half_described)) == ["scale"]


@pytest.mark.parametrize("face", FACES)
def test_every_listed_class_and_function_has_a_docstring_naming_its_parameters(face):
    problems = docstring_problems(face)
    assert not problems, (
        f"{face}: {len(problems)} listed name(s) without a docstring that says what each parameter means "
        "(plain sentences, each parameter in ``backquotes``):\n" + "\n".join(problems)
    )
