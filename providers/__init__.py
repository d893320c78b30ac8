"""Adapters, one module per backend API. Each knows its API and nothing of scoring."""
