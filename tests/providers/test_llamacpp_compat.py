"""The llama-cpp-python compatibility module (issue 13, item 5): every private attribute and C function it
relies on exists on the installed llama-cpp-python, the installed version is inside the range
pyproject.toml declares, the module's lists name everything its code touches, and no other llama.cpp
module reaches into llama-cpp-python itself. A rename in a new llama-cpp-python release fails here."""

from __future__ import annotations

import ast
import dis
import inspect
import sys
from importlib import metadata
from pathlib import Path

import pytest
from conftest import need

llama_cpp = need("llama_cpp")
from packaging.requirements import Requirement  # noqa: E402
from packaging.version import Version  # noqa: E402

from judgesdk.providers.llamacpp import compat  # noqa: E402

from support.source import parse  # noqa: E402  (tests/support/source.py: ast.parse that survives CPython 3.11's recursion-depth bug)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
PROVIDERS = REPO / "providers"
LLAMA = PROVIDERS / "llamacpp"
COMPAT = LLAMA / "compat.py"


def declared_ranges() -> dict[str, Requirement]:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    found = {}
    for extra in ("local", "server"):
        requirements = [Requirement(r) for r in extras[extra]]
        found[extra] = next(r for r in requirements if r.name == "llama-cpp-python")
    return found


def test_the_installed_version_is_inside_the_declared_range():
    installed = Version(metadata.version("llama-cpp-python"))
    assert compat.version() == str(installed)
    ranges = declared_ranges()
    for extra, requirement in ranges.items():
        operators = {spec.operator for spec in requirement.specifier}
        assert "<" in operators and ">=" in operators, f"the {extra} extra must bound llama-cpp-python on both sides: {requirement}"
        assert installed in requirement.specifier, f"llama-cpp-python {installed} is outside the {extra} extra's {requirement.specifier}"
    assert len({str(r.specifier) for r in ranges.values()}) == 1  # one range for llama-cpp-python
    specifier = ranges["local"].specifier
    assert all(Version(v) in specifier for v in compat.CHECKED_VERSIONS)  # the docstring's versions are allowed ones


@pytest.mark.parametrize("name", compat.MODULE_ATTRIBUTES)
def test_llama_cpp_has_each_module_attribute(name):
    assert hasattr(llama_cpp, name), f"llama_cpp.{name} is gone: update providers/llamacpp/compat.py"


@pytest.mark.parametrize("name,arity", compat.C_FUNCTIONS.items())
def test_each_c_function_takes_the_arguments_it_is_given(name, arity):
    function = getattr(llama_cpp, name)
    assert callable(function)
    assert len(inspect.signature(function).parameters) == arity, f"llama_cpp.{name}{inspect.signature(function)}"


def assigned_in_init(cls: type) -> set[str]:
    """The attributes ``cls.__init__`` assigns (instance attributes exist only once an instance is built)."""
    return {i.argval for i in dis.get_instructions(cls.__init__) if i.opname == "STORE_ATTR"}


def has(cls: type, name: str) -> bool:
    return hasattr(cls, name) or name in assigned_in_init(cls)


def test_the_internals_have_each_attribute_used():
    from llama_cpp import _internals

    assert all(hasattr(_internals, n) for n in compat.INTERNALS_ATTRIBUTES)
    assert all(hasattr(llama_cpp.LlamaGrammar, n) for n in compat.GRAMMAR_ATTRIBUTES)
    assert "verbose" in inspect.signature(llama_cpp.LlamaGrammar.from_string).parameters
    assert {"model", "params", "verbose"} <= set(inspect.signature(_internals.LlamaContext).parameters)
    missing = [f"Llama.{n}" for n in compat.LLAMA_ATTRIBUTES if not has(llama_cpp.Llama, n)]
    missing += [f"LlamaContext.{n}" for n in compat.CONTEXT_ATTRIBUTES if not has(_internals.LlamaContext, n)]
    missing += [f"LlamaModel.{n}" for n in compat.MODEL_ATTRIBUTES if not has(_internals.LlamaModel, n)]
    missing += [f"LlamaBatch.{n}" for n in compat.BATCH_ATTRIBUTES if not has(_internals.LlamaBatch, n)]
    fields = {"llama_context_params": compat.CONTEXT_PARAMS_FIELDS, "llama_batch": compat.BATCH_FIELDS}
    for struct, names in fields.items():
        declared = {field[0] for field in getattr(llama_cpp, struct)._fields_}
        missing += [f"{struct}.{n}" for n in names if n not in declared]
    assert not missing, f"renamed or removed in llama-cpp-python {llama_cpp.__version__}: {missing}"


# -- the lists name everything, and nothing else reaches in -------------------------------------------

ALLOWED = {  # attribute accesses in the compat module: the object (as written there) -> the list naming them
    "llama_cpp": compat.MODULE_ATTRIBUTES,
    "_internals": compat.INTERNALS_ATTRIBUTES,
    "llama_cpp.LlamaGrammar": compat.GRAMMAR_ATTRIBUTES,
    "llm": compat.LLAMA_ATTRIBUTES,
    "llm._ctx": compat.CONTEXT_ATTRIBUTES,
    "llm._model": compat.MODEL_ATTRIBUTES,
    "llm._batch": compat.BATCH_ATTRIBUTES,
    "llm.context_params": compat.CONTEXT_PARAMS_FIELDS,
    "batch": compat.BATCH_FIELDS,
}


def test_the_compat_lists_name_every_attribute_its_code_touches():
    tree = parse(COMPAT.read_text())
    unlisted = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("llama_cpp"):
            unlisted += [f"from {node.module} import {a.name}" for a in node.names if a.name not in compat.MODULE_ATTRIBUTES]
        if not isinstance(node, ast.Attribute):
            continue
        base = ast.unparse(node.value)
        if base in ALLOWED:
            if node.attr not in ALLOWED[base]:
                unlisted.append(f"{base}.{node.attr}")
        elif node.attr.startswith("_"):  # a private attribute of something the lists do not cover
            unlisted.append(f"{base}.{node.attr}")
    assert not unlisted, f"providers/llamacpp/compat.py uses names its lists do not declare: {unlisted}"


def private_uses(path: Path) -> list[str]:
    """llama_cpp imports and names, and private attributes of anything but ``self``, in one module."""
    found = []
    for node in ast.walk(parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [f"import {a.name}" for a in node.names if a.name.split(".")[0] == "llama_cpp"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "llama_cpp":
            found.append(f"from {node.module} import ...")
        elif isinstance(node, ast.Name) and node.id == "llama_cpp":
            found.append(f"line {node.lineno}: llama_cpp")
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id == "self"):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


def test_no_other_llama_module_uses_private_attributes_or_the_c_api():
    modules = sorted(m for m in LLAMA.glob("*.py") if m.name not in ("compat.py", "load_order.py"))  # the two that import llama_cpp
    assert len(modules) >= 8
    uses = {m.name: private_uses(m) for m in modules}
    assert all(not found for found in uses.values()), uses


# -- on a real model ----------------------------------------------------------------------------


@pytest.mark.integration
def test_every_compat_function_works_on_a_loaded_model(gguf_path):
    from judgesdk.providers.llamacpp.load import load_llama

    settings = {"model_path": str(gguf_path), "n_ctx": 256, "n_batch": 64, "n_threads": 1, "logits_all": False, "verbose": False}
    llm = load_llama(settings, n_seq=3, kind="local")  # parallel sequences: the context is rebuilt
    try:
        assert all(hasattr(llm, n) for n in compat.LLAMA_ATTRIBUTES)
        assert all(hasattr(llm._ctx, n) for n in compat.CONTEXT_ATTRIBUTES)
        assert all(hasattr(llm._model, n) for n in compat.MODEL_ATTRIBUTES)
        assert all(hasattr(llm._batch, n) for n in compat.BATCH_ATTRIBUTES)
        assert llm._ctx.params.n_seq_max == 3 and llm._ctx.params.kv_unified
        assert compat.sliding_window(llm) >= 0
        tokens = llm.tokenize(b"The cat sat on the mat.", add_bos=True, special=False)
        n_out = compat.fill_batch(llm, [((0,), tokens, 0, len(tokens) - 2)])
        compat.decode_batch(llm)
        rows = compat.logit_rows(llm, n_out)
        assert rows.shape == (2, llm.n_vocab())
        llm.input_ids[: len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        compat.copy_cells(llm, 0, 1, 0, len(tokens))
        compat.remove_cells(llm, 1, 0)
        data, written = compat.save_sequence(llm)
        assert written > 0
        compat.remove_cells(llm, 0, 0)
        assert compat.load_sequence(llm, data, written) == written
        compat.mark_logits_stale(llm)
        assert llm._requires_eval is True
        assert compat.parse_grammar(llm, 'root ::= "yes" | "no"') is not None
        assert compat.parse_grammar(llm, "root ::= (") is None
    finally:
        llm.close()
    assert llm._ctx.ctx is None  # the rebuilt context was freed with its model


def test_the_llama_modules_import_each_other_without_cycles():
    modules = {m.stem: m for m in LLAMA.glob("*.py") if m.stem != "__init__"}
    edges = {}
    for name, path in modules.items():
        imported = set()
        for node in ast.walk(parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                imported |= {node.module} if node.module else {a.name for a in node.names}
        edges[name] = imported & set(modules)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in edges[start])

    assert edges["load_order"] == set()  # the bottom: the one importer of llama_cpp
    assert edges["compat"] == {"load_order"}  # above it, the compat module imports none of the others
    assert not [m for m in modules if reaches(m, m, set())], edges


@pytest.mark.parametrize("given, expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_llama_cpp_is_imported_one_way_with_a_passive_openmp_wait_policy_unless_one_is_named(given, expected):
    """libgomp reads ``OMP_WAIT_POLICY`` once, when llama.cpp loads it: the one importer
    (``load_order.import_llama``) defaults it to PASSIVE beforehand and keeps a policy the user named. A fresh
    process, since the variable is read once per process."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | ({"OMP_WAIT_POLICY": given} if given else {})
    code = "import os, judgesdk.providers.llamacpp.compat as c; assert c.llama_cpp is not None; print(os.environ['OMP_WAIT_POLICY'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == expected
    sources = [p for p in (REPO / "providers").rglob("*.py") if "OMP_WAIT_POLICY\", \"PASSIVE\")" in p.read_text()]
    assert [p.relative_to(PROVIDERS).as_posix() for p in sources] == ["llamacpp/load_order.py"]  # one owner of the default
