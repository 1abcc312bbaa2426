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

echo "test: Python (pytest)"
.venv/bin/python -m pytest tests -q -p no:cacheprovider "$@"
