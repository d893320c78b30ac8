"""Named plugins (judgesdk.core.plugins.Plugins): the lookup order registered > built in > entry point, laziness,
aliases, what a loaded thing must be, and the typed errors with their messages, on a registry of a toy type."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from importlib.metadata import EntryPoint

import pytest

from judgesdk.core import ConfigError, InputError, Plugins

GROUP = "judgesdk.toys"
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
MODULE = "toyhome"
TOYS = """
from tests_core_toy import Toy

RED = Toy("red")
BLUE = Toy("blue")
WRONG = Toy("other")
NOT_A_TOY = 3


def make_green():
    return Toy("green")
"""


@dataclass(frozen=True)
class Toy:
    name: str


@pytest.fixture
def home(tmp_path, monkeypatch):
    """``toyhome``: a module not imported yet that declares toys (of this file's :class:`Toy`)."""
    (tmp_path / f"{MODULE}.py").write_text(TOYS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(sys.modules, "tests_core_toy", sys.modules[__name__])
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    yield
    sys.modules.pop(MODULE, None)


def toys(points=(), **kwargs) -> Plugins[Toy]:
    settings = {
        "what": "toy",
        "declares": "toy",
        "a_name": "a toy name",
        "group": GROUP,
        "built_in": {"red": f"{MODULE}:RED", "green": f"{MODULE}:make_green"},
        "expected": Toy,
        "name_of": lambda toy: toy.name,
        "pattern": NAME,
        "entry_points": lambda: list(points),
        **kwargs,
    }
    return Plugins(**settings)


def point(name: str, value: str) -> EntryPoint:
    return EntryPoint(name=name, value=value, group=GROUP)


def test_a_built_in_is_imported_only_when_used_and_once(home):
    registry = toys()
    assert registry.names() == ["red", "green"] and MODULE not in sys.modules
    red = registry.get("red")
    assert red == Toy("red") and MODULE in sys.modules
    assert registry.get("red") is red


def test_a_factory_function_is_called_to_give_the_thing(home):
    assert toys().get("green") == Toy("green")


def test_registered_wins_over_built_in_and_built_in_over_entry_points(home):
    registry = toys([point("red", f"{MODULE}:BLUE"), point("blue", f"{MODULE}:BLUE")])
    assert registry.names() == ["red", "green", "blue"]  # an entry point never replaces a built-in name
    assert registry.get("red") == Toy("red") and registry.get("blue") == Toy("blue")
    registry.register("red", Toy("red-ish"), replace=True)
    with pytest.raises(ConfigError, match="toy 'red' \\(registered in this process\\) declares toy 'red-ish'"):
        registry.get("red")
    registry.register("blue", lambda: Toy("blue"), replace=True)
    assert registry.registered().keys() == {"red", "blue"}


def test_unregister_brings_the_built_in_back(home):
    registry = toys()
    registry.register("red", f"{MODULE}:make_green", replace=True)
    with pytest.raises(ConfigError, match="declares toy 'green'"):
        registry.get("red")
    registry.unregister("red")
    assert registry.get("red") == Toy("red") and registry.registered() == {}
    registry.unregister("never-registered")  # nothing to undo: no error


def test_registering_refuses_a_taken_or_ill_formed_name():
    registry = toys()
    with pytest.raises(ConfigError, match="toy 'red' is already registered: pass replace=True to replace it"):
        registry.register("red", Toy("red"))
    with pytest.raises(ConfigError, match="a toy name is a short name of letters, digits, '.', '_' or '-', got 'Bad Name'"):
        registry.register("Bad Name", Toy("x"))
    registry.register("yellow", Toy("yellow"))
    with pytest.raises(ConfigError, match="toy 'yellow' is already registered"):
        registry.register("yellow", Toy("yellow"))
    assert registry.get("yellow") == Toy("yellow")


def test_aliases_name_a_thing_and_built_in_ones_survive_unregister(home):
    registry = toys(aliases={"crimson": "red"})
    assert registry.canonical("crimson") == "red" and registry.get("crimson") == Toy("red")
    registry.register("blue", Toy("blue"), aliases=["navy"])
    assert registry.canonical("navy") == "blue"
    with pytest.raises(ConfigError, match="'navy' already names toy 'blue'"):
        registry.register("teal", Toy("teal"), aliases=["navy"])
    registry.unregister("blue")
    registry.unregister("red")
    assert registry.aliases() == {"crimson": "red"} and registry.canonical("navy") is None


def test_an_entry_point_declared_by_several_packages_is_refused(home):
    registry = toys([point("blue", f"{MODULE}:BLUE"), point("blue", f"{MODULE}:BLUE"), point("blue", f"{MODULE}:WRONG")])
    assert list(registry.discovered()) == ["blue"] and len(registry.discovered()["blue"]) == 2  # the same value once
    with pytest.raises(
        ConfigError,
        match=f"toy 'blue' is declared by several installed packages \\(entry point {MODULE}:BLUE, entry point {MODULE}:WRONG\\): uninstall all but one",
    ):
        registry.get("blue")


def test_entry_points_are_listed_once_until_refresh(home):
    points = [point("blue", f"{MODULE}:BLUE"), point("Not A Name", f"{MODULE}:BLUE")]
    registry = toys(points)
    assert registry.names() == ["red", "green", "blue"]  # a name the pattern refuses is skipped
    points.append(point("cyan", f"{MODULE}:BLUE"))
    assert "cyan" not in registry.names()
    assert registry.get("blue") == Toy("blue")
    registry.refresh()
    assert registry.names()[-2:] == ["blue", "cyan"]


def test_what_is_loaded_must_be_of_the_type_and_name_itself(home):
    registry = toys([point("wrong", f"{MODULE}:WRONG"), point("three", f"{MODULE}:NOT_A_TOY"), point("gone", f"{MODULE}:MISSING")])
    with pytest.raises(ConfigError, match=f"toy 'wrong' \\(entry point {MODULE}:WRONG\\) declares toy 'other'"):
        registry.get("wrong")
    with pytest.raises(ConfigError, match=f"toy 'three' \\(entry point {MODULE}:NOT_A_TOY\\) gives int, not a {__name__}.Toy"):
        registry.get("three")
    with pytest.raises(ConfigError, match=f"toy 'gone' \\(entry point {MODULE}:MISSING\\) could not be loaded: AttributeError"):
        registry.get("gone")


def test_an_unknown_name_lists_the_valid_ones_or_is_the_error_given():
    with pytest.raises(InputError, match="unknown toy 'blu'; choose one of red, green"):
        toys().get("blu")
    with pytest.raises(ConfigError, match="no toy called 'blu'"):
        toys(unknown=lambda name: ConfigError(f"no toy called {name!r}")).get("blu")
    assert toys().canonical("blu") is None


def test_a_built_in_missing_its_dependency_is_the_missing_error_where_one_is_given():
    built_in = {"red": "no_such_toy_module_here:RED"}
    with pytest.raises(ConfigError, match="toy 'red' \\(built in\\) could not be loaded: ModuleNotFoundError"):
        toys(built_in=built_in).get("red")
    with pytest.raises(InputError, match="toy 'red' is not available in this build: No module named 'no_such_toy_module_here'"):
        toys(built_in=built_in, missing=InputError).get("red")
    registry = toys(missing=InputError)  # only a built-in's missing module: a registered one's is a ConfigError
    registry.register("blue", "no_such_toy_module_here:BLUE")
    with pytest.raises(ConfigError, match="toy 'blue' \\(registered in this process\\) could not be loaded: ModuleNotFoundError"):
        registry.get("blue")


def test_errors_it_passes_go_up_unchanged_and_others_are_config_errors():
    def broken() -> Toy:
        raise InputError("the toy box is empty")

    registry = toys()
    registry.register("boxed", broken)
    with pytest.raises(ConfigError, match="toy 'boxed' \\(registered in this process\\) could not be loaded: InputError: the toy box is empty"):
        registry.get("boxed")
    passing = toys(passes=(ConfigError, InputError))
    passing.register("boxed", broken)
    with pytest.raises(InputError, match="^the toy box is empty$"):
        passing.get("boxed")


def test_the_default_entry_points_are_the_groups(monkeypatch):
    asked = []
    monkeypatch.setattr("judgesdk.core.plugins.metadata.entry_points", lambda group: asked.append(group) or [])
    assert toys(entry_points=None).names() == ["red", "green"] and asked == [GROUP]
