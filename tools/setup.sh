#!/usr/bin/env bash
# Install what the project needs on a Debian/Ubuntu machine; idempotent (skips what is present).
#   apt: cross compiler, newlib, QEMU, TTS engines for the built-in data set, python3-venv, and
#        what checks a board image (dosfstools, mtools, u-boot-tools, openocd); tools/uboot.sh
#        installs U-Boot's own build dependencies when it first builds U-Boot
#   pip: a virtual environment in .venv with torch==2.13.0 (CPU build) and the project
#   the memory model's QEMU plugin (tools/build_qemu_plugin.sh: the plugin API header from
#        Debian's qemu source package; absent with its reason when that cannot be had)
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi qemu-system-arm
              espeak-ng flite festival festvox-kallpc16k gcc make
              dosfstools mtools u-boot-tools openocd)
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_PIN="torch==2.13.0"

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ! "$PYTHON" -c "import venv, ensurepip" 2>/dev/null; then
    missing+=(python3-venv)
fi
if ((${#missing[@]})); then
    echo "setup: installing Debian packages: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# the memory model's QEMU plugin (measure/bench_memory.py): built here, or its reason recorded
bash tools/build_qemu_plugin.sh

stamp="$VENV/.setup-stamp"
want="$(sha256sum pyproject.toml tools/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --upgrade pip
# Pinned first: a bare `torch` requirement would pull a multi-GB CUDA build.
"$VENV/bin/python" -c "import torch" 2>/dev/null || "$VENV/bin/python" -m pip install -q "$TORCH_PIN"
"$VENV/bin/python" -m pip install -q -e ".[test]"
echo "$want" > "$stamp"
echo "setup: $VENV ready ($("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
