#!/usr/bin/env bash
# Installs every system package kforge needs to build, run and test, on Debian 12 or Ubuntu 24.04.
# With --torch, also a Python environment with PyTorch in .venv at the top of the tree (about 5 GB
# from PyPI; PyPI's wheels carry CUDA's libraries, and run on the CPU where there is no GPU): the
# PyTorch references of imported tasks and `kforge import` use it, and the tests need it; and NVIDIA's
# SASS disassembler (nvdisasm) there, for the SASS view where the CUDA toolkit lacks one.
# Idempotent: what is present already is left as it is.
set -euo pipefail

with_torch=0
for arg in "$@"; do
  case "$arg" in
    --torch) with_torch=1 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kforge: install-deps.sh: unknown option '$arg' (known: --torch)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev
  libqscintilla2-qt6-dev libqcustomplot-dev
  libsqlite3-dev libcurl4-openssl-dev
  libmuparser-dev nlohmann-json3-dev libdtl-dev qtkeychain-qt6-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  xvfb xauth
  dpkg-dev desktop-file-utils appstream librsvg2-bin
  python3 python3-venv python3-dev
  clang-format-14 clang-tidy-14
  openssh-client openssh-server
  munge slurmctld slurmd slurm-client
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "kforge: all ${#packages[@]} system packages already installed"
else
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "kforge: need root to install: ${missing[*]}" >&2; exit 1
    fi
  fi
  echo "kforge: installing ${#missing[@]} package(s): ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "kforge: system packages installed"
fi

if [ "$with_torch" -eq 1 ]; then
  venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
  if [ -x "$venv/bin/python3" ] && "$venv/bin/python3" -c "import torch, numpy" >/dev/null 2>&1; then
    echo "kforge: PyTorch already in $venv ($("$venv/bin/python3" -c 'import torch; print(torch.__version__)'))"
  else
    echo "kforge: installing PyTorch into $venv (about 5 GB from PyPI; a few minutes)"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check torch numpy
    echo "kforge: PyTorch $("$venv/bin/python3" -c 'import torch; print(torch.__version__)') installed in $venv"
  fi
  # NVIDIA's SASS disassembler (5 MB), for the workbench's SASS view where the CUDA toolkit has no
  # nvdisasm of its own; the CUDA worker finds it through the build.
  if ! compgen -G "$venv/lib/python3*/site-packages/nvidia/cu*/bin/nvdisasm" >/dev/null; then
    echo "kforge: installing nvdisasm into $venv"
    "$venv/bin/python3" -m pip install -q --disable-pip-version-check nvidia-cuda-nvdisasm
  fi
fi
