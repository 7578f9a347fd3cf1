"""Instructions per received byte of the device's link layer (frame intake, COBS decode, CRC-32,
the checks of docs/protocol.md) under QEMU -icount shift=0, where one global-timer tick is 10
guest instructions (docs/targets.md §4). The probe links firmware/fw_server.c and fw_frame.c as
the firmware does, with an application that answers every frame with a 4-byte reply, and feeds
one second of 16 kHz int16 audio (speech-like, framed as AUDIO chunks of the default 2,048-byte
payload) from memory the way firmware/main.c feeds the UART's bytes, one call per byte; the
UART's own register reads are not in the figure. Every frame must be accepted (the reply count
is checked). Also timed alone over the same bytes: fw_cobs_decode and fw_crc32.

    python bench/link_bytes.py
"""

from __future__ import annotations

import argparse
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

LINK_MAIN = r"""
#include <stdint.h>
#include "fw_timer.h"
#include "fw_probe_print.h"
#include "fw_uart.h"
#include "fw_server.h"
#include "fw_frame.h"
#include "lb_data.h"
int main(void);
static uint32_t replies, tx_bytes;
static int32_t handle(void *ctx, uint8_t type, const uint8_t *payload, uint16_t len, uint8_t *out,
                      uint16_t *out_len)
{
    (void)ctx;
    (void)type;
    out[0] = payload[0];
    out[1] = (uint8_t)len;
    out[2] = 0;
    out[3] = 0;
    *out_len = 4;
    return 0x55;
}
static const fw_app_t app = {handle, 0, 0};
static void wr(void *ctx, const uint8_t *d, size_t n)
{
    (void)ctx;
    (void)d;
    tx_bytes += (uint32_t)n;
    if (n == 1 && d[0] == 0) {
        replies++;
    }
}
static void su(void *ctx, uint32_t *a, uint32_t *b)
{
    (void)ctx;
    *a = 0;
    *b = 0;
}
static fw_platform_t platform = {wr, su, 0, &app};
static fw_server_t server;
static uint8_t dec[FW_BODY_MAX];
int main(void)
{
    uint32_t i;
    uint64_t t0, t1, t2, t3;
    fw_uart_init();
    fw_timer_init();
    fw_server_init(&server, &platform);
    t0 = fw_timer_now();
    LB_FEED(&server, lb_wire, LB_BYTES);
    t1 = fw_timer_now();
    {
        uint32_t crc = 0;
        const uint8_t *p = lb_wire;
        size_t n = 0;
        for (i = 0; i < LB_FRAMES; ++i) {
            uint32_t len = lb_enc_len[i];
            (void)fw_cobs_decode(p, len, dec, sizeof dec, &n);
            p += len + 1u;
        }
        t2 = fw_timer_now();
        p = lb_wire;
        for (i = 0; i < LB_FRAMES; ++i) {
            crc ^= fw_crc32(p, lb_body_len[i]);
            p += lb_enc_len[i] + 1u;
        }
        t3 = fw_timer_now();
        put_s((int32_t)crc);
    }
    fw_uart_putc('\n');
    fw_uart_putc('L');
    fw_uart_putc(' ');
    put_s((int32_t)(t1 - t0));
    put_s((int32_t)(t2 - t1));
    put_s((int32_t)(t3 - t2));
    put_s((int32_t)replies);
    put_s((int32_t)tx_bytes);
    fw_uart_putc('\n');
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
"""

PER_BYTE = r"""
#define LB_FEED(s, d, n)                                                                          \
    do {                                                                                           \
        for (uint32_t k_ = 0; k_ < (n); ++k_) {                                                    \
            fw_server_feed((s), (d)[k_]);                                                          \
        }                                                                                          \
    } while (0)
"""


def wire(seconds: float = 1.0, payload: int = 2048) -> tuple[bytes, list[int], list[int]]:
    """AUDIO-like frames of speech-like int16 PCM: wire bytes, encoded and body lengths."""
    from elatta_host.protocol import Frame, cobs_encode
    from frontend_ticks import clips

    pcm = clips(1, int(16000 * seconds))[0]
    per = (payload - 4) // 2
    out, enc, body = bytearray(), [], []
    for seq, o in enumerate(range(0, len(pcm), per)):
        pl = struct.pack("<I", o) + pcm[o : o + per].astype("<i2").tobytes()
        f = Frame(type=0x23, seq=seq + 1, payload=pl)
        e = cobs_encode(f.body())
        out += e + b"\0"
        enc.append(len(e))
        body.append(len(f.body()) - 4)
    return bytes(out), enc, body


def main() -> int:
    from codegen.base.resources import firmware_dir
    from codegen.emit.c import carray
    from codegen.measure.bench_frontend import _fw_config
    from codegen.target.qemu_probe import link_probe, qemu_probe_lines

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    data, enc, body = wire()
    work = Path(tempfile.mkdtemp(prefix="link_bytes_"))
    inc = work / "include"
    _fw_config(inc)
    (work / "lb_data.h").write_text(
        "\n".join(
            [
                "#include <stdint.h>",
                f"#define LB_BYTES {len(data)}u",
                f"#define LB_FRAMES {len(enc)}u",
                f"static const uint8_t lb_wire[{len(data)}] = {{",
                carray(np.frombuffer(data, np.uint8)),
                "};",
                f"static const uint16_t lb_enc_len[{len(enc)}] = {{{carray(enc)}}};",
                f"static const uint16_t lb_body_len[{len(body)}] = {{{carray(body)}}};",
                PER_BYTE,
                "",
            ]
        )
    )
    (work / "link_main.c").write_text(LINK_MAIN)
    fw = firmware_dir()
    elf = link_probe(
        work / "link.elf",
        [work / "link_main.c", fw / "fw_frame.c", fw / "fw_server.c"],
        includes=[inc, work],
    )
    row = next(ln for ln in qemu_probe_lines(elf, icount=True) if ln.startswith("L "))
    feed, cobs, crc, replies, tx = (int(v) for v in row.split()[1:])
    if replies != len(enc):
        print(f"{replies} replies to {len(enc)} frames")
        return 1
    n = len(data)
    print(f"{len(enc)} frames, {n} wire bytes (one second of audio); {replies} replies, {tx} B out")
    print(
        f"  intake + checks + COBS + CRC + replies: {feed} ticks = "
        f"{10 * feed / n:.2f} instructions per byte"
    )
    print(f"  fw_cobs_decode alone: {10 * cobs / n:.2f}; fw_crc32 alone: {10 * crc / n:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
