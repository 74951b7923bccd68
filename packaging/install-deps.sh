#!/usr/bin/env bash
# Installs every system package kforge needs to build, run and test, on Debian 12 or Ubuntu 24.04.
# Idempotent: when everything is present it prints one line and changes nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev
  libqscintilla2-qt6-dev libqcustomplot-dev
  libsqlite3-dev libcurl4-openssl-dev
  libmuparser-dev nlohmann-json3-dev libdtl-dev qtkeychain-qt6-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  xvfb xauth
  clang-format-14 clang-tidy-14
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "kforge: all ${#packages[@]} system packages already installed"
  exit 0
fi

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
