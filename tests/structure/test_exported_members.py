"""Each package face exports exactly what it lists, in the manner of httpx's ``tests/structure/test_exported_members.py``.

A face is a package's ``__init__`` (or one of the re-export modules at the top of ``judgesdk/``). Its ``__all__`` is
its public API: every name listed resolves, and every public name the face holds is listed (a helper imported into
a face by accident would otherwise become API). Submodules and ``from __future__`` names do not count.
"""

from __future__ import annotations

import importlib
import types

import pytest
from test_face_imports import faces

# every folder's face and the top-level ones (tests/structure/test_face_imports.py), but the pytest plugin (its hooks
# are its API, to pytest) and the templates' data package (no names)
FACES = [face for face in faces() if face not in ("judgesdk.testing", "judgesdk.prompts")]
NOT_API = {"annotations", "TYPE_CHECKING"}


def public_names(module: types.ModuleType) -> set[str]:
    """The public names a face holds: everything in ``dir()`` (a lazy face lists its names there) that is not a
    submodule, private, or a typing helper."""
    names = set()
    for name in dir(module):
        if name.startswith("_") or name in NOT_API:
            continue
        value = module.__dict__.get(name)
        if isinstance(value, types.ModuleType):
            continue
        names.add(name)
    return names


@pytest.mark.parametrize("face", FACES)
def test_every_listed_name_resolves(face):
    module = importlib.import_module(face)
    assert isinstance(module.__all__, list) and len(set(module.__all__)) == len(module.__all__), f"{face}.__all__ repeats a name"
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{face}.{name} does not resolve"


@pytest.mark.parametrize("face", FACES)
def test_every_public_name_is_listed(face):
    module = importlib.import_module(face)
    unlisted = public_names(module) - set(module.__all__)
    assert not unlisted, f"{face} holds public names it does not export in __all__ (list them, or import them privately): {sorted(unlisted)}"
