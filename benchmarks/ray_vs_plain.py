"""Plain `judgesdk score` against `--engine ray` on a hosted-style job (issue 30, item 3): N items judged with
geval through the ``openai`` provider against a loopback server answering each request after 50 ms
(tests/support/latency_server.py), both timed from outside as a user would (wall clock of the command).

    python benchmarks/ray_vs_plain.py --items 240 [--latency 0.05] [--concurrency 8] [--repeat 1]

Prints one JSON line per (engine, items, repeat): exit code, wall seconds, rows written, the requests the server
answered, and the machine's 1-minute load average when the command ended (the machine is shared). Ray is started by the command itself (a local instance: its start-up
is part of the cost a user pays). The table in benchmarks/README.md ("Plain against Ray") came from it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def write_items(path: Path, count: int) -> None:
    path.write_text("".join(json.dumps({"id": f"i{n}", "source": f"Article {n // 8}.", "output": f"Summary number {n}."}) + "\n" for n in range(count)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, nargs="+", default=[240])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--engines", nargs="+", default=["plain", "ray"])
    args = parser.parse_args()

    from support.latency_server import LatencyServer

    work = Path(tempfile.mkdtemp(prefix="judgesdk-ray-vs-plain-"))
    with LatencyServer(latency=args.latency) as server:
        config = work / "judge.toml"
        config.write_text(
            f'method = "geval"\nconcurrency = {args.concurrency}\n[cache]\nenabled = false\n[retry]\nmax_attempts = 1\n'
            f'[[providers]]\nkind = "openai"\nmodel = "m"\nbase_url = "{server.base_url}"\n'
        )
        for count in args.items:
            items = work / f"items-{count}.jsonl"
            write_items(items, count)
            for repeat in range(args.repeat):
                for engine in args.engines:
                    out = work / f"{engine}-{count}-{repeat}" if engine == "ray" else work / f"{engine}-{count}-{repeat}.jsonl"
                    command = [str(Path(sys.executable).with_name("judgesdk")), "score", str(items), "-o", str(out), "--config", str(config),
                               "--criterion", "coherence", "--quiet"] + (["--engine", "ray"] if engine == "ray" else [])  # fmt: skip
                    before = server.answered()
                    started = time.monotonic()
                    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
                    wall = time.monotonic() - started
                    if done.returncode != 0:
                        print(done.stderr[-2000:], file=sys.stderr)
                    files = sorted(out.glob("*.jsonl")) if out.is_dir() else [out] if out.exists() else []
                    rows = sum(len(f.read_text().splitlines()) for f in files)
                    print(json.dumps({
                        "engine": engine, "items": count, "repeat": repeat, "exit": done.returncode, "wall_s": round(wall, 2),
                        "rows": rows, "requests": server.answered() - before, "load_1min": os.getloadavg()[0],
                    }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
