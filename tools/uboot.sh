#!/usr/bin/env bash
# Build U-Boot (SPL in BOOT.BIN, u-boot.img, u-boot.elf) for one Zynq-7020 board from Debian's
# u-boot source package, with an autoboot that loads fw.elf from the SD card's FAT partition.
#
#   tools/uboot.sh BOARD        BOARD: zybo-z7-20 | zedboard | microzed-7020
#
# Prints the output paths, one `name=path` a line (boot_bin, u_boot_img, u_boot_elf, spl_bin,
# src: the unpacked U-Boot source, dir). spl_bin is the raw SPL (spl/u-boot-spl.bin, linked at
# OCM address 0, CONFIG_SPL_TEXT_BASE) for loading over JTAG (codegen/target/jtag.py).
# Idempotent: outputs are cached in ${ELATTA_UBOOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/
# elatta/u-boot}/<version>/<board>/ and a second call only prints them.
#
# Sources: U-Boot 2023.01 configs/xilinx_zynq_virt_defconfig; board/xilinx/zynq/Makefile picks
# the SPL's ps7_init_gpl.c as CONFIG_XILINX_PS_INIT_FILE if set, else
# board/xilinx/zynq/$(DEVICE_TREE)/ps7_init_gpl.c, DEVICE_TREE defaulting to
# CONFIG_DEFAULT_DEVICE_TREE; this script sets both to the board's device tree name.
# BOOT.BIN is spl/boot.bin, made by mkimage -T zynqimage (tools/zynqimage.c, the boot header of
# UG585 §6.3.2 "BootROM Header").
set -euo pipefail

UBOOT_VERSION=${UBOOT_VERSION:-2023.01+dfsg-2+deb12u3}  # `apt-cache showsrc u-boot`, bookworm
LOADADDR=${UBOOT_FW_LOADADDR:-0x08000000}  # 128 MiB: free on 512 MiB and 1 GiB boards alike
STOP_STR=${UBOOT_STOP_STR:-elatta-stop}    # keyed autoboot: only this string stops it

die() { echo "uboot.sh: $*" >&2; exit 1; }
# Exit status 75 (EX_TEMPFAIL, sysexits.h) when Debian's archive cannot be reached: callers
# (tests/codegen/target/test_uboot_boot.py) tell "offline" from "broken" by it.
offline() { echo "uboot.sh: $*" >&2; exit 75; }

[ $# -eq 1 ] || die "usage: $0 BOARD (zybo-z7-20 | zedboard | microzed-7020)"
BOARD=$1
case "$BOARD" in
    zybo-z7-20) DT=zynq-zybo-z7 ;;
    zedboard) DT=zynq-zed ;;
    microzed-7020) DT=zynq-microzed ;;
    pynq-z2)
        die "pynq-z2: U-Boot ${UBOOT_VERSION%%+*} has no board/xilinx/zynq/*/ps7_init_gpl.c for" \
            "the PYNQ-Z2, so its SPL cannot initialise the PS (clocks, MIO, DDR). Export" \
            "ps7_init_gpl.c/.h from a Vivado design for the board and point" \
            "CONFIG_XILINX_PS_INIT_FILE at it (board/xilinx/zynq/Makefile)."
        ;;
    *) die "unknown board '$BOARD' (zybo-z7-20 | zedboard | microzed-7020)" ;;
esac

UPSTREAM=${UBOOT_VERSION%%+*}
CACHE=${ELATTA_UBOOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/elatta/u-boot}/$UBOOT_VERSION
OUT=$CACHE/$BOARD

# Kconfig symbols: common/Kconfig (AUTOBOOT_*, BOOTDELAY, USE_BOOTCOMMAND), boot/Kconfig.
# Keyed autoboot: any other byte on the console (a host already talking to the firmware's
# UART) does not stop the boot; only STOP_STR does (common/autoboot.c, abortboot_key_sequence).
# `load` reads fw.elf from partition 1 of mmc 0 (FAT); `bootelf -p` copies its PT_LOAD segments
# to their physical addresses, zero-fills to p_memsz, flushes the data cache over them
# (lib/elf.c load_elf_image_phdr) and calls e_entry (cmd/elf.c). Without -p it would copy
# SHF_ALLOC sections by their addresses instead. In 2023.01 bootelf only loads, and returns to
# the prompt, unless the environment says autostart=yes (cmd/elf.c do_bootelf calls
# env_get_autostart(), env/common.c: env_get_yesno("autostart") == 1; unset counts as no), so
# the boot command sets it first.
# CONFIG_DEFAULT_DEVICE_TREE as well as DEVICE_TREE= on the make line: the board Makefile reads
# either, and .config then says which board it is. OF_LIST/SPL_OF_LIST: only this board's
# device tree goes into the u-boot.img FIT (Makefile, MKIMAGEFLAGS_u-boot.img: one -b per DTB,
# DEVICE_TREE first), so the SPL cannot pick another board's configuration.
FRAGMENT_TEXT=$(cat <<EOF
CONFIG_DEFAULT_DEVICE_TREE="$DT"
CONFIG_OF_LIST="$DT"
CONFIG_SPL_OF_LIST="$DT"
CONFIG_BOOTDELAY=1
CONFIG_AUTOBOOT_KEYED=y
CONFIG_AUTOBOOT_PROMPT="autoboot in %d s: type '$STOP_STR' to stop\\n"
CONFIG_AUTOBOOT_STOP_STR="$STOP_STR"
# CONFIG_AUTOBOOT_KEYED_CTRLC is not set
# CONFIG_AUTOBOOT_ENCRYPTION is not set
CONFIG_USE_BOOTCOMMAND=y
CONFIG_BOOTCOMMAND="load mmc 0:1 $LOADADDR fw.elf && env set autostart yes && bootelf -p $LOADADDR"
CONFIG_CMD_ELF=y
CONFIG_CMD_FAT=y
CONFIG_CMD_FS_GENERIC=y
EOF
)
FRAGMENT_SUM=$(printf '%s\n' "$FRAGMENT_TEXT" | sha256sum | cut -c1-16)
STAMP="$UBOOT_VERSION $BOARD $DT reproducible fragment=$FRAGMENT_SUM"

print_outputs() {
    echo "boot_bin=$OUT/boot.bin"
    echo "u_boot_img=$OUT/u-boot.img"
    echo "u_boot_elf=$OUT/u-boot.elf"
    echo "spl_bin=$OUT/spl.bin"
    echo "src=$CACHE/src/u-boot-$UPSTREAM+dfsg"
    echo "dir=$OUT"
}

if [ "$(head -n1 "$OUT/.done" 2>/dev/null)" = "$STAMP" ] && [ -f "$OUT/boot.bin" ] \
    && [ -f "$OUT/u-boot.img" ] && [ -f "$OUT/u-boot.elf" ] && [ -f "$OUT/spl.bin" ]; then
    print_outputs
    exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# ---- Debian packages ------------------------------------------------------------------------
PKGS=(dpkg-dev make gcc bc bison flex libssl-dev libgnutls28-dev uuid-dev python3 python3-dev
      python3-setuptools python3-pyelftools swig gcc-arm-linux-gnueabihf u-boot-tools)
missing=()
for pkg in "${PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$pkg")
done

need_apt() {
    command -v apt-get >/dev/null \
        || offline "apt-get not found: this script needs Debian's archive (packages ${PKGS[*]}" \
                   "and the u-boot source package)"
}
updated=0
apt_update() {
    need_apt
    if [ "$updated" -eq 0 ]; then
        $SUDO apt-get update -qq || offline "apt-get update failed (no network or no apt mirror?)"
        updated=1
    fi
}

# deb-src: `apt-get source` needs one. Mirror the URIs of the deb822 file Debian installs.
have_src() {
    grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/
}
if ! have_src; then
    dst=/etc/apt/sources.list.d/elatta-debian-src.sources
    src=/etc/apt/sources.list.d/debian.sources
    if [ -f "$src" ]; then
        # The same archives as the binary packages (deb822, sources.list(5)), as deb-src.
        echo "uboot.sh: adding deb-src entries mirroring $src" >&2
        sed -E 's/^Types:[[:space:]]+deb[[:space:]]*$/Types: deb-src/' "$src" \
            | $SUDO tee "$dst" >/dev/null
    else
        echo "uboot.sh: adding a deb-src entry for bookworm (deb.debian.org)" >&2
        $SUDO tee "$dst" >/dev/null <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    fi
    apt_update
fi

if ((${#missing[@]})); then
    need_apt
    echo "uboot.sh: installing Debian packages: ${missing[*]}" >&2
    apt_update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null || offline "apt-get install ${missing[*]} failed"
fi

# ---- source -----------------------------------------------------------------------------------
SRC=$CACHE/src/u-boot-$UPSTREAM+dfsg
if [ ! -f "$SRC/Makefile" ]; then
    mkdir -p "$CACHE/src"
    need_apt
    if ! (cd "$CACHE/src" && apt-get source -qq "u-boot=$UBOOT_VERSION" >&2); then
        apt_update
        if ! (cd "$CACHE/src" && apt-get source -qq "u-boot=$UBOOT_VERSION" >&2); then
            avail=$(apt-cache showsrc u-boot 2>/dev/null | awk '/^Version:/ {print $2}' | sort -u)
            if [ -n "$avail" ] && ! grep -qxF "$UBOOT_VERSION" <<<"$avail"; then
                die "u-boot $UBOOT_VERSION is no longer in the archive (it has:" $avail ");" \
                    "set UBOOT_VERSION=... (the ps7_init and Kconfig notes here are for 2023.01)"
            fi
            offline "apt-get source u-boot=$UBOOT_VERSION failed (archive unreachable?)"
        fi
    fi
    [ -f "$SRC/Makefile" ] || die "unpacked source not found at $SRC"
fi
[ -f "$SRC/board/xilinx/zynq/$DT/ps7_init_gpl.c" ] \
    || die "$SRC/board/xilinx/zynq/$DT/ps7_init_gpl.c missing: no SPL for $BOARD"

# ---- configure and build -------------------------------------------------------------------------
CROSS=${CROSS_COMPILE:-arm-linux-gnueabihf-}
BUILD=$CACHE/build/$BOARD
mkdir -p "$BUILD"
FRAGMENT=$BUILD/elatta.config
printf '%s\n' "$FRAGMENT_TEXT" > "$FRAGMENT"

start=$(date +%s)
# Reproducible outputs: the build date in the version string (Makefile, U_BOOT_DATE) and the
# FIT/zynqimage time stamps (tools/imagetool.c, imagetool_get_source_date) come from
# SOURCE_DATE_EPOCH, set to the Debian changelog's date as Debian's own build does.
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -STimestamp)
export SOURCE_DATE_EPOCH
mk() {
    make -C "$SRC" O="$BUILD" CROSS_COMPILE="$CROSS" ARCH=arm DEVICE_TREE="$DT" "$@"
}
log=$BUILD/build.log
{
    mk xilinx_zynq_virt_defconfig
    # scripts/kconfig/merge_config.sh semantics: the fragment's lines win, olddefconfig fills in
    cat "$FRAGMENT" >> "$BUILD/.config"
    mk olddefconfig
    mk -j"$(nproc)" all u-boot.elf
} > "$log" 2>&1 || { tail -n 40 "$log" >&2; die "build failed, log: $log"; }

for sym in CONFIG_AUTOBOOT_KEYED=y "CONFIG_DEFAULT_DEVICE_TREE=\"$DT\"" "CONFIG_OF_LIST=\"$DT\"" \
    CONFIG_CMD_ELF=y; do
    grep -qx "$sym" "$BUILD/.config" || die "$sym did not stick in $BUILD/.config"
done
# The SPL must carry this board's PS initialisation (clocks, MIO, DDR: UG585 §6.3 "BootROM",
# the FSBL/SPL stage), or it hangs on the board with no output.
[ -f "$BUILD/spl/board/xilinx/zynq/$DT/ps7_init_gpl.o" ] \
    || die "the SPL was built without board/xilinx/zynq/$DT/ps7_init_gpl.c"

mkdir -p "$OUT"
cp "$BUILD/spl/boot.bin" "$OUT/boot.bin"
cp "$BUILD/u-boot.img" "$OUT/u-boot.img"
cp "$BUILD/u-boot.elf" "$OUT/u-boot.elf"
cp "$BUILD/spl/u-boot-spl.bin" "$OUT/spl.bin"
cp "$BUILD/.config" "$OUT/config"
cp "$FRAGMENT" "$OUT/elatta.config"
printf '%s\nbuild_seconds=%d\n' "$STAMP" "$(($(date +%s) - start))" > "$OUT/.done"
print_outputs
