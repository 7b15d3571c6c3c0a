#!/usr/bin/env bash
# THE test command (README): provision the lab, build the Go load generators, install perfkit, lint,
# run every tier (unit on every CPU, then lab and slow).
#
#   bash scripts/test.sh                     everything
#   bash scripts/test.sh -m "not slow"       extra arguments go to pytest
#   bash scripts/test.sh -k sysbench
#
# Needs root on Debian 12 (scripts/lab.sh installs and starts MariaDB, sysbench, sysstat ...).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '[test] %s\n' "$*"; }

step "lab: scripts/lab.sh"
bash scripts/lab.sh
# On CI's throwaway machine, stop what the lab started (by pid file) however the run ends.
if [[ "${CI:-}" == "true" ]]; then trap 'bash scripts/lab.sh stop' EXIT; fi

step "go tools: scripts/go_tools.sh (go-tpc, go-ycsb for the slow tier; cached)"
bash scripts/go_tools.sh

step "install: pip install -e '.[dev]'"
python3 -m pip install -q --root-user-action=ignore -e '.[dev]'

step "lint: ruff check + ruff format --check"
python3 -m ruff check .
python3 -m ruff format --check .

rc=0
if (($# == 0)); then
    # the unit tier on every CPU (pytest-xdist); the lab and slow tiers one test at a time, since they
    # measure this machine and a neighbour test's load would move their figures
    step "tests: pytest -m 'not lab and not slow' -n auto"
    python3 -m pytest -q -n auto -m "not lab and not slow" || rc=$?
    step "tests: pytest -m 'lab or slow'"
    lab=0
    python3 -m pytest -q --durations=25 -m "lab or slow" || lab=$?  # the slowest: keep the suite well under 20 min
    ((rc != 0)) || rc=$lab
else
    step "tests: pytest $*"
    python3 -m pytest -q --durations=15 "$@" || rc=$?
fi
# pytest exit 5 means "no tests collected": we always have tests, so that is a failure too
((rc != 5)) || step "pytest collected no tests"
((rc == 0)) || step "FAILED (pytest exit $rc)"
exit "$rc"
