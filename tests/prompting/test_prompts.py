"""The bundled prompt templates (prompts/) and the criteria presets (judgesdk/prompting/presets_data/).

Works from the source tree (templates loaded by path) and installed (templates from judgesdk.prompts).
"""

from __future__ import annotations

import fnmatch
import importlib.util
import re
import sys
from importlib import resources
from pathlib import Path

import pytest

from judgesdk.core.errors import InputError
from judgesdk.prompting import presets
from judgesdk.prompting.templates import Template, bundled_template_ids, load_template

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]


def _prompts_root() -> Path:
    tree = REPO / "prompts"
    if tree.is_dir() and any(tree.rglob("*.toml")):
        return tree
    if importlib.util.find_spec("judgesdk.prompts") is not None:
        return Path(str(resources.files("judgesdk.prompts")))
    pytest.skip("no prompts/ folder in the tree and judgesdk.prompts is not installed", allow_module_level=True)


PROMPTS = _prompts_root()
FILES = sorted(p for p in PROMPTS.rglob("*.toml") if p.is_file())
TEMPLATES: dict[str, Template] = {}
for _path in FILES:
    _t = load_template(_path)
    assert _t.id not in TEMPLATES, f"duplicate template id {_t.id!r} ({_path})"
    TEMPLATES[_t.id] = _t
IDS = sorted(TEMPLATES)

# The placeholder vocabulary shared by all templates (prompts/README.md explains each one), with a plausible value.
# Values are distinct markers so that their order in the rendered prompt can be checked.
PLAUSIBLE = {
    "source": "SRC: The city council approved the new budget on Monday after a long debate.",
    "context": "CTX: The budget is the largest in the city's history.",
    "reference": "REF: The council passed a record budget.",
    "output": "OUT: The council approved a budget.",
    "output_a": "OUTA: The council approved the budget on Monday.",
    "output_b": "OUTB: A debate happened.",
    "criterion": "coherence",
    "definition": "The collective quality of all sentences.",
    "criteria": "Coherence: The collective quality of all sentences.\nFluency: The quality of individual sentences.",
    "scale_low": "1",
    "scale_high": "5",
    "demonstrations": "Source text: DEMO source\n\nSummary: DEMO summary\n\nScore: 5",
    "extreme": "worst",
    "rung": "RUNG: Budget approved by council after debate.",
    "worse_rung": "WORSE: Something happened.",
    "better_rung": "BETTER: The council approved the city's largest budget on Monday.",
    "comparison": "have better coherence",
    "task": "one summary written for a news article",
    "assistants": "1. NLI provides the probability that the source (premise) entails the output (hypothesis), 0-1.",
    "plan": "PLAN: Read the source and the answer, check the NLI score for consistency, then score.",
    "assistant_scores": "NLI Score (Source as Premise and Answer as Hypothesis):\n0.93",
    "nli_score": "0.93",
    "bleurt_score": "0.41",
    "sum_bleurt_score": "0.37",
    "lm_prob_score": "0.12",
    "question": "Is this summary fluent and grammatical?",
}
DOCUMENTED = set(PLAUSIBLE)
JUDGED = ("output", "output_a", "output_b")

SUMMEVAL = ("coherence", "consistency", "fluency", "relevance")
REQUIRED = {
    "direct": {
        "direct.likert",
        "direct.human_guideline",
        "direct.human_guideline.coarse",
        "direct.human_guideline.demo",
        "direct.model_guideline",
        "direct.model_guideline.coarse",
        "direct.model_guideline.demo",
        "direct.rationale",
    },
    "filtering": {"filtering.redundancy"},
    "rts": {f"rts.{c}" for c in SUMMEVAL},
    "mcq": {f"mcq.{c}" for c in SUMMEVAL},
    "h2h": {f"h2h.{c}" for c in SUMMEVAL},
    "synthetic": {
        "synthetic.generate_extreme",
        "synthetic.generate_intermediate",
        "synthetic.compare_bws",
        "synthetic.compare_yesno",
    },
    "fusion": {"fusion.plan", "fusion.execute", "fusion.nli"},
    "pairwise": {"pairwise.compare"},
    "likelihood": {"likelihood.generic"},
    "signals": {
        "signals.conditional", "signals.unconditional", "signals.reference", "signals.question",
        "signals.dialogue", "signals.dialogue_history", "signals.response", "signals.story", "signals.story_unconditional",
    },  # fmt: skip
}
# The fused local judge's signal prompts: wording ours, not from the five papers (their source names the work
# they follow); scored as continuations, and the unconditional baseline has no placeholder at all.
SIGNALS = ("signals.",)
NO_PLACEHOLDER = ("signals.unconditional", "signals.response", "signals.story_unconditional")
# Templates answered in free text (reason first, or a generated text / plan / multi-criterion report).
FREE_TEXT = ("rts.", "synthetic.generate_", "fusion.plan", "fusion.execute.")
# Templates whose wording is ours: they carry the "data, not instructions" sentence.
OWN_WORDING = ("direct.likert", "direct.likert.no_source", "pairwise.compare", "fusion.nli")


def _free_text(tid: str) -> bool:
    return tid.startswith(FREE_TEXT)


def _render(t: Template) -> tuple:
    return t.render(**{name: PLAUSIBLE[name] for name in t.variables})


def _plain(t: Template) -> str:
    """Plain completion text: messages joined by blank lines, the answer prefix continued directly."""
    return "\n\n".join(m.content for m in _render(t))


def test_templates_found():
    assert len(FILES) >= 40, f"expected the bundled templates under {PROMPTS}, found {len(FILES)}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(PROMPTS)))
def test_file_metadata(path: Path):
    t = load_template(path)
    rel = path.relative_to(PROMPTS)
    assert t.id == f"{rel.parent.as_posix().replace('/', '.')}.{path.stem}", "id must be <folder>.<file stem>"
    assert t.version == "1"
    if t.id.startswith(SIGNALS):
        assert "wording is ours" in t.source, f"{t.id}: a signal prompt says where it comes from and that its wording is ours"
    else:
        assert re.search(r"\b00[0-4]\b", t.source), f"{t.id}: source must name the paper (000-004) and its section"
    assert len(t.description) > 40, f"{t.id}: describe what the template is for and what was adapted"
    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    unknown = set(raw) - {"id", "version", "source", "description", "system", "user", "answer_prefix"}
    assert not unknown, f"{t.id}: keys the loader ignores: {unknown}"


def test_ids_unique_and_families_complete():
    assert len(IDS) == len(set(IDS)) == len(FILES)
    for family, ids in REQUIRED.items():
        missing = ids - set(IDS)
        assert not missing, f"family {family!r} lacks {sorted(missing)}"
    assert {tid.split(".")[0] for tid in IDS} == set(REQUIRED)


@pytest.mark.parametrize("tid", IDS)
def test_placeholders_documented(tid: str):
    t = TEMPLATES[tid]
    assert t.variables or tid in NO_PLACEHOLDER, f"{tid} has no placeholders"
    assert t.variables <= DOCUMENTED, f"{tid} uses undocumented placeholders {sorted(t.variables - DOCUMENTED)}"
    # every {{...}} must be a well-formed placeholder, and no single-brace leftovers of the papers' notation
    text = "".join([t.system or "", t.user, t.answer_prefix])
    assert text.count("{{") == text.count("}}") == len(re.findall(r"\{\{\s*[A-Za-z_]\w*\s*\}\}", text))
    assert not re.search(r"(?<!\{)\{[A-Za-z_ ]+\}(?!\})", text), f"{tid}: leftover {{name}} in single braces"


@pytest.mark.parametrize("tid", IDS)
def test_renders(tid: str):
    t = TEMPLATES[tid]
    messages = _render(t)
    assert messages[-1].role == ("assistant" if t.answer_prefix else "user")
    text = _plain(t)
    assert "{{" not in text and "}}" not in text
    for name in t.variables:
        assert PLAUSIBLE[name] in text
    if t.variables:
        with pytest.raises(InputError):
            t.render()


@pytest.mark.parametrize("tid", IDS)
def test_shared_part_before_judged_text(tid: str):
    """Instructions and source come before the judged output(s), so a prefix cache can be reused."""
    t = TEMPLATES[tid]
    text = _plain(t)
    judged = [text.index(PLAUSIBLE[n]) for n in JUDGED if n in t.variables]
    if not judged:
        return
    first = min(judged)
    assert first > 0 and not text[:first].isspace()
    for shared in ("source", "context", "definition", "criteria", "plan", "demonstrations"):
        if shared in t.variables:
            assert text.index(PLAUSIBLE[shared]) < first, f"{tid}: {{{{{shared}}}}} comes after the judged text"
    if tid.startswith("synthetic.compare_bws"):
        assert text.index(PLAUSIBLE["rung"]) < text.index(PLAUSIBLE["output"])


@pytest.mark.parametrize("tid", [tid for tid in IDS if not _free_text(tid) and tid not in NO_PLACEHOLDER])
def test_label_templates_end_where_the_label_comes(tid: str):
    """Plain text ends with the answer prefix, with no trailing space: the next token is the label (" 5" or "5")."""
    t = TEMPLATES[tid]
    assert t.answer_prefix, f"{tid} is read as a label distribution and needs an answer_prefix"
    prefix = t.render(**{n: PLAUSIBLE[n] for n in t.variables})[-1].content
    text = _plain(t)
    assert text.endswith("\n\n" + prefix)
    assert prefix == prefix.strip(), f"{tid}: answer_prefix must not start or end with whitespace"
    assert prefix.endswith(":") or tid.startswith("pairwise."), f"{tid}: answer_prefix should end with ':'"


@pytest.mark.parametrize("tid", [tid for tid in IDS if tid.startswith(("rts.", "synthetic.generate_", "fusion.plan"))])
def test_free_text_templates_have_no_prefix(tid: str):
    assert not TEMPLATES[tid].answer_prefix


def test_direct_likert_is_generic_and_short():
    t = TEMPLATES["direct.likert"]
    assert {"criterion", "definition", "scale_low", "scale_high", "source", "output"} == t.variables
    assert t.answer_prefix == "Score ({{scale_low}}-{{scale_high}}):"
    assert _plain(t).endswith("</output>\n\nScore (1-5):")
    assert len(t.user) < 1200


@pytest.mark.parametrize("tid", OWN_WORDING)
def test_own_wording_marks_data_as_data(tid: str):
    assert re.search(r"not (as )?instructions", TEMPLATES[tid].user)


@pytest.mark.parametrize("criterion", SUMMEVAL)
def test_001_prompts(criterion: str):
    rts, mcq, h2h = (TEMPLATES[f"{m}.{criterion}"] for m in ("rts", "mcq", "h2h"))
    assert f"with respect to {criterion} from one to five" in rts.user
    assert rts.user.endswith("Provide your reason in one sentence, then give a final score:")
    for letter, word in zip("ABCDE", ("One", "Two", "Three", "Four", "Five")):
        assert re.search(rf"^{letter}: .*Score: {word}\.?$", mcq.user, re.M)
    assert mcq.answer_prefix == "Your Answer (enter 1 letter from A to E):"
    for letter in "ABC":
        assert re.search(rf"^{letter}: ", h2h.user, re.M)
    assert h2h.answer_prefix == "Your choice (enter 1 letter from A to C):"
    assert h2h.user.index("{{output_a}}") < h2h.user.index("{{output_b}}")


@pytest.mark.parametrize("tid", [tid for tid in IDS if tid.startswith("pairwise.")])
def test_pairwise_label_words(tid: str):
    t = TEMPLATES[tid]
    assert f"{t.answer_prefix} A" in t.user and f"{t.answer_prefix} B" in t.user


def test_synthetic_variants_share_placeholders():
    for base in ("generate_extreme", "generate_intermediate", "compare_bws", "compare_yesno"):
        family = [tid for tid in IDS if tid == f"synthetic.{base}" or tid.startswith(f"synthetic.{base}.")]
        assert len(family) == 3, family  # SummEval (base), TopicalChat, HANNA
        core = {"extreme", "worse_rung", "better_rung", "rung", "output", "comparison"} & TEMPLATES[family[0]].variables
        for tid in family:
            assert core <= TEMPLATES[tid].variables, tid


@pytest.mark.parametrize("tid", [tid for tid in IDS if tid.startswith("likelihood.")])
def test_likelihood_leaves_output_to_the_scorer(tid: str):
    t = TEMPLATES[tid]
    assert not set(JUDGED) & t.variables
    assert t.answer_prefix and "source" in t.variables


def test_fusion_execute_takes_the_plan():
    t = TEMPLATES["fusion.execute"]
    assert t.user.startswith("{{plan}}")
    assert {"plan", "assistant_scores", "source", "output", "criterion"} <= t.variables


def test_bundled_index_matches_files():
    if importlib.util.find_spec("judgesdk.prompts") is None:
        pytest.skip("judgesdk.prompts is not installed (running from the source tree)")
    root = Path(str(resources.files("judgesdk.prompts")))
    if not any(root.rglob("*.toml")):
        pytest.skip("installed judgesdk.prompts carries no templates")
    assert set(bundled_template_ids()) == set(IDS)
    for tid in IDS:
        assert load_template(tid).content_hash == TEMPLATES[tid].content_hash


def test_readme_lists_every_template():
    readme = PROMPTS / "README.md"
    if not readme.exists():
        pytest.skip(f"no README.md next to the templates in {PROMPTS}")
    text = readme.read_text(encoding="utf-8")
    missing = [tid for tid in IDS if f"`{tid}`" not in text]
    assert not missing, f"prompts/README.md does not list {missing}"
    undocumented = [n for n in DOCUMENTED if f"`{n}`" not in text]
    assert not undocumented, f"prompts/README.md does not explain placeholders {undocumented}"


# ---------------------------------------------------------------------------------------------- presets

SCALES = {
    "summeval": {c: (1, 5) for c in SUMMEVAL},
    "topicalchat": {
        "naturalness": (1, 3),
        "coherence": (1, 3),
        "engagingness": (1, 3),
        "groundedness": (0, 1),
        "understandability": (0, 1),
        "overall": (1, 5),
    },
    "hanna": {c: (1, 5) for c in ("relevance", "coherence", "empathy", "surprise", "engagement", "complexity")},
    "newsroom": {c: (1, 5) for c in ("coherence", "fluency", "informativeness", "relevance")},
    "agents": {"task_completion": (0, 1), "tool_correctness": (0, 1)},
}


def test_preset_datasets():
    assert presets.datasets() == sorted(SCALES)


@pytest.mark.parametrize("dataset", sorted(SCALES))
def test_preset_scales_and_definitions(dataset: str):
    criteria = presets.criteria_for(dataset)
    assert {c.name: (c.scale.low, c.scale.high) for c in criteria} == SCALES[dataset]
    for c in criteria:
        low, high = SCALES[dataset][c.name]
        assert c.scale.labels == tuple(str(v) for v in range(low, high + 1))
        assert len(c.description) > 20 and c.description.strip() == c.description
        assert presets.criterion(dataset, c.name) == c


def test_preset_lookup_is_forgiving_about_case_and_separators():
    assert presets.criterion("SummEval", "Coherence").name == "coherence"
    assert presets.criterion("Topical-Chat", "groundedness").scale.high == 1


@pytest.mark.parametrize(
    "call, known, guess",
    [
        (lambda: presets.criteria_for("sumeval"), ["hanna", "newsroom", "summeval", "topicalchat"], "summeval"),
        (lambda: presets.criterion("xsum", "coherence"), ["hanna", "newsroom", "summeval", "topicalchat"], None),
        (lambda: presets.criterion("summeval", "coherance"), list(SUMMEVAL), "coherence"),
    ],
)
def test_preset_typo_names_the_known_ones(call, known, guess):
    with pytest.raises(InputError) as err:
        call()
    for name in known:
        assert name in str(err.value)
    assert (f"did you mean {guess!r}" in str(err.value)) if guess else ("did you mean" not in str(err.value))


@pytest.mark.parametrize("dataset", sorted(SCALES))
def test_presets_fill_the_default_template(dataset: str):
    template = TEMPLATES["direct.likert"]
    for c in presets.criteria_for(dataset):
        messages = template.render(
            criterion=c.name,
            definition=c.description,
            scale_low=int(c.scale.low),
            scale_high=int(c.scale.high),
            source=PLAUSIBLE["source"],
            output=PLAUSIBLE["output"],
        )
        assert c.description in messages[0].content
        assert messages[-1].content == f"Score ({int(c.scale.low)}-{int(c.scale.high)}):"


def test_preset_files_name_their_sources():
    root = resources.files("judgesdk.prompting").joinpath("presets_data")
    files = [e for e in root.iterdir() if e.name.endswith(".toml")]
    assert len(files) == len(SCALES)
    for entry in files:
        raw = tomllib.loads(entry.read_text(encoding="utf-8"))
        assert raw["source"] and all(c.get("source") for c in raw["criteria"]), entry.name
        assert "id" not in raw and "user" not in raw, "criteria presets must not look like templates"


def test_presets_are_package_data():
    """The wheel must carry judgesdk/prompting/presets_data/*.toml (setuptools only ships declared package data)."""
    pyproject = REPO / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("no pyproject.toml (installed package)")
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    patterns = config.get("tool", {}).get("setuptools", {}).get("package-data", {}).get("judgesdk.prompting", [])
    assert any(fnmatch.fnmatch("presets_data/summeval.toml", p) for p in patterns), (
        'add "judgesdk.prompting" = ["presets_data/*.toml"] to [tool.setuptools.package-data] in pyproject.toml'
    )
