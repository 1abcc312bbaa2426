#!/usr/bin/env bash
# Sets everything up, then runs every test: the C++ suites of pjrt/, hlo/ and
# graph/ through CTest, and the Python suites through pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCHTPU_WITH_GTEST=1 scripts/setup.sh

echo "test: C++ (CTest)"
cmake -S . -B build/cpp -G Ninja -DTORCHTPU_BUILD_PYTHON=OFF \
  -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build/cpp -j2
(cd build/cpp && ctest --output-on-failure -j2)

# One pytest worker per core (pytest-xdist), at most 8: most of the suite's
# time is the plugin compiling programs, one core per process, so a single
# process took an hour and a half on 2 cores and an hour with two workers.
# TORCHTPU_TEST_JOBS=1 runs it in one process (-n 0).
jobs=${TORCHTPU_TEST_JOBS:-$(nproc)}
[ "$jobs" -gt 8 ] && jobs=8
[ "$jobs" -le 1 ] && jobs=0
echo "test: Python (pytest, $jobs workers)"
.venv/bin/python -m pytest tests -q -p no:cacheprovider -n "$jobs" "$@"
