#!/usr/bin/env bash
# Install what the project needs on a Debian/Ubuntu machine; idempotent (skips what is present).
#   apt: cross compiler, newlib, QEMU, TTS engines for the built-in data set, python3-venv, and
#        what checks a board image (dosfstools, mtools, u-boot-tools, openocd); tools/uboot.sh
#        installs U-Boot's own build dependencies when it first builds U-Boot
#   pip: a virtual environment in .venv with torch==2.13.0 (CPU build) and the project
#   the memory model's QEMU plugin (tools/build_qemu_plugin.sh: the plugin API header from
#        Debian's qemu source package; absent with its reason when that cannot be had)
# Quiet on success: one line per step that does something. Each step's own output goes to
# $VENV/setup.log (apt and pip print hundreds of lines a user need not read) and is shown when
# the step fails.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi qemu-system-arm
              espeak-ng flite festival festvox-kallpc16k gcc make
              dosfstools mtools u-boot-tools openocd)
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
TORCH_PIN="torch==2.13.0"
LOG="$VENV/setup.log"

# step "what it does" command...: one line, the command's output in $LOG; on failure that
# output and the command are printed and setup stops with the command's exit code.
step() {
    local what=$1 start rc=0
    shift
    start=$SECONDS
    printf 'setup: %s ... ' "$what"
    "$@" >>"$LOG" 2>&1 || rc=$?
    if ((rc)); then
        echo "failed (exit $rc)"
        echo "setup: the last lines of $LOG:" >&2
        tail -n 40 "$LOG" >&2
        echo "setup: failed: $*" >&2
        exit "$rc"
    fi
    echo "done ($((SECONDS - start)) s)"
}

mkdir -p "$VENV"
: >"$LOG"

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ! "$PYTHON" -c "import venv, ensurepip" 2>/dev/null; then
    missing+=(python3-venv)
fi
if ((${#missing[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    step "apt-get update" $SUDO apt-get update -qq
    step "installing Debian packages: ${missing[*]}" \
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}"
fi

# the memory model's QEMU plugin (measure/bench_memory.py): built here, or its reason recorded
bash tools/build_qemu_plugin.sh

stamp="$VENV/.setup-stamp"
want="$(sha256sum pyproject.toml tools/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
[ -x "$VENV/bin/python" ] || step "creating $VENV" "$PYTHON" -m venv "$VENV"
# -qq: pip's warnings (e.g. an index folder of the machine's pip config that does not exist) and
# the build backend's notes are not the user's business when the install succeeds; errors stay.
step "upgrading pip" "$VENV/bin/python" -m pip install -qq --upgrade pip
# Pinned first: a bare `torch` requirement would pull a multi-GB CUDA build.
if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    step "installing $TORCH_PIN (CPU build)" "$VENV/bin/python" -m pip install -qq "$TORCH_PIN"
fi
step "installing this project and its test tools" \
    "$VENV/bin/python" -m pip install -qq -e ".[test]"
echo "$want" >"$stamp"
echo "setup: $VENV ready ($("$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)'))"
