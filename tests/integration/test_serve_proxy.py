"""judgesdk's own decision providers against ``judgesdk serve`` through the LiteLLM proxy (its ``/v1/decisions`` and
``/v1/systemone`` routes), as ``judgesdk score`` runs them: one request per item reaches the server, and the
distributions written are ``judge.score()``'s for the same judge (within 1e-6).

The proxy routes ``judge-decisions`` to ``openai/judgesdk`` and ``judge-systemone`` to ``hosted_vllm/judgesdk``, both
at the server on 127.0.0.1; judgesdk reaches the proxy with ``kind = "openai"``, ``api = "decisions"`` and with
``kind = "systemone"``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from judgesdk.cli.app import main
from judgesdk.prompting.presets import criterion as preset

from support.serve_process import JudgesdkServe
from support.servers import LiteLLMProxy

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "summaries.jsonl"
ITEMS = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()][3:5]
CRITERIA = (preset("summeval", "coherence"), preset("summeval", "consistency"))
KEY_ENV = "JUDGESDK_TEST_PROXY_KEY"


class DecisionsProxy(LiteLLMProxy):
    """The LiteLLM proxy with two decision models in front of a ``judgesdk serve``."""

    def __init__(self, serve: JudgesdkServe) -> None:
        super().__init__(serve.base_url, model_names=("judge-decisions", "judge-systemone"))
        self.serve = serve

    def config(self) -> dict[str, Any]:
        config = super().config()
        config["model_list"] = [
            {"model_name": "judge-decisions", "litellm_params": {"model": "openai/judgesdk", "api_base": self.serve.base_url, "api_key": "not-needed"}},
            {"model_name": "judge-systemone", "litellm_params": {"model": "hosted_vllm/judgesdk", "api_base": self.serve.origin}},
        ]
        return config


@pytest.fixture(scope="module")
def proxy(embedded_serve: JudgesdkServe):
    need("litellm")
    try:
        server = DecisionsProxy(embedded_serve)
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


@pytest.mark.parametrize(("kind", "model"), [("openai", "judge-decisions"), ("systemone", "judge-systemone")])
def test_judgesdk_score_through_the_proxy_asks_one_request_per_item_with_judge_scores_distributions(
    proxy: DecisionsProxy, embedded_serve: JudgesdkServe, same_judge: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, model: str
) -> None:
    monkeypatch.setenv(KEY_ENV, proxy.api_key)
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    where = f'api = "decisions"\nbase_url = "{proxy.openai_base_url}"' if kind == "openai" else f'base_url = "{proxy.origin}"'
    config = tmp_path / "proxy.toml"
    config.write_text(f'[[providers]]\nkind = "{kind}"\nmodel = "{model}"\napi_key_env = "{KEY_ENV}"\n{where}\n[cache]\nenabled = false\n[retry]\nmax_attempts = 1\n')
    before = sum(embedded_serve.health()["served"].values())
    out = tmp_path / "results.jsonl"
    names = ",".join(c.name for c in CRITERIA)
    assert main(["score", str(items), "--config", str(config), "--preset", "summeval", "--criterion", names, "-o", str(out), "--quiet"]) == 0
    assert sum(embedded_serve.health()["served"].values()) - before == len(ITEMS)  # one request per item reached the server
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    for item in ITEMS:
        row = rows[item["id"]]
        assert row["status"] == "ok" and row["provider"] == kind
        for criterion in CRITERIA:
            part = row["parts"][criterion.name]
            result = same_judge.score(item["output"], source=item["source"], criterion=criterion)
            assert tuple(part["distribution"]["scale"]["labels"]) == criterion.scale.labels  # a part is the whole result, probs in label order
            written = part["distribution"]["probs"]
            assert written == pytest.approx(result.distribution.probs, abs=1e-6)
