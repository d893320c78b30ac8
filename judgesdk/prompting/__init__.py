"""Floor 3, prompting: what a judge is shown. Templates as data, fences around judged text, criteria presets.

* :mod:`~judgesdk.prompting.templates`: prompt templates (TOML files with an id, a version and a content
  hash) and their rendering; the bundled ones are the repository's top-level ``prompts/`` folder, installed
  as the data package :mod:`judgesdk.prompts`.
* :mod:`~judgesdk.prompting.fences`: judged text can neither close its fence nor forge the answer line.
* :mod:`~judgesdk.prompting.presets`: the published criteria (definitions, scales) of SummEval,
  TopicalChat, HANNA and NewsRoom (``presets_data/``).

Also here: :mod:`~judgesdk.prompting.injection`, judged text that talks to the judge: a review flag, never a silent score.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider` (its message type), :mod:`judgesdk.prompts`.
"""
