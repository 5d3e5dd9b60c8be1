#!/usr/bin/env bash
# Footprint benchmark of the informer cache against a real API server (`scripts/bench kube`).
#
#   bench/kube/run.sh [kube_footprint flags...]     e.g. --pods 20000 --nodes 2000
#   BENCH_BUILD_DIR=DIR   Release build directory holding bench/kube/kube_footprint
#                         (default build/release; built here unless BENCH_NO_BUILD is set)
#   KEEP_CLUSTER=1        leave the cluster running afterwards
#   REUSE_CLUSTER=1       use the cluster a KEEP_CLUSTER run left, if it still runs (then pass
#                         --skip-create: the objects are there already)
#
# Starts etcd + kube-apiserver with tools/k8s/cluster.py in <build>/kube/footprint, creates the
# objects, measures (see bench/kube/kube_footprint.cc), and stops the cluster. Results:
#   <build>/bench-results/kube_footprint.json   and   .md (the markdown table)
#   <build>/bench-results/kube_footprint-pages/ (the list pages, for --decode-only comparisons)
set -euo pipefail
cd "$(dirname "$0")/../.."

build="${BENCH_BUILD_DIR:-build/release}"
if [ -z "${BENCH_NO_BUILD:-}" ] && [ -z "${BENCH_BUILD_DIR:-}" ]; then
  cmake --preset release >/dev/null
  cmake --build --preset release -j "$(nproc)" --target kube_footprint
fi
exe="$build/bench/kube/kube_footprint"
[ -x "$exe" ] || { echo "bench/kube/run.sh: $exe not built" >&2; exit 1; }
results="$build/bench-results"
dir="$(pwd)/$build/kube/footprint"
mkdir -p "$results"

if [ -n "${REUSE_CLUSTER:-}" ] && python3 tools/k8s/cluster.py status --dir "$dir" >/dev/null; then
  echo "reusing the cluster in $dir"
else
  python3 tools/k8s/cluster.py up --dir "$dir" >/dev/null
fi
if [ -z "${KEEP_CLUSTER:-}" ]; then
  trap 'python3 tools/k8s/cluster.py down --dir "$dir"' EXIT
fi
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "== kube_footprint (commit $commit, load average: $(cut -d' ' -f1-3 /proc/loadavg))"
KUBECONFIG="$dir/kubeconfig" "$exe" --json "$results/kube_footprint.json" \
  --save-pages "$results/kube_footprint-pages" "$@" | tee "$results/kube_footprint.md"
echo "Results: $results/kube_footprint.json"
