"""judgesdk: judge generated text with language models, honestly."""

from judgesdk.errors import (
    AuthError,
    ConfigError,
    InputError,
    JudgeSDKError,
    PermanentError,
    ProviderError,
    RateLimitError,
    TransientError,
)
from judgesdk.types import Criterion, JudgeResult, LabelDistribution, Scale

__version__ = "0.1.0"

__all__ = [
    "AuthError",
    "ConfigError",
    "Criterion",
    "InputError",
    "JudgeResult",
    "JudgeSDKError",
    "LabelDistribution",
    "PermanentError",
    "ProviderError",
    "RateLimitError",
    "Scale",
    "TransientError",
]
