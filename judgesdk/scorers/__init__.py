"""Scorer strategies: each builds prompts from a template, asks for a label distribution or a
generation, and returns a :class:`judgesdk.types.JudgeResult`. Shared steps live in ``common``."""
