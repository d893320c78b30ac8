"""Floor 3, the bundled prompt templates (installed as the data package :mod:`judgesdk.prompts`): TOML files,
one folder per family; ``README.md`` maps every template to the paper and table it comes from. Loaded by
:mod:`judgesdk.prompting.templates`.

May import: nothing (data only).
"""
