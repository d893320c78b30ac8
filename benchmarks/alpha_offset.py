"""What Krippendorff's alpha (interval) says about a judge that scores a constant offset from the others, and
about judges that disagree in order (issue 28, item 7): figures for README.md's jury section, computed with
judgesdk's own ``judgesdk.jury.consensus.interval_alpha`` and with the maintained ``krippendorff`` package.

    .venv/bin/python benchmarks/alpha_offset.py
"""

from __future__ import annotations

from importlib import metadata

import krippendorff
import numpy as np

from judgesdk.jury import interval_alpha
from judgesdk.meta import load_dataset, shared_data_dir


def main() -> int:
    spread = np.tile([2.0, 3.0, 4.0, 5.0], 25)  # 100 items spread over 2-5, so one point lower stays on 1-5
    cases = {
        "2 judges, one a point lower throughout (100 items, 25 each at 2, 3, 4, 5)": np.vstack([spread, spread - 1]),
        "3 judges, one a point lower throughout (the same items)": np.vstack([spread, spread, spread - 1]),
        "3 judges, one two points lower throughout (items at 3, 4, 5)": np.vstack([np.tile([3.0, 4.0, 5.0], 33)] * 2 + [np.tile([1.0, 2.0, 3.0], 33)]),
        "2 judges in opposite order (the second scores 6 - the first; items 1-5, 20 each)": np.vstack([np.repeat([1.0, 2, 3, 4, 5], 20), 6 - np.repeat([1.0, 2, 3, 4, 5], 20)]),
    }
    if shared_data_dir() is not None:
        coherence = np.array([r.scores["coherence"] for r in load_dataset("summeval")])
        cases["3 judges on SummEval coherence's 1,600 expert means, one a point lower throughout"] = np.vstack([coherence, coherence, coherence - 1])
    print(f"krippendorff {metadata.version('krippendorff')}\n")
    print("| case | alpha (judgesdk.jury) | alpha (krippendorff) |")
    print("| --- | --- | --- |")
    for name, data in cases.items():
        ours = interval_alpha(data)
        theirs = float(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))
        assert ours is not None and abs(ours - theirs) < 1e-9, (name, ours, theirs)
        print(f"| {name} | {ours:.3f} | {theirs:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
