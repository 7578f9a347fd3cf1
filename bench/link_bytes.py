"""Instructions per received byte of the device's link layer (frame intake, COBS decode, CRC-32,
the checks of docs/protocol.md) under QEMU -icount shift=0, where one global-timer tick is 10
guest instructions (docs/targets.md §4). The probe links firmware/fw_server.c and fw_frame.c as
the firmware does, with an application that answers every frame with a 4-byte reply, and feeds
one second of 16 kHz int16 audio (speech-like, framed as AUDIO chunks of the default 2,048-byte
payload) the way firmware/main.c takes the UART's bytes: fw_server_poll with a read callback
that moves each byte from a 32-bit word (as the FIFO register returns it) by the NEON lane
loads and table lookups fw_uart_read uses, 64 bytes a read (one RX FIFO of the chip) and 256
(FW_RX_CHUNK, the most a read may take past a delimiter), with the link timed by the global
timer's low word as on the device; the UART's Channel_sts looks and the wake-ups between
bursts (on the device one per 16 bytes under QEMU, whose RX FIFO holds 16: docs/targets.md §4)
are not in the figure. For comparison, the same bytes through fw_server_feed, one call per
byte. Every frame must be accepted (the reply count is checked). Also timed alone over the same
bytes: fw_cobs_decode and fw_crc32.

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
#include "elt_neon.h"
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
/* The UART's RX FIFO, emulated from memory: lb_fifo holds each byte in a 32-bit word, as the
 * FIFO register returns it; at most 64 bytes (the FIFO) per read, 16 at a time by the same
 * VLD1 lane loads and narrowing as fw_uart_read (one load per byte, here with a post-increment
 * instead of the register's pop), the rest one word at a time. */
static const uint32_t *src_p, *src_end;
static inline uint8x16_t gather16(const uint32_t **f)
{
    uint8x16_t v;
    const uint8x8_t idx = vcreate_u8(0x1C1814100C080400u);
    __asm__ volatile("vld1.32 {d16[0]}, [%[f]]!\n\tvld1.32 {d16[1]}, [%[f]]!\n\t"
                     "vld1.32 {d17[0]}, [%[f]]!\n\tvld1.32 {d17[1]}, [%[f]]!\n\t"
                     "vld1.32 {d18[0]}, [%[f]]!\n\tvld1.32 {d18[1]}, [%[f]]!\n\t"
                     "vld1.32 {d19[0]}, [%[f]]!\n\tvld1.32 {d19[1]}, [%[f]]!\n\t"
                     "vld1.32 {d20[0]}, [%[f]]!\n\tvld1.32 {d20[1]}, [%[f]]!\n\t"
                     "vld1.32 {d21[0]}, [%[f]]!\n\tvld1.32 {d21[1]}, [%[f]]!\n\t"
                     "vld1.32 {d22[0]}, [%[f]]!\n\tvld1.32 {d22[1]}, [%[f]]!\n\t"
                     "vld1.32 {d23[0]}, [%[f]]!\n\tvld1.32 {d23[1]}, [%[f]]!\n\t"
                     "vtbl.8 %e[v], {d16, d17, d18, d19}, %P[idx]\n\t"
                     "vtbl.8 %f[v], {d20, d21, d22, d23}, %P[idx]"
                     : [v] "=&w"(v), [f] "+r"(*f)
                     : [idx] "w"(idx)
                     : "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "memory");
    return v;
}
__attribute__((unused)) static size_t rd(void *ctx, uint8_t *dst, size_t cap, size_t need,
                                         size_t *clean, uint32_t *slept)
{
    (void)ctx;
    (void)need;
    size_t n = (size_t)(src_end - src_p);
    if (n > cap) {
        n = cap;
    }
    if (n > LB_CHUNK) {
        n = LB_CHUNK;
    }
    size_t i = 0;
    uint32_t lo = 0xFFu;
    const uint32_t *f = src_p;
    if (n >= 32u) {
        uint8x16_t m = vdupq_n_u8(0xFFu);
        for (; n - i >= 32u; i += 32u) {
            const uint8x16_t a = gather16(&f);
            const uint8x16_t b = gather16(&f);
            vst1q_u8(dst + i, a);
            vst1q_u8(dst + i + 16u, b);
            m = vminq_u8(m, vminq_u8(a, b));
        }
        uint8x8_t h = vmin_u8(vget_low_u8(m), vget_high_u8(m));
        h = vpmin_u8(h, h);
        h = vpmin_u8(h, h);
        h = vpmin_u8(h, h);
        lo = vget_lane_u8(h, 0);
    }
    for (; i < n; i++) {
        const uint32_t c = *f++ & 0xFFu;
        dst[i] = (uint8_t)c;
        lo = c < lo ? c : lo;
    }
    src_p = f;
    *clean = lo != 0u ? n : 0u; /* a delimiter among them: the server searches them */
    *slept = 0u;
    return n;
}
static uint32_t tk(void *ctx)
{
    (void)ctx;
    return fw_timer_now32();
}
static fw_platform_t platform = {wr, su, 0, &app, 0, LB_READ, tk};
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

POLL = r"""
#define LB_READ rd
#define LB_CHUNK {chunk}u
#define LB_FEED(s, d, n)                                                                          \
    do {                                                                                           \
        src_p = lb_fifo;                                                                           \
        src_end = lb_fifo + (n);                                                                   \
        while (fw_server_poll(s) != 0u) {                                                          \
        }                                                                                          \
    } while (0)
"""

PER_BYTE = r"""
#define LB_READ 0
#define LB_CHUNK 1u
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


def run_probe(work: Path, feed: str, data: bytes, enc: list[int], body: list[int]) -> list[int]:
    """Build and run the probe with LB_FEED = ``feed`` (POLL or PER_BYTE); the L row's values."""
    from elatta_measure.bench_frontend import _fw_config

    from codegen.base.resources import firmware_dir
    from codegen.emit.c import carray
    from codegen.target.qemu_probe import link_probe, qemu_probe_lines

    work.mkdir(parents=True, exist_ok=True)
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
                f"static const uint32_t lb_fifo[{len(data)}] = {{",
                carray(np.frombuffer(data, np.uint8).astype(np.uint32)),
                "};",
                f"static const uint16_t lb_enc_len[{len(enc)}] = {{{carray(enc)}}};",
                f"static const uint16_t lb_body_len[{len(body)}] = {{{carray(body)}}};",
                feed,
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
    return [int(v) for v in row.split()[1:]]


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    data, enc, body = wire()
    work = Path(tempfile.mkdtemp(prefix="link_bytes_"))
    n = len(data)
    print(f"{len(enc)} frames, {n} wire bytes (one second of audio)")
    runs = (
        ("fw_server_poll, 64-byte reads (one RX FIFO a poll)", POLL.replace("{chunk}", "64")),
        (
            "fw_server_poll, 256-byte reads (the FIFO refilled as it drains)",
            POLL.replace("{chunk}", "256"),
        ),
        ("fw_server_feed, one call a byte", PER_BYTE),
    )
    for i, (name, feed) in enumerate(runs):
        ticks, cobs, crc, replies, tx = run_probe(work / str(i), feed, data, enc, body)
        if replies != len(enc):
            print(f"{name}: {replies} replies to {len(enc)} frames")
            return 1
        print(
            f"  {name}: intake + checks + COBS + CRC + replies ({tx} B out): {ticks} ticks = "
            f"{10 * ticks / n:.2f} instructions per byte"
        )
    print(f"  fw_cobs_decode alone: {10 * cobs / n:.2f}; fw_crc32 alone: {10 * crc / n:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
