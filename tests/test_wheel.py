"""The installed package, not the source tree: build the wheel, install it into a fresh venv outside the
repository, and judge one item there with the scripted provider. Catches files missing from the wheel
(templates, presets) and imports that only work from the tree."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

SCRIPT = """
import judgesdk, judgesdk.providers.scripted as s
from judgesdk.judge import Judge
from judgesdk.templates import bundled_template_ids
from judgesdk.presets import criteria_for
assert "site-packages" in judgesdk.__file__, judgesdk.__file__
assert "direct.likert" in bundled_template_ids() and len(bundled_template_ids()) > 20
assert "signals.conditional" in bundled_template_ids()
from judgesdk.fused.model import bundled
assert [f.data["dataset"] for f in bundled()] == ["summeval+newsroom"], bundled()
crit = criteria_for("summeval")[0]
with Judge(s.ScriptedProvider(lambda r: s.ScriptedReply(label_probs={"2": 0.5, "4": 0.5}))) as judge:
    result = judge.score("A summary.", source="An article.", criterion=crit)
assert result.status == "ok" and abs(result.score - 3.0) < 1e-9, result
print("WHEEL-OK", result.score)
"""


@pytest.mark.slow
def test_wheel_installs_and_judges_outside_the_repo(tmp_path):
    wheels = tmp_path / "wheels"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO)],
        capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next(wheels.glob("judgesdk-*.whl"))
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stderr[-3000:]
    run = subprocess.run([str(python), "-c", SCRIPT], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "WHEEL-OK 3.0" in run.stdout
