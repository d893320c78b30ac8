"""Floor 2, the provider layer: one interface every model backend implements, and the behaviour stacked on it.

* :mod:`~judgesdk.provider.protocol`: the interface. A :class:`Provider` turns a typed
  :class:`GenerateRequest` (generation, top-k logprobs, exact label scoring, continuation log-likelihood)
  into a typed :class:`GenerateResponse`, and declares its :class:`Capabilities`.
* :mod:`~judgesdk.provider.decisions`: decision requests (an input and typed questions, answered with the
  server's own probabilities) as the protocol carries them; their wire mappings live with the adapters.
* :mod:`~judgesdk.provider.registry`: provider kinds by name and each adapter's :class:`ProviderSpec`: its typed
  options, default model, capabilities, pricing, the ``api`` values it takes, the options that cannot change an
  answer (with the reason) and how it is detected; third-party kinds through entry points.
* :mod:`~judgesdk.provider.detection`: the detected chain (no providers configured), read from the specs without
  importing an adapter.
* :mod:`~judgesdk.provider.pricing`: what tokens cost (LiteLLM's price map offline, or configured prices).
* :mod:`~judgesdk.provider.settings`: one provider's config (``[[providers]]``) and the cache's (``[cache]``).
* :mod:`~judgesdk.provider.layers`: the wrappers, one behaviour each (witness, coalescing, cache, retry,
  overload guard, budget, batch deferral, rate limit).
* :mod:`~judgesdk.provider.stack`: the one function that puts them in order over an adapter.

The adapters themselves (one module per API) live in the repository's top-level ``providers/`` folder,
installed as :mod:`judgesdk.providers`, one floor up: they import this floor, never the other way (the
registry names them as ``"module:attribute"`` strings and imports one when its kind is used).

May import: :mod:`judgesdk.core`.
"""

from __future__ import annotations

from judgesdk.provider.protocol import (
    Capabilities,
    Choice,
    GenerateRequest,
    GenerateResponse,
    Message,
    Provider,
    TokenLogprob,
    TopLogprob,
    Usage,
    WrapperProvider,
    find_layer,
    identity_of,
    settings_of,
    unwrap,
)
from judgesdk.provider.registry import (
    Pricing,
    ProviderOptions,
    ProviderSettings,
    ProviderSpec,
    provider_kinds,
    provider_spec,
    register,
    unregister,
)

__all__ = [
    "Capabilities",
    "Choice",
    "GenerateRequest",
    "GenerateResponse",
    "Message",
    "Pricing",
    "Provider",
    "ProviderOptions",
    "ProviderSettings",
    "ProviderSpec",
    "TokenLogprob",
    "TopLogprob",
    "Usage",
    "WrapperProvider",
    "find_layer",
    "identity_of",
    "settings_of",
    "provider_kinds",
    "provider_spec",
    "register",
    "unregister",
    "unwrap",
]
