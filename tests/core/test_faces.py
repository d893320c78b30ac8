"""Faces that load on first use (judgesdk.core.faces.lazy): a name's module is imported when the name is first read,
not when the face is, and once; an unknown name is an AttributeError naming the package; ``dir()`` lists both."""

from __future__ import annotations

import importlib
import sys
from types import SimpleNamespace

import pytest

from judgesdk.core import faces


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A module that is not imported yet (``lazyhome``), holding ``Thing``, and a count of the imports ``lazy`` makes."""
    (tmp_path / "lazyhome.py").write_text("class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazyhome", raising=False)
    imported: list[str] = []

    def import_module(name: str):
        imported.append(name)
        return importlib.import_module(name)

    monkeypatch.setattr(faces, "importlib", SimpleNamespace(import_module=import_module))
    yield imported
    sys.modules.pop("lazyhome", None)


def test_a_name_loads_its_module_on_first_use_and_is_kept(home):
    namespace: dict[str, object] = {"already": 1}
    getattr_, dir_ = faces.lazy("face", {"Thing": "lazyhome"}, namespace)
    assert "lazyhome" not in sys.modules and home == []  # making the face imports nothing
    thing = getattr_("Thing")
    assert thing is sys.modules["lazyhome"].Thing and home == ["lazyhome"]
    assert namespace["Thing"] is thing  # kept in the face's globals: Python finds it there from now on
    assert getattr_("Thing") is thing and dir_() == ["Thing", "already"]


def test_an_unknown_name_is_an_attribute_error_naming_the_face(home):
    getattr_, _ = faces.lazy("judgesdk.face", {"Thing": "lazyhome"}, {})
    with pytest.raises(AttributeError, match="module 'judgesdk.face' has no attribute 'Other'"):
        getattr_("Other")
    assert home == []  # nothing imported to find that out
