#!/usr/bin/env bash
# The README's test command on a fresh clone while two CPU-bound `judgesdk score` runs on the embedded model
# run beside it (issue 28, item 6): does the suite pass on a busy machine, and how long does it take?
#
#   benchmarks/suite_under_load.sh [SOURCE] [WORKDIR]
#
# SOURCE: what to clone (default: this checkout; commit first: a clone has only committed work).
# WORKDIR: where the clone, its .venv and the logs go (default: a new folder under /tmp); kept afterwards.
# LOADS=0 runs the same suite with nothing beside it (the idle-machine time); LOADS=N runs N loads.
# PYTEST_ARGS (default empty: the whole suite, as the README runs it) narrows the run, e.g. to try the script.
#
# Steps: `git clone`; the README's first command's install (`python3 -m venv .venv && .venv/bin/pip install -e
# '.[all,dev]'`, not timed: pip's wheel cache makes it minutes, not the first build's 8-10); N loads, each a
# loop of `judgesdk score examples/summaries.jsonl --config examples/local.toml --criterion consistency
# --no-cache` (the README's first command without the cache, so every pass computes), started in their own
# process group; then the README's second command, `.venv/bin/python -m pytest`, timed; the loads are stopped
# (their process groups, by id) whatever the suite did. Prints the wall time, the load average and pytest's
# summary line; exits with pytest's status.
set -uo pipefail

SOURCE="${1:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)}"
WORK="${2:-$(mktemp -d /tmp/judgesdk-suite-under-load.XXXXXX)}"
LOADS="${LOADS:-2}"
CLONE="$WORK/judgesdk"
mkdir -p "$WORK"

echo "clone: $SOURCE -> $CLONE"
git clone --quiet "$SOURCE" "$CLONE" || exit 3
cd "$CLONE" || exit 3
echo "commit: $(git rev-parse --short HEAD)"
echo "install (README, command 1): $WORK/install.log"
{ python3 -m venv .venv && .venv/bin/pip install -q --upgrade pip && .venv/bin/pip install -q -e '.[all,dev]'; } >"$WORK/install.log" 2>&1 \
    || { echo "install failed: see $WORK/install.log"; exit 3; }

pids=()
stop_loads() {
    for pid in "${pids[@]}"; do
        kill -- "-$pid" 2>/dev/null  # the load's own process group (setsid below): the loop and its judgesdk
    done
    pids=()
}
trap stop_loads EXIT INT TERM

for i in $(seq 1 "$LOADS"); do
    setsid bash -c 'n=0; while :; do
        if .venv/bin/judgesdk score examples/summaries.jsonl --config examples/local.toml --criterion consistency --no-cache --quiet \
            >/dev/null 2>>"$0"; then n=$((n + 1)); echo "pass $n done $(date -u +%T)" >>"$0"
        else echo "failed $(date -u +%T)" >>"$0"; sleep 5; fi
    done' "$WORK/load-$i.log" &
    pids+=("$!")
done
[ "$LOADS" -gt 0 ] && sleep 20  # let the loads load their model and reach the CPU-bound part

echo "loads: $LOADS ($(printf '%s ' "${pids[@]}")); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "suite (README, command 2): .venv/bin/python -m pytest ${PYTEST_ARGS:-} > $WORK/pytest.log"
started=$(date +%s)
# shellcheck disable=SC2086  # PYTEST_ARGS is a list of arguments
.venv/bin/python -m pytest ${PYTEST_ARGS:-} >"$WORK/pytest.log" 2>&1
status=$?
ended=$(date +%s)
after="$(cut -d' ' -f1-3 /proc/loadavg)"
stop_loads
for i in $(seq 1 "$LOADS"); do
    echo "load $i: $(grep -c '^pass' "$WORK/load-$i.log" 2>/dev/null) passes of judgesdk score, $(grep -c '^failed' "$WORK/load-$i.log" 2>/dev/null) failed"
done
wall=$((ended - started))
echo "wall: ${wall} s ($((wall / 60)) min $((wall % 60)) s); load average after: $after"
echo "pytest: $(tail -n 1 "$WORK/pytest.log")"
exit "$status"
