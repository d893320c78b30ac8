"""Answer formats as GBNF grammars, and the one repair of an answer that still does not parse.

A small base model asked to write a score mostly writes something else (benchmarks/README.md, issue 4:
direct, RTS and Fusion-Eval came back ``unparsed`` on the embedded model). A provider that declares
``Capabilities.grammar`` can be made to generate only text in the verdict format the parser reads
(:mod:`judgesdk.estimation.parsing`), so every answer holds a score on the criterion's scale. The grammars are built
from the scale's labels, so any scale works (Likert, letters, words):

* ``direct`` and ``fusion``: the score alone, as the continuation of the template's answer prefix
  (``Score (1-5):``; Fusion-Eval's ``<criterion>\\nScore:``). Fusion-Eval's output template goes on with
  ``Explanation: ...``, which is not generated: the score is sampled before it, so an explanation cannot
  change it, costs tokens on each of the k predictions, and numbers in it could mislead the parser.
* ``rts``: one sentence of reasoning (no line break, ending at its first ``.``, ``!`` or ``?``, at most
  as many characters as leave room for the score line within ``max_tokens``: a token is at least one
  character of ASCII text), then ``\\nFinal score: <label>``, which the parser reads as the last marked
  number (001 Tables 26-27's "Final score: 4."). On a scale of words or letters the line is
  ``Final answer: <label>``, which :func:`judgesdk.estimation.parsing.parse_choice` reads as an explicit answer
  (it would not read "Final score: A"); the repair's line is "Answer:" there for the same reason.

A constrained answer can still fail to parse: cut by ``max_tokens`` (text outside ASCII can take several
tokens per character), or from a backend that declared the capability and ignored the grammar. It is then
asked once more: the answer so far and the format's score line (``closing``) are prefilled and only the
score may follow. If that fails too the result is ``unparsed``, never a number made up. :class:`FormatUse`
records, per result, that a grammar was used and whether a repair happened.

Grammars are only sent to providers that declare the capability (:func:`format_for`); a method option
``grammar = false`` turns them off, to compare with free generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from judgesdk.core import InputError, Scale
from judgesdk.provider import GenerateRequest, GenerateResponse, Message, Provider

FormatName = Literal["direct", "rts", "fusion"]
RTS_CLOSING = "\nFinal score:"
SCORE_CLOSING = "\nScore:"
CHOICE_CLOSINGS = {RTS_CLOSING: "\nFinal answer:", SCORE_CLOSING: "\nAnswer:"}  # the same lines on label scales
SENTENCE_ENDS = ".!?"


def literal(text: str) -> str:
    """``text`` as a GBNF string literal."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    return f'"{escaped}"'


def labels_rule(scale: Scale) -> str:
    """An alternation of the scale's labels, longest first (a fixed order; GBNF tries every alternative)."""
    labels = sorted(dict.fromkeys(scale.labels), key=lambda label: (-len(label), label))
    return "(" + " | ".join(literal(label) for label in labels) + ")"


def score_grammar(scale: Scale) -> str:
    """One label of ``scale``, optionally after a space: the continuation of a ``Score:`` prefix."""
    return f'root ::= " "? score\nscore ::= {labels_rule(scale)}\n'


def closing_line(scale: Scale, closing: str) -> str:
    """``closing`` (a score line's marker) as the parser reads it on ``scale``: numbers after "Score:",
    words and letters after "Answer:"."""
    return closing if all(_is_number(label) for label in scale.labels) else CHOICE_CLOSINGS[closing]


def _is_number(label: str) -> bool:
    try:
        float(label)
    except ValueError:
        return False
    return True


def rts_grammar(scale: Scale, max_tokens: int) -> str:
    """One sentence of reasoning, then ``\\nFinal score: <label>``, within ``max_tokens`` tokens of ASCII text.

    The reasoning may be empty only when ``max_tokens`` leaves no room for it."""
    line = closing_line(scale, RTS_CLOSING)
    tail = len(line) + 1 + max(len(label) for label in scale.labels)  # "\nFinal score: 10"
    room = max_tokens - tail - 2  # the leading space and the sentence's end
    if room < 1:
        return f"root ::= {literal(line.lstrip() + ' ')} score\nscore ::= {labels_rule(scale)}\n"
    return (
        f'root ::= " "? reason [{SENTENCE_ENDS}] {literal(line + " ")} score\n'
        f"reason ::= [^\\n{SENTENCE_ENDS}]{{1,{room}}}\n"
        f"score ::= {labels_rule(scale)}\n"
    )


class AnswerFormat(BaseModel):
    """A method's verdict format: the grammar of the whole answer and how a failed answer is repaired."""

    model_config = ConfigDict(frozen=True)

    name: FormatName
    grammar: str
    closing: str  # the score line's marker, prefilled after a failed answer's text before the repair
    repair_grammar: str  # what the repair may generate: the score alone
    repair_max_tokens: int


class FormatUse(BaseModel):
    """What a result's answers went through: ``answers`` generated under the grammar, ``repairs`` of them
    asked once more, ``repaired`` of those that then parsed."""

    format: FormatName
    answers: int = 0
    repairs: int = 0
    repaired: int = 0

    def note(self) -> str:
        text = f"answers constrained by the {self.format} grammar (GBNF): {self.answers}"
        if self.repairs:
            text += f"; {self.repairs} failed to parse and were asked once more, {self.repaired} then parsed"
        return text


def answer_format(name: FormatName, scale: Scale, *, max_tokens: int = 8) -> AnswerFormat:
    """The verdict format of method ``name`` on ``scale`` (module docstring); ``max_tokens`` bounds RTS's reasoning."""
    score = score_grammar(scale)
    repair_tokens = 2 + max(len(label) for label in scale.labels)  # a space and the label, one token a character at worst
    if name == "rts":
        closing = closing_line(scale, RTS_CLOSING)
        return AnswerFormat(name=name, grammar=rts_grammar(scale, max_tokens), closing=closing, repair_grammar=score, repair_max_tokens=repair_tokens)
    if name in ("direct", "fusion"):
        closing = closing_line(scale, SCORE_CLOSING)
        return AnswerFormat(name=name, grammar=score, closing=closing, repair_grammar=score, repair_max_tokens=repair_tokens)
    raise InputError(f"no answer format for method {name!r}: use direct, rts or fusion")


def format_for(
    name: FormatName, provider: Provider, scale: Scale, extra: Mapping[str, Any], *, max_tokens: int = 8
) -> AnswerFormat | None:
    """The format to constrain method ``name``'s answers to, or None: the provider cannot honour a grammar,
    or the method option ``grammar`` is false.

    ``provider``: who will answer (its ``capabilities.grammar`` decides); ``scale``: the labels the grammar allows;
    ``extra``: the method's options, read for ``grammar`` (true by default; anything but a bool is an
    :class:`InputError`); ``max_tokens``: bounds RTS's reasoning (:func:`answer_format`)."""
    wanted = extra.get("grammar", True)
    if not isinstance(wanted, bool):
        raise InputError(f"method option grammar is true or false (constrain answers to the verdict format), got {wanted!r}")
    if not wanted or not provider.capabilities.grammar:
        return None
    return answer_format(name, scale, max_tokens=max_tokens)


def repair_request(request: GenerateRequest, answer: str, fmt: AnswerFormat) -> tuple[GenerateRequest, str]:
    """The one repair of ``answer`` to ``request``: its text so far and the score line prefilled (after the
    template's own answer prefix, if any), only a score allowed after it. Returns the request and the
    prefilled text, which the repaired answer is read after. A blank answer is asked again, with room
    for the score (a prefilled bare closing line would only repeat the prefix)."""
    head = answer.rstrip()
    continued = head + fmt.closing if head else ""
    messages = list(request.messages)
    prefill = messages.pop().content if messages and messages[-1].role == "assistant" else ""
    if prefill + continued:
        messages.append(Message(role="assistant", content=prefill + continued))
    update = {"messages": tuple(messages), "grammar": fmt.repair_grammar, "max_tokens": fmt.repair_max_tokens, "n": 1}
    return request.model_copy(update=update), continued


async def repair(provider: Provider, request: GenerateRequest, answer: str, fmt: AnswerFormat) -> tuple[GenerateResponse, str]:
    """Ask once more for ``answer`` (see :func:`repair_request`); the response and the whole repaired text.

    ``provider``: who is asked again; ``request``: the request ``answer`` answered; ``fmt``: the answer format
    whose repair grammar and token bound the new request uses."""
    repaired, continued = repair_request(request, answer, fmt)
    response = await provider.generate(repaired)
    return response, continued + (response.choices[0].text if response.choices else "")
