#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), installs the benchmarks' own
# requirements (JAX, for bench_gpt.py's JAX contender) into .venv, and runs the
# benchmarks: bench_core.py, then bench_gpt.py on the small and the large
# config. Arguments, when given, go to one bench_gpt.py run instead, e.g.
#   scripts/bench.sh --config small --steps 10
# The figures are only comparable within one run: read the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
V=.venv/bin
# torch pinned in the same pip command so the requirements cannot move it.
if ! $V/python -c "import jax" 2>/dev/null; then
  echo "bench: installing benchmarks/requirements.txt into .venv"
  $V/pip install -q torch==2.13.0 -r benchmarks/requirements.txt
fi
# On some processors OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are set for old
# OpenBLAS builds; they slow a current numpy. Unset them for the benchmark
# commands only (never for tests), and only when they are set.
run() {
  if [ -n "${OPENBLAS_CORETYPE+x}${OPENBLAS_L2_SIZE+x}" ]; then
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"
  else
    "$@"
  fi
}
echo "bench: benchmarks/bench_core.py"
run $V/python benchmarks/bench_core.py
echo
if [ $# -gt 0 ]; then
  echo "bench: benchmarks/bench_gpt.py $*"
  run $V/python benchmarks/bench_gpt.py "$@"
else
  for config in small large; do
    echo "bench: benchmarks/bench_gpt.py --config $config"
    run $V/python benchmarks/bench_gpt.py --config $config
    echo
  done
fi
