"""Fitted fused judges shipped with the package (JSON, judgesdk.fused.model)."""
