#!/bin/sh
# What the rest window costs a sweep of one thread count: `perfkit run sysbench` with `--rest 2` (the
# default) against `--rest 0`, as whole processes, paired A B A B by farm-bench (the tool library's
# timer). Needs the lab MariaDB (scripts/lab.sh). Results: docs/benchmarks.md, "run: the rest window".
#   sh scripts/bench_rest.sh [RUNS]
set -eu
PERFKIT_MYSQL_PASSWORD=$(sed -n 's/^mysql-password=//p' /var/lib/perfkit-lab/sb.cfg)
export PERFKIT_MYSQL_PASSWORD
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sweep="perfkit run sysbench --mysql-user perfkit --tables 2 --table-size 10000 --threads 4 --time 3"
sweep="$sweep --workload oltp_point_select --no-report"
farm-bench -n "${1:-5}" --timeout 600 \
  --vs "sh -c 'rm -rf $dir/b; $sweep --rest 0 -o $dir/b'" \
  -- sh -c "rm -rf $dir/a; $sweep --rest 2 -o $dir/a"
