"""firmware/fw_crc32_tables.h is what tools/gen_crc32_tables.py writes, and its values are the
CRC-32 registers zlib computes (the codec itself runs on the Cortex-A9 in
tests/firmware/test_frame_codec_arm.py)."""

from __future__ import annotations

import importlib.util
import zlib
from types import ModuleType

from repopaths import ROOT


def _gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_crc32", ROOT / "tools/gen_crc32_tables.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _register(data: bytes) -> int:
    """The CRC register from 0 after ``data``, without the final inversion (zlib.crc32 starts
    from the inverse of its value argument and inverts at the end)."""
    return zlib.crc32(data, 0xFFFFFFFF) ^ 0xFFFFFFFF


def test_the_committed_header_is_the_generators_output() -> None:
    gen = _gen()
    committed = (ROOT / "firmware/fw_crc32_tables.h").read_bytes()
    assert committed == gen.render().encode(), "run: python tools/gen_crc32_tables.py"


def test_the_tables_are_zlibs_registers() -> None:
    gen = _gen()
    tabs = gen.slice_tables()
    for k, tab in enumerate(tabs):
        assert tab == [_register(bytes([i]) + bytes(k)) for i in range(256)], f"table {k}"
    fold = gen.fold_constants()
    for r, row in enumerate(fold):
        for i in range(16):
            d = (gen.FOLD_GROUPS - 1 - r) * 16 + 15 - i
            k_d = _register(b"\x80" + bytes(d))
            assert [row[j][i] for j in range(4)] == list(k_d.to_bytes(4, "little")), (r, i)
