"""Continuations and labels are scored as the tokens they are where they stand, after the prompt, on every vocabulary.

A SentencePiece vocabulary with a space prefix (Llama 2, Mistral 7B v0.1; here ``../shared/gpu-check/tiny.gguf``)
puts a space before any text tokenized on its own: a continuation " The council" tokenized alone became " ", " The",
" council", and the model was scored on a lone space the text never had (found when a fit made through
``llama_cpp.server``, which tokenizes the whole text, differed from the same fit made in process). Such a vocabulary
now tokenizes the prompt and the continuation together and scores the continuation's part; its cache key and each
answer's provenance say so. The embedded Gemma vocabulary has no space prefix and keeps its tokens, keys and answers.
"""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import pytest
from conftest import need

from judgesdk.provider.protocol import GenerateRequest, Message
from judgesdk.providers.llamacpp import LlamaCppProvider
from judgesdk.providers.llamacpp.load import vocab_adds_space_prefix

need("llama_cpp")

PROMPT = [Message(role="user", content="Article: The council met.\nSummary:")]


def _tokens(provider: LlamaCppProvider, continuation: str) -> list[tuple[str, float]]:
    response = asyncio.run(provider.generate(GenerateRequest(messages=PROMPT, continuation=continuation, max_tokens=0)))
    return [(t.token, t.logprob) for t in response.continuation_tokens or []]


def test_which_vocabularies_add_a_space_prefix_read_from_the_file_as_llama_cpp_tokenizes(tiny_gguf: Path, gguf_path: Path):
    """The rule read from the metadata (no model loaded) agrees with what llama.cpp's tokenizer does with "a"."""
    from llama_cpp import Llama

    for path, expected in ((tiny_gguf, True), (gguf_path, False)):
        assert vocab_adds_space_prefix(path, kind="local") is expected
        vocab = Llama(str(path), vocab_only=True, verbose=False)
        try:
            assert vocab.detokenize(vocab.tokenize(b"a", add_bos=False, special=False)).startswith(b" ") is expected
        finally:
            vocab.close()


def test_an_unreadable_file_has_no_vocabulary_to_read(tmp_path: Path):
    from judgesdk.core.errors import UnavailableError
    from judgesdk.providers.llamacpp.load import gguf_metadata

    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + (0).to_bytes(8, "little") + (5).to_bytes(8, "little") + b"\x09")
    with pytest.raises(ValueError, match="unreadable GGUF metadata"):
        gguf_metadata(truncated, {"tokenizer.ggml.model"})
    zeros = tmp_path / "zeros.gguf"
    zeros.write_bytes(b"GGUF" + bytes(64))  # format 0
    with pytest.raises(UnavailableError, match="cannot read the vocabulary"):
        vocab_adds_space_prefix(zeros, kind="local")
    provider = LlamaCppProvider(zeros)
    assert provider.identity == f"sha256:{provider.model_sha256};build={provider.build}"  # no answer to key: none is cached


def test_a_continuation_is_scored_as_the_tokens_of_the_whole_text(tiny_gguf: Path):
    provider = LlamaCppProvider(tiny_gguf, n_threads=1)
    try:
        assert ";tokens=in-context;" in provider.identity and provider._model is None  # keyed before it loads
        scored = _tokens(provider, " The council")
        assert [token for token, _ in scored] == [" The", " council"]  # alone: " ", " The", " council"
        llm = provider._llm
        prompt = llm.tokenize(b"Article: The council met.\nSummary:", add_bos=True, special=False)
        whole = llm.tokenize(b"Article: The council met.\nSummary: The council", add_bos=True, special=False)
        assert whole[: len(prompt)] == prompt and [llm.detokenize([t]).decode() for t in whole[len(prompt) :]] == [" The", " council"]
        response = asyncio.run(provider.generate(GenerateRequest(messages=PROMPT, labels=("4", " 4"), max_tokens=0)))
        assert response.provenance["tokens"] == "in-context"
        spaced = _tokens(provider, " 4")
        assert math.isclose(response.label_logprobs[" 4"], sum(lp for _, lp in spaced), abs_tol=1e-4)  # the label where it stands
        assert response.label_logprobs["4"] != response.label_logprobs[" 4"]  # "4" right after the colon is another text
    finally:
        asyncio.run(provider.aclose())


def test_the_embedded_vocabulary_keeps_its_tokens_and_keys(local):
    assert "tokens" not in local.identity
    scored = _tokens(local, " The council")
    assert [token for token, _ in scored] == [" The", " council"]
    response = asyncio.run(local.generate(GenerateRequest(messages=PROMPT, labels=("4", " 4"), max_tokens=0)))
    assert "tokens" not in response.provenance
