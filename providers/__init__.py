"""Floor 3, the adapters (installed as :mod:`judgesdk.providers`): one module per backend API.

Each adapter turns :class:`judgesdk.provider.GenerateRequest` into its API's call and the answer back into a
:class:`judgesdk.provider.GenerateResponse`, knows nothing of scoring, declares itself to the registry as a
``PROVIDER`` (:class:`judgesdk.provider.registry.ProviderSpec`) and imports its SDK only when its kind is
used. Sibling modules import each other relatively (``from ._sdk import classify``), so that the imports
resolve to these files on disk as well as after installation.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider` (and, for the batch backends, its ``layers.batch``).
"""
