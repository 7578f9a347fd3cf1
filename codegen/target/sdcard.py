"""Write a bootable Zynq-7000 SD card image in pure Python: one MBR partition, FAT32.

The Zynq BootROM, in SD boot mode, reads ``BOOT.BIN`` from the first FAT partition of the card
(UG585 §6.3.7 "SD Card Boot Mode": FAT16 or FAT32, the file in the root directory). U-Boot's SPL
in that BOOT.BIN then loads ``u-boot.img`` from the same partition (U-Boot 2023.01
common/spl/spl_fat.c, CONFIG_SPL_FS_LOAD_PAYLOAD_NAME), and U-Boot's boot command (tools/uboot.sh)
loads ``fw.elf``.

Layout (all numbers in 512-byte sectors):

* sector 0: the Master Boot Record, one primary partition entry, type 0x0C (FAT32, LBA),
  bootable (status 0x80), CHS fields set to the "use LBA" value 0xFEFFFF.
* the partition starts at 1 MiB (sector 2048), the usual SD erase-block alignment.
* the FAT32 volume follows Microsoft's "FAT: General Overview of On-Disk Format" (version 1.03,
  2000), the "FAT specification" below: boot sector and BPB (§3), FSInfo sector (§5), a backup
  boot sector at sector 6, two FATs (§4), the root directory a cluster chain from cluster 2 (§6).
  Files occupy contiguous cluster runs in the order given.

Only 8.3 names are written (no long-file-name entries). A name that is all lower case is stored
upper case with the Windows NT "lower case" flags (directory entry byte 12, bits 3 and 4), so
``u-boot.img`` lists as ``u-boot.img``; U-Boot and the BootROM match names case-insensitively.

The image is deterministic: fixed timestamps and volume id, so the same files give the same
bytes. No root, mount or mtools is needed.

``script_image`` wraps a U-Boot shell script in the 64-byte legacy image header (U-Boot
include/image.h ``struct legacy_img_hdr``, type IH_TYPE_SCRIPT) the way ``mkimage -A arm -O linux
-T script -C none`` does, for a ``boot.scr``. The default boot command of tools/uboot.sh loads
``fw.elf`` directly and does not need one.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from codegen.base.errors import ConfigError

SECTOR = 512
PART_START = 2048  # 1 MiB
PART_TYPE_FAT32_LBA = 0x0C
RESERVED_SECTORS = 32  # FAT specification §3.1: 32 for FAT32
NUM_FATS = 2
FSINFO_SECTOR = 1
BACKUP_BOOT_SECTOR = 6
ROOT_CLUSTER = 2
FAT32_MIN_CLUSTERS = 65525  # FAT specification §3.5: fewer clusters is FAT16
FAT32_MAX_CLUSTERS = 0x0FFFFFF5
EOC = 0x0FFFFFFF
VOLUME_ID = 0x7020B007
VOLUME_LABEL = b"ELATTA     "
DIR_ENTRY = 32
# FAT timestamps (FAT specification §6.1): 2020-01-01 00:00:00, fixed for reproducible images.
FAT_DATE = ((2020 - 1980) << 9) | (1 << 5) | 1
FAT_TIME = 0
ATTR_ARCHIVE = 0x20
ATTR_VOLUME_ID = 0x08
NT_LOWER_BASE = 0x08
NT_LOWER_EXT = 0x10
_SHORT_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'()-@^_`{}~")


@dataclass(frozen=True)
class FatLayout:
    """Geometry of the FAT32 volume, in sectors relative to the start of the partition."""

    part_start: int
    part_sectors: int
    sectors_per_cluster: int
    fat_sectors: int
    cluster_count: int

    @property
    def cluster_bytes(self) -> int:
        return self.sectors_per_cluster * SECTOR

    @property
    def fat_start(self) -> int:
        return RESERVED_SECTORS

    @property
    def data_start(self) -> int:
        return RESERVED_SECTORS + NUM_FATS * self.fat_sectors

    def cluster_offset(self, cluster: int) -> int:
        """Byte offset of `cluster` (>= 2) in the whole image."""
        sector = self.data_start + (cluster - 2) * self.sectors_per_cluster
        return (self.part_start + sector) * SECTOR


@dataclass(frozen=True)
class FileEntry:
    """One root-directory file: its 8.3 name fields, first cluster and size in bytes."""

    name: str
    short_name: bytes  # 11 bytes, upper case, space padded
    nt_flags: int
    first_cluster: int
    clusters: int
    size: int


@dataclass(frozen=True)
class SdImageLayout:
    """Everything written to the image except the file contents."""

    total_sectors: int
    fat: FatLayout
    root_clusters: int
    files: tuple[FileEntry, ...]

    @property
    def used_clusters(self) -> int:
        return self.root_clusters + sum(f.clusters for f in self.files)


def short_name(name: str) -> tuple[bytes, int]:
    """The 11-byte 8.3 directory name of `name` and its NT lower-case flags.

    Raises ConfigError for a name that needs a long-file-name entry (too long, mixed case in one
    part, or a character not allowed in short names: FAT specification §6.1)."""
    base, dot, ext = name.partition(".")
    if not base or (dot and not ext) or len(base) > 8 or len(ext) > 3 or "." in ext:
        raise ConfigError(f"SD card file name {name!r} is not an 8.3 name (BASE.EXT, 8 and 3)")
    flags = 0
    for part, bit in ((base, NT_LOWER_BASE), (ext, NT_LOWER_EXT)):
        if part != part.upper():
            if part != part.lower():
                raise ConfigError(f"SD card file name {name!r}: mixed case needs a long name")
            flags |= bit
    upper_base, upper_ext = base.upper(), ext.upper()
    bad = sorted(set(upper_base + upper_ext) - _SHORT_NAME_CHARS)
    if bad:
        raise ConfigError(f"SD card file name {name!r}: characters {bad} not allowed in 8.3")
    return (upper_base.ljust(8) + upper_ext.ljust(3)).encode("ascii"), flags


def _fat_geometry(part_sectors: int) -> FatLayout:
    """Smallest cluster size that keeps the volume FAT32, and the FAT size that covers it."""
    for spc in (1, 2, 4, 8, 16, 32, 64):
        fat_sectors = 1
        while True:  # FAT specification §3.5: solve for a FAT large enough for its clusters
            clusters = (part_sectors - RESERVED_SECTORS - NUM_FATS * fat_sectors) // spc
            needed = -(-(clusters + 2) * 4 // SECTOR)
            if needed <= fat_sectors:
                break
            fat_sectors = needed
        if FAT32_MIN_CLUSTERS <= clusters < FAT32_MAX_CLUSTERS:
            return FatLayout(PART_START, part_sectors, spc, fat_sectors, clusters)
        if clusters < FAT32_MIN_CLUSTERS:
            break
    raise ConfigError(
        f"a {part_sectors * SECTOR // 2**20} MiB partition cannot hold a FAT32 volume "
        f"(needs at least {FAT32_MIN_CLUSTERS} clusters of 512 bytes): use size_mib >= 34"
    )


def plan_sd_image(files: Mapping[str, bytes], size_mib: int = 64) -> SdImageLayout:
    """Lay out `files` (name -> contents, in that order) on a `size_mib` MiB card."""
    if size_mib <= 1 or size_mib * 2**20 // SECTOR - PART_START > 0xFFFFFFFF:
        raise ConfigError(f"size_mib={size_mib}: must be 2..2 TiB")
    total = size_mib * 2**20 // SECTOR
    fat = _fat_geometry(total - PART_START)
    seen: set[bytes] = set()
    root_entries = 1 + len(files)  # the volume label, then one entry per file
    root_clusters = max(1, -(-root_entries * DIR_ENTRY // fat.cluster_bytes))
    cluster = ROOT_CLUSTER + root_clusters
    entries: list[FileEntry] = []
    for name, data in files.items():
        sname, flags = short_name(name)
        if sname in seen:
            raise ConfigError(f"SD card file name {name!r} appears twice (case-insensitively)")
        seen.add(sname)
        n = -(-len(data) // fat.cluster_bytes)
        entries.append(FileEntry(name, sname, flags, cluster if n else 0, n, len(data)))
        cluster += n
    layout = SdImageLayout(total, fat, root_clusters, tuple(entries))
    if layout.used_clusters > fat.cluster_count:
        need = layout.used_clusters * fat.cluster_bytes
        raise ConfigError(
            f"files need {need} bytes, more than the {size_mib} MiB card's "
            f"{fat.cluster_count * fat.cluster_bytes} bytes of clusters: raise size_mib"
        )
    return layout


def _mbr(layout: SdImageLayout) -> bytes:
    """Master Boot Record: no boot code, a disk signature, one partition entry, 0x55AA."""
    entry = struct.pack(
        "<B3sB3sII",
        0x80,  # bootable
        b"\xfe\xff\xff",  # CHS start: beyond CHS range, use LBA
        PART_TYPE_FAT32_LBA,
        b"\xfe\xff\xff",
        layout.fat.part_start,
        layout.fat.part_sectors,
    )
    mbr = bytearray(SECTOR)
    struct.pack_into("<I", mbr, 440, VOLUME_ID)  # disk signature
    mbr[446 : 446 + 16] = entry
    mbr[510:512] = b"\x55\xaa"
    return bytes(mbr)


def _boot_sector(fat: FatLayout) -> bytes:
    """FAT32 boot sector with BPB (FAT specification §3.1 and §3.3)."""
    bs = bytearray(SECTOR)
    bs[0:3] = b"\xeb\x58\x90"  # jmp short over the BPB; nop
    bs[3:11] = b"ELATTA  "
    struct.pack_into(
        "<HBHBHHBHHHII",
        bs,
        11,
        SECTOR,  # BPB_BytsPerSec
        fat.sectors_per_cluster,
        RESERVED_SECTORS,
        NUM_FATS,
        0,  # BPB_RootEntCnt: 0 on FAT32
        0,  # BPB_TotSec16: 0, see TotSec32
        0xF8,  # BPB_Media: fixed disk
        0,  # BPB_FATSz16: 0 on FAT32
        63,  # BPB_SecPerTrk
        255,  # BPB_NumHeads
        fat.part_start,  # BPB_HiddSec
        fat.part_sectors,  # BPB_TotSec32
    )
    struct.pack_into(
        "<IHHIHH12sBBBI11s8s",
        bs,
        36,
        fat.fat_sectors,  # BPB_FATSz32
        0,  # BPB_ExtFlags: FATs mirrored
        0,  # BPB_FSVer 0.0
        ROOT_CLUSTER,
        FSINFO_SECTOR,
        BACKUP_BOOT_SECTOR,
        b"\0" * 12,
        0x80,  # BS_DrvNum
        0,
        0x29,  # BS_BootSig: the next three fields are present
        VOLUME_ID,
        VOLUME_LABEL,
        b"FAT32   ",
    )
    bs[510:512] = b"\x55\xaa"
    return bytes(bs)


def _fsinfo(layout: SdImageLayout) -> bytes:
    """FSInfo sector (FAT specification §5): free cluster count and next free hint."""
    fi = bytearray(SECTOR)
    struct.pack_into("<I", fi, 0, 0x41615252)
    struct.pack_into(
        "<III",
        fi,
        484,
        0x61417272,
        layout.fat.cluster_count - layout.used_clusters,
        ROOT_CLUSTER + layout.used_clusters,
    )
    struct.pack_into("<I", fi, 508, 0xAA550000)
    return bytes(fi)


def _fat_table(layout: SdImageLayout) -> bytes:
    """The used part of one FAT: entries 0 and 1, the root directory and file chains."""
    used = ROOT_CLUSTER + layout.used_clusters
    table = [0] * used
    table[0] = 0x0FFFFF00 | 0xF8  # media byte in the low 8 bits (§4.2)
    table[1] = EOC  # clean-shutdown and no-error bits set
    runs = [(ROOT_CLUSTER, layout.root_clusters)]
    runs += [(f.first_cluster, f.clusters) for f in layout.files if f.clusters]
    for first, n in runs:
        for c in range(first, first + n - 1):
            table[c] = c + 1
        table[first + n - 1] = EOC
    return struct.pack(f"<{used}I", *table)


def _dir_entry(name11: bytes, attr: int, nt: int, cluster: int, size: int) -> bytes:
    """A 32-byte short directory entry (FAT specification §6)."""
    return struct.pack(
        "<11sBBBHHHHHHHI",
        name11,
        attr,
        nt,
        0,  # creation time, tenths
        FAT_TIME,
        FAT_DATE,
        FAT_DATE,  # last access date
        cluster >> 16,
        FAT_TIME,
        FAT_DATE,
        cluster & 0xFFFF,
        size,
    )


def _root_dir(layout: SdImageLayout) -> bytes:
    entries = [_dir_entry(VOLUME_LABEL, ATTR_VOLUME_ID, 0, 0, 0)]
    entries += [
        _dir_entry(f.short_name, ATTR_ARCHIVE, f.nt_flags, f.first_cluster, f.size)
        for f in layout.files
    ]
    raw = b"".join(entries)
    return raw + bytes(layout.root_clusters * layout.fat.cluster_bytes - len(raw))


def write_sd_image(out: Path, files: dict[str, bytes], size_mib: int = 64) -> Path:
    """Write a `size_mib` MiB raw SD card image to `out` holding `files` in the root directory
    of one bootable FAT32 partition; returns `out`.

    For a Zynq board: ``{"BOOT.BIN": spl_boot_bin, "u-boot.img": ..., "fw.elf": ...}``
    (tools/uboot.sh prints where BOOT.BIN and u-boot.img are). The file is sparse where empty.
    Raises ConfigError for a name that is not 8.3, duplicate names, or files that do not fit.
    """
    out = Path(out)
    layout = plan_sd_image(files, size_mib)
    fat = layout.fat
    part = fat.part_start * SECTOR
    boot = _boot_sector(fat)
    table = _fat_table(layout)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as f:
        f.truncate(layout.total_sectors * SECTOR)
        f.write(_mbr(layout))
        for base in (0, BACKUP_BOOT_SECTOR):  # FAT specification §3.3: BPB_BkBootSec copy
            f.seek(part + (base) * SECTOR)
            f.write(boot)
            f.seek(part + (base + FSINFO_SECTOR) * SECTOR)
            f.write(_fsinfo(layout))
            f.seek(part + (base + 2) * SECTOR + 510)  # third boot sector signature (§3.3)
            f.write(b"\x55\xaa")
        for i in range(NUM_FATS):
            f.seek(part + (fat.fat_start + i * fat.fat_sectors) * SECTOR)
            f.write(table)
        f.seek(fat.cluster_offset(ROOT_CLUSTER))
        f.write(_root_dir(layout))
        for entry, data in zip(layout.files, files.values(), strict=True):
            if entry.clusters:
                f.seek(fat.cluster_offset(entry.first_cluster))
                f.write(data)
    tmp.replace(out)
    return out


def script_image(script: str, name: str = "elatta boot script") -> bytes:
    """A U-Boot ``boot.scr``: `script` behind the 64-byte legacy image header, as ``mkimage -A
    arm -O linux -T script -C none -n NAME -d FILE`` writes it (U-Boot include/image.h,
    ``struct legacy_img_hdr``; the script payload is a multi-image list of one length plus a
    zero terminator, boot/image-board.c ``image_source_script``). Time stamp 0 for
    reproducibility."""
    body = script.encode("utf-8")
    payload = struct.pack(">II", len(body), 0) + body
    encoded = name.encode("utf-8")
    if len(encoded) > 32:
        raise ConfigError(f"script image name {name!r} is longer than 32 bytes")

    def header(hcrc: int) -> bytes:
        return struct.pack(
            ">IIIIIIIBBBB32s",
            0x27051956,  # IH_MAGIC
            hcrc,
            0,  # ih_time
            len(payload),
            0,  # ih_load
            0,  # ih_ep
            zlib.crc32(payload),
            5,  # IH_OS_LINUX
            2,  # IH_ARCH_ARM
            6,  # IH_TYPE_SCRIPT
            0,  # IH_COMP_NONE
            encoded,
        )

    return header(zlib.crc32(header(0))) + payload


# BootROM header of BOOT.BIN (UG585 §6.3.2, Table 6-3 "BootROM Header"): byte offsets.
BOOT_HDR_WIDTH = 0x20  # width detection word 0xAA995566, then "XNLX"
BOOT_HDR_SRC_OFFSET = 0x30  # where the image starts in the file
BOOT_HDR_LENGTH = 0x34  # bytes the BootROM copies to OCM
BOOT_HDR_TOTAL = 0x40  # total image length (equal to the length for an unencrypted image)
BOOT_HDR_CHECKSUM = 0x48  # ~(sum of the words 0x20 .. 0x44)
BOOT_OCM_MAX = 192 * 1024  # the BootROM loads at most 192 KiB into OCM (UG585 §6.3.2)


def fix_boot_header(boot_bin: bytes) -> bytes:
    """BOOT.BIN with its image length fields set to the length of the image it holds.

    U-Boot 2023.01's tools/zynqimage.c stores the size of the whole output file (the 0x8C0-byte
    header included) in image_size and image_stored_size, so the BootROM copies that many bytes
    from the image's offset: the header's length past the end of the file. This sets both to the
    image's own length (the file from its source offset to the end) and recomputes the header
    checksum, so the BootROM copies the SPL and nothing else."""
    words = struct.unpack_from("<10I", boot_bin, BOOT_HDR_WIDTH)
    if words[0] != 0xAA995566 or boot_bin[0x24:0x28] != b"XNLX":
        raise ConfigError("BOOT.BIN has no Zynq BootROM header (width word 0xAA995566, 'XNLX')")
    src = struct.unpack_from("<I", boot_bin, BOOT_HDR_SRC_OFFSET)[0]
    if not 0 < src < len(boot_bin):
        raise ConfigError(f"BOOT.BIN image offset {src:#x} is outside its {len(boot_bin)} bytes")
    length = len(boot_bin) - src
    if length > BOOT_OCM_MAX:
        raise ConfigError(
            f"BOOT.BIN's image is {length} bytes; the BootROM loads <= {BOOT_OCM_MAX}"
        )
    out = bytearray(boot_bin)
    struct.pack_into("<I", out, BOOT_HDR_LENGTH, length)
    struct.pack_into("<I", out, BOOT_HDR_TOTAL, length)
    words = struct.unpack_from("<10I", out, BOOT_HDR_WIDTH)
    struct.pack_into("<I", out, BOOT_HDR_CHECKSUM, ~sum(words) & 0xFFFFFFFF)
    return bytes(out)


def boot_script(loadaddr: int) -> str:
    """The U-Boot shell script `codegen board bootscr` writes (boot.scr, ``script_image``): load
    fw.elf from the first FAT partition of the SD card and start it. `bootelf` starts only when
    the environment says autostart=yes (U-Boot 2023.01 cmd/elf.c do_bootelf, env_get_autostart;
    older U-Boot starts regardless); -p copies the ELF's PT_LOAD segments to their physical
    addresses and flushes the data cache over them (lib/elf.c load_elf_image_phdr)."""
    return "\n".join(
        [
            "echo elatta: loading fw.elf from mmc 0:1",
            f"load mmc 0:1 {loadaddr:#010x} fw.elf",
            "setenv autostart yes",
            f"bootelf -p {loadaddr:#010x}",
            "",
        ]
    )
