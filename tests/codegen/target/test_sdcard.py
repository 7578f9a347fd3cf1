"""codegen.target.sdcard: the image read back by a reader written here from the on-disk format
(MBR; Microsoft FAT specification 1.03: BPB, FAT, short directory entries), and by Debian's
dosfstools/mtools when they are installed. Fast: a 64 MiB sparse file."""

from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from codegen.base.errors import ConfigError
from codegen.target.sdcard import boot_script, fix_boot_header, script_image, write_sd_image


@dataclass(frozen=True)
class ReadBack:
    part_type: int
    bootable: bool
    part_start: int
    part_sectors: int
    cluster_count: int
    files: dict[str, bytes]  # name as listed (NT lower-case flags applied) -> contents


def read_image(path: Path) -> ReadBack:
    img = path.read_bytes()
    assert img[510:512] == b"\x55\xaa", "MBR signature"
    status, ptype, start, count = struct.unpack_from("<B3xB3xII", img, 446)
    assert all(b == 0 for b in img[446 + 16 : 510]), "exactly one partition entry"
    part = img[start * 512 : (start + count) * 512]
    assert part[510:512] == b"\x55\xaa" and part[0] in (0xEB, 0xE9)
    bps, spc, rsvd, nfats, root_ents, tot16, _media, fatsz16 = struct.unpack_from(
        "<HBHBHHBH", part, 11
    )
    tot32, fatsz32 = struct.unpack_from("<II", part, 32)
    root_clus, fsinfo, bk = struct.unpack_from("<IHH", part, 44)
    assert (bps, root_ents, tot16, fatsz16) == (512, 0, 0, 0), "FAT32 BPB"
    assert tot32 == count and struct.unpack_from("<I", part, 28)[0] == start, "hidden sectors"
    assert part[82:90] == b"FAT32   "
    assert part[bk * 512 : bk * 512 + 512] == part[:512], "backup boot sector"
    fi = part[fsinfo * 512 : fsinfo * 512 + 512]
    assert struct.unpack_from("<I", fi, 0)[0] == 0x41615252
    assert struct.unpack_from("<I", fi, 484)[0] == 0x61417272
    data_start = rsvd + nfats * fatsz32
    clusters = (tot32 - data_start) // spc
    assert clusters >= 65525, "FAT32 by cluster count"
    fats = [
        part[(rsvd + i * fatsz32) * 512 : (rsvd + i * fatsz32 + fatsz32) * 512]
        for i in range(nfats)
    ]
    assert all(f == fats[0] for f in fats), "FAT copies agree"
    fat = struct.unpack(f"<{len(fats[0]) // 4}I", fats[0])

    def chain(first: int) -> bytes:
        out = bytearray()
        c, seen = first, set()
        while c < 0x0FFFFFF8:
            assert 2 <= c < clusters + 2 and c not in seen, f"bad cluster {c}"
            seen.add(c)
            off = (data_start + (c - 2) * spc) * 512
            out += part[off : off + spc * 512]
            c = fat[c] & 0x0FFFFFFF
        return bytes(out)

    root = chain(root_clus)
    files: dict[str, bytes] = {}
    for i in range(0, len(root), 32):
        e = root[i : i + 32]
        if e[0] == 0:
            break
        attr, nt = e[11], e[12]
        if e[0] == 0xE5 or attr & 0x08:  # deleted, volume label
            continue
        base, ext = e[:8].decode().rstrip(), e[8:11].decode().rstrip()
        base = base.lower() if nt & 0x08 else base
        ext = ext.lower() if nt & 0x10 else ext
        hi, lo, size = struct.unpack_from("<H", e, 20)[0], *struct.unpack_from("<HI", e, 26)
        first = hi << 16 | lo
        files[base + ("." + ext if ext else "")] = chain(first)[:size] if first else b""
    return ReadBack(ptype, status == 0x80, start, count, clusters, files)


def sample_files() -> dict[str, bytes]:
    rng = random.Random(1)
    return {
        "BOOT.BIN": rng.randbytes(117_520),
        "u-boot.img": rng.randbytes(1_224_516),
        "boot.scr": script_image("load mmc 0 0x08000000 fw.elf\nbootelf -p 0x08000000\n"),
        "fw.elf": rng.randbytes(36_972),
        "EMPTY.TXT": b"",
    }


def test_round_trip(tmp_path: Path) -> None:
    files = sample_files()
    img = write_sd_image(tmp_path / "sd.img", files)
    assert img.stat().st_size == 64 * 2**20
    back = read_image(img)
    assert back.part_type == 0x0C and back.bootable and back.part_start == 2048
    assert back.part_sectors == 64 * 2048 - 2048
    assert back.files == files
    # Deterministic: the same files give the same bytes.
    again = write_sd_image(tmp_path / "sd2.img", files)
    assert again.read_bytes() == img.read_bytes()


def test_many_clusters_root_and_larger_card(tmp_path: Path) -> None:
    files = {f"F{i:03d}.BIN": bytes([i]) * (i * 997) for i in range(40)}  # root spans 3 clusters
    back = read_image(write_sd_image(tmp_path / "sd.img", files, size_mib=300))
    assert back.files == files and back.cluster_count >= 65525


def test_fsck_fat_clean(tmp_path: Path) -> None:
    assert shutil.which("fsck.fat"), "fsck.fat (dosfstools): tools/setup.sh installs it"
    img = write_sd_image(tmp_path / "sd.img", sample_files())
    part = tmp_path / "part.img"
    with open(img, "rb") as src, open(part, "wb") as dst:
        src.seek(2048 * 512)
        shutil.copyfileobj(src, dst)
    r = subprocess.run(["fsck.fat", "-n", "-v", str(part)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # dosfstools counts the volume label entry as a file: five files + label = 6.
    assert "32 bit entries" in r.stdout and ": 6 files," in r.stdout, r.stdout


def test_mtools_reads_every_file(tmp_path: Path) -> None:
    assert shutil.which("mcopy"), "mcopy (mtools): tools/setup.sh installs it"
    files = sample_files()
    img = write_sd_image(tmp_path / "sd.img", files)
    env = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}
    for name, data in files.items():
        out = tmp_path / f"out-{name}"
        subprocess.run(
            ["mcopy", "-n", "-i", f"{img}@@1M", f"::{name}", str(out)],
            check=True,
            env=env,
            capture_output=True,
        )
        assert out.read_bytes() == data, name
    listing = subprocess.run(
        ["mdir", "-b", "-i", f"{img}@@1M", "::"],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    ).stdout
    assert "u-boot.img" in listing and "BOOT.BIN" in listing


def test_script_image_matches_mkimage(tmp_path: Path) -> None:
    assert shutil.which("mkimage"), "mkimage (u-boot-tools): tools/setup.sh installs it"
    text = "echo elatta\nload mmc 0 0x08000000 fw.elf\nbootelf -p 0x08000000\n"
    src = tmp_path / "boot.txt"
    src.write_text(text)
    ref = tmp_path / "boot.scr"
    subprocess.run(
        [
            "mkimage",
            "-A",
            "arm",
            "-O",
            "linux",
            "-T",
            "script",
            "-C",
            "none",
            "-n",
            "elatta",
            "-d",
            str(src),
            str(ref),
        ],
        check=True,
        capture_output=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": "0"},
    )
    assert script_image(text, name="elatta") == ref.read_bytes()


@pytest.mark.parametrize(
    ("files", "size_mib", "match"),
    [
        ({"toolongname.bin": b"x"}, 64, "8.3"),
        ({"Boot.bin": b"x"}, 64, "mixed case"),
        ({"a b.txt": b"x"}, 64, "not allowed"),
        ({"BOOT.BIN": b"x", "boot.bin": b"y"}, 64, "twice"),
        ({"BIG.BIN": bytes(40 * 2**20)}, 40, "raise size_mib"),
        ({"BOOT.BIN": b"x"}, 16, "FAT32"),
    ],
)
def test_errors(tmp_path: Path, files: dict[str, bytes], size_mib: int, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        write_sd_image(tmp_path / "sd.img", files, size_mib)
    assert not (tmp_path / "sd.img").exists()


def boot_header(image: bytes, *, length: int | None = None) -> bytes:
    """A BOOT.BIN as U-Boot 2023.01's `mkimage -T zynqimage` writes it: the BootROM header
    (UG585 Table 6-3) at 0x20..0x4C, the image at 0x8C0, length fields of the whole file."""
    total = 0x8C0 + len(image)
    n = total if length is None else length
    head = bytearray(0x8C0)
    struct.pack_into("<I4sIIIIIIII", head, 0x20, 0xAA995566, b"XNLX", 0, 0x01010000, 0x8C0, n,
                     0, 0, n, 1)  # fmt: skip
    words = struct.unpack_from("<10I", head, 0x20)
    struct.pack_into("<I", head, 0x48, ~sum(words) & 0xFFFFFFFF)
    return bytes(head) + image


def test_boot_header_length_is_the_image() -> None:
    spl = random.Random(3).randbytes(115_280)
    fixed = fix_boot_header(boot_header(spl))
    assert fixed == boot_header(spl, length=len(spl))
    src, length, _, _, total = struct.unpack_from("<IIIII", fixed, 0x30)
    assert fixed[src : src + length] == spl and src + length == len(fixed) and total == length
    words = struct.unpack_from("<10I", fixed, 0x20)
    assert struct.unpack_from("<I", fixed, 0x48)[0] == ~sum(words) & 0xFFFFFFFF
    assert fix_boot_header(fixed) == fixed  # idempotent
    with pytest.raises(ConfigError, match="BootROM header"):
        fix_boot_header(bytes(0x900))
    with pytest.raises(ConfigError, match="loads <= 196608"):
        fix_boot_header(boot_header(bytes(200 * 1024)))  # 192 KiB of OCM


def test_boot_script_text() -> None:
    text = boot_script(0x0800_0000)
    assert text.splitlines() == [
        "echo elatta: loading fw.elf from mmc 0:1",
        "load mmc 0:1 0x08000000 fw.elf",
        "setenv autostart yes",
        "bootelf -p 0x08000000",
    ]
