"""The installed package, not the source tree: build the wheel from a copy of the repository, install it
into a fresh venv outside the repository, judge one item there with the scripted provider, and load every
template that ``prompts/README.md`` lists. Catches files missing from the wheel (templates, presets) and
imports that only work from the tree. A fast test checks that ``pyproject.toml`` lists every Python package
of the tree (the data folders, prompt families included, ship through package-data globs)."""

import json
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
SETUPTOOLS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]

SCRIPT = """
import json, sys
import judgesdk, judgesdk.providers.scripted as s
from judgesdk import Criterion, Judge, Scale
import judgesdk.judging.judge
assert Judge is judgesdk.judging.judge.Judge
from judgesdk.prompting.templates import bundled_template_ids, load_template
from judgesdk.prompting.presets import criteria_for, datasets
assert "site-packages" in judgesdk.__file__, judgesdk.__file__
assert datasets() == ["agents", "hanna", "newsroom", "summeval", "topicalchat"], datasets()
assert all(criteria_for(d) for d in datasets())  # every preset file ships and parses
from judgesdk.provider import CachedProvider  # a face's lazy name answers from the installed wheel
from judgesdk.provider.layers.cache import CachedProvider as Home
assert CachedProvider is Home
assert "direct.likert" in bundled_template_ids() and len(bundled_template_ids()) > 20
assert "signals.conditional" in bundled_template_ids()
from judgesdk.fused.model import bundled
assert [f.data["dataset"] for f in bundled()] == ["summeval", "topicalchat", "hanna"], [f.domain for f in bundled()]
from judgesdk.view.html import asset
assert "judgesdk-data" in asset("view.js") and asset("view.css")  # judgesdk view's page ships its script and styles
crit = criteria_for("summeval")[0]
with Judge(s.ScriptedProvider(lambda r: s.ScriptedReply(label_probs={"2": 0.5, "4": 0.5}))) as judge:
    result = judge.score("A summary.", source="An article.", criterion=crit)
assert result.status == "ok" and abs(result.score - 3.0) < 1e-9, result
listed = json.loads(sys.argv[1])
failed = {}
for tid in listed:
    try:
        assert load_template(tid).id == tid
    except Exception as exc:
        failed[tid] = repr(exc)
assert not failed, failed
print("TEMPLATES-OK", len(listed))
print("WHEEL-OK", result.score)
"""


def readme_template_ids() -> list[str]:
    """The ids in the first column of the table under ``## Templates`` in ``prompts/README.md``."""
    text = (REPO / "prompts" / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Templates\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE)


def test_the_readme_table_lists_every_template_file():
    ids = readme_template_ids()
    files = sorted(f"{p.parent.name}.{p.stem}" for p in (REPO / "prompts").glob("*/*.toml"))
    assert len(ids) == len(set(ids)) and sorted(ids) == files


def test_pyproject_lists_every_python_package():
    listed, found = set(SETUPTOOLS["packages"]), set()
    for name, folder in SETUPTOOLS["package-dir"].items():
        root = REPO / folder
        for init in root.rglob("__init__.py"):
            found.add(".".join([name, *init.parent.relative_to(root).parts]))
    assert found <= listed, f"Python packages missing from pyproject.toml [tool.setuptools] packages: {sorted(found - listed)}"


@pytest.mark.slow
def test_wheel_installs_and_judges_outside_the_repo(tmp_path):
    # built from a copy of what the wheel is made of: no build/ or egg-info is left in the repository, and a
    # stale build/lib there cannot put files that no longer exist into the wheel
    wheels, source = tmp_path / "wheels", tmp_path / "source"
    for folder in sorted(set(SETUPTOOLS["package-dir"].values())):
        shutil.copytree(REPO / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for path in [REPO / "pyproject.toml", REPO / "README.md", *REPO.glob("LICEN[CS]E*")]:
        shutil.copy2(path, source / path.name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next(wheels.glob("judgesdk-*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    ids = readme_template_ids()
    run = subprocess.run([str(python), "-c", SCRIPT, json.dumps(ids)], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"TEMPLATES-OK {len(ids)}" in run.stdout and "WHEEL-OK 3.0" in run.stdout
