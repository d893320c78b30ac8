"""Floor 10, the bill before the run: what judging some items would ask of the model, found without calling it.

* :mod:`~judgesdk.forecast.job`: :func:`forecast` runs the job through the real scorers on a judge whose
  provider is a stand-in, and sets an estimate beside what a run then spent (:class:`Beside`).
* :mod:`~judgesdk.forecast.planner`: the stand-in provider: records every request, answers without a model.
* :mod:`~judgesdk.forecast.kv_replay`: the local model's prefix reuse replayed on token lists.
* :mod:`~judgesdk.forecast.tokens`: counting prompt tokens, with the provider's own tokenizer where local.
* :mod:`~judgesdk.forecast.bill`: the estimate as data, on disk and on screen.

May import: every floor up to :mod:`judgesdk.judging` (it judges with a stand-in provider).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.forecast.job import (
        CHARS_PER_TOKEN,
        Beside,
        Forecast,
        PlanningProvider,
        ProviderForecast,
        ProviderSpend,
        SpendMeter,
        aforecast,
        compare_rows,
        estimate_path,
        fingerprint,
        forecast,
        label_paths,
        load_saved,
        save,
        table,
        todo_items,
    )

__all__ = [
    "aforecast",
    "Beside",
    "CHARS_PER_TOKEN",
    "compare_rows",
    "estimate_path",
    "fingerprint",
    "Forecast",
    "forecast",
    "label_paths",
    "load_saved",
    "PlanningProvider",
    "ProviderForecast",
    "ProviderSpend",
    "save",
    "SpendMeter",
    "table",
    "todo_items",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("Beside", "CHARS_PER_TOKEN", "Forecast", "PlanningProvider", "ProviderForecast", "ProviderSpend", "SpendMeter", "aforecast", "compare_rows", "estimate_path", "fingerprint", "forecast", "label_paths", "load_saved", "save", "table", "todo_items",), "judgesdk.forecast.job"),
    },
    globals(),
)
