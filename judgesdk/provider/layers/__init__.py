"""The provider wrappers: one behaviour each, around any :class:`~judgesdk.provider.protocol.Provider`.

Each is a small :class:`~judgesdk.provider.protocol.WrapperProvider` that adds one thing and delegates the
rest. From the outside in, as :func:`judgesdk.provider.stack.assemble` stacks them (the only place that
does):

=================  ===========================================================================
``witness``        records the calls of the item being judged, for its provenance
``coalesce``       identical requests in flight at once become one call
``cache``          the disk cache, keyed on everything that changes an answer
``retry``          one retry policy for every backend (typed errors decide)
``breaker``        adaptive concurrency and a circuit breaker: timeouts shrink the load
``budget``         a token/USD cap checked before each call (and the estimate's spend meter)
``batch``          defers cache misses to a batch API (offline runs)
``answers``        a 200 that is no answer (no choices, logprobs above 0) is a retryable error
``ratelimit``      in-flight bound, RPM/TPM buckets, back-off on 429s, a pool of SDK clients
=================  ===========================================================================

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider` (protocol, registry, pricing).
"""
