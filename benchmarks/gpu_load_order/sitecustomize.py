"""Runs the probe's prelude (``PROBE_PRELUDE`` names one in preludes.py) before anything else in the process:
Python imports ``sitecustomize`` at start-up, and probe.sh puts this folder first on ``PYTHONPATH``."""

import os

_name = os.environ.get("PROBE_PRELUDE")
if _name:
    import preludes

    exec(preludes.PRELUDES[_name], {})
