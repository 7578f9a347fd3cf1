"""Guest-instruction profile of one INFER per mode, by function (the instruction mix).

QEMU has no PMU cycle counter (docs/targets.md §4) and the Debian build ships no TCG plugins, so the
profile comes from QEMU's own logs: `-d in_asm` prints every translation block once with its
instructions, `-d exec,nochain` prints every block execution (chaining off, so none is
skipped). Executions × block lengths, attributed to the ELF's function symbols, give exact
executed-instruction counts per function and per instruction class (NEON, VFP, ARM, load/store,
multiply, branch). One instruction = 1 ns under `-icount shift=0`; a global-timer tick is 10 ns.

    python bench/profile.py --build out/build/kws --data out/data/demo [--mode strict] [--top 25]
        [--mnemonics elt_lstm_s16_run,kws_lstm_kernel]
    python bench/profile.py --build out/build/kws --data out/data/demo --audio

--audio: the link layer of one second of audio in the audio mode (mode strict, as `codegen
bench` streams it), every function logged: two runs, one utterance and two, and their
difference, so boot and HELLO drop out; the link's functions per received byte, and
fw_uart_read's blocks one by one (the per-burst path apart from the wait for bytes).

Slow (QEMU logs every block): one sample per mode, a few seconds each.
"""

from __future__ import annotations

import argparse
import bisect
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TB_HEAD = re.compile(r"^0x([0-9a-f]{8}):\s+([0-9a-f]{8})\s+(\S+)")
EXEC = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")


# The receive path polls the UART while the host streams the request: millions of logged
# instructions outside every timed stage. Left out of the log with -dfilter.
IDLE = ("fw_uart_getc", "main", "fw_uart_rx_ready", "fw_uart_read", "uart_read", "fw_uart_wait_rx")


def symbols(elf: Path) -> tuple[list[int], list[str], list[int]]:
    """Function symbols sorted by address: start, name, size."""
    nm = subprocess.run(
        ["arm-none-eabi-nm", "-n", "-S", "--defined-only", str(elf)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    addrs, names, sizes = [], [], []
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW" and not parts[3].startswith("$"):
            addrs.append(int(parts[0], 16))
            sizes.append(int(parts[1], 16))
            names.append(parts[3])
        elif len(parts) == 3 and parts[1] in "tTwW" and not parts[2].startswith("$"):
            # libgcc's assembly routines (__aeabi_ldivmod …) carry no size: up to the next one
            addrs.append(int(parts[0], 16))
            sizes.append(0)
            names.append(parts[2])
    for i, n in enumerate(sizes):
        if n == 0 and i + 1 < len(addrs):
            sizes[i] = addrs[i + 1] - addrs[i]
    return addrs, names, sizes


def dfilter(elf: Path) -> str:
    addrs, names, sizes = symbols(elf)
    return ",".join(
        f"0x{a:x}+0x{n:x}"
        for a, name, n in zip(addrs, names, sizes, strict=True)
        if name not in IDLE and n > 0
    )


def insn_class(mnemonic: str) -> str:
    m = mnemonic.lower()
    if m.startswith("v"):
        return (
            "vfp"
            if re.match(r"v(ldr|str|mov|mrs|msr|cvt|div|sqrt|cmp|abs|neg)\.?f?", m)
            and (".f" in m or m.startswith(("vldr", "vstr", "vmrs", "vmsr", "vdiv", "vsqrt")))
            else "neon"
        )
    if m.startswith(("ldr", "str", "ldm", "stm", "push", "pop")):
        return "load/store"
    if m.startswith(("mul", "mla", "mls", "smul", "smla", "umul", "umla", "smull", "smlal")):
        return "multiply"
    if m.startswith(("b", "bl", "bx", "cbz", "cbnz")) and not m.startswith(("bic", "bfi", "bfc")):
        return "branch"
    return "alu"


def parse_log(path: Path) -> tuple[dict[int, list[str]], collections.Counter[int]]:
    """Translation blocks (start pc -> mnemonics) and execution counts per start pc."""
    blocks: dict[int, list[str]] = {}
    execs: collections.Counter[int] = collections.Counter()
    cur: list[str] | None = None
    with path.open(errors="replace") as f:
        for line in f:
            if line.startswith("IN:"):
                cur = []
                continue
            mt = TB_HEAD.match(line)
            if mt and cur is not None:
                if not cur:
                    blocks[int(mt.group(1), 16)] = cur
                cur.append(mt.group(3))
                continue
            if not line.strip():
                cur = None
                continue
            me = EXEC.match(line)
            if me:
                execs[int(me.group(1), 16)] += 1
    return blocks, execs


def profile_one(elf: Path, features: object, sample_id: int, mode: str) -> dict[str, object]:
    from elatta_host.device import Device
    from elatta_host.infer import decode_result, encode_infer, mode_index
    from elatta_host.protocol import Msg
    from elatta_host.qemu import Qemu

    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "qemu.log"
        q = Qemu(
            elf,
            icount=True,
            link_timeout=60.0,
            startup_timeout=30.0,
            extra_args=("-d", "in_asm,exec,nochain", "-D", str(log), "-dfilter", dfilter(elf)),
        )
        link = q.start()
        try:
            # Protocol v2: the device answers INFER only inside a session opened by HELLO.
            Device(link).hello(sync_timeout=30)
            # One INFER only: boot and the idle loop add a few hundred instructions.
            reply = link.request(
                Msg.INFER,
                encode_infer(sample_id, mode_index(mode), features),
                expect=Msg.RESULT,
            )
            res = decode_result(reply.payload)
        finally:
            q.stop()
        blocks, execs = parse_log(log)
    addrs, names, _ = symbols(elf)
    by_fn: collections.Counter[str] = collections.Counter()
    by_cls: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    by_mn: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for pc, n in execs.items():
        body = blocks.get(pc)
        if body is None:
            continue
        i = bisect.bisect_right(addrs, pc) - 1
        fn = names[i] if i >= 0 else "?"
        by_fn[fn] += n * len(body)
        for mnem in body:
            by_cls[fn][insn_class(mnem)] += n
            by_mn[fn][mnem] += n
    return {
        "ticks": (res.ticks_encoder, res.ticks_adapt, res.ticks_total),
        "by_fn": by_fn,
        "by_cls": by_cls,
        "by_mn": by_mn,
    }


# The link layer's functions (docs/protocol.md, "Link cost"); the rest of an utterance's
# instructions are the application's. wait_rx is the sleep for bytes (not link work).
LINK_FNS = (
    "fw_server_poll",
    "rx_commit",
    "rx_need",
    "rx_take",
    "handle_frame",
    "serve_app",
    "send_frame",
    "send_error",
    "tx_bytes",
    "tx_block",
    "fw_cobs_decode_in_place",
    "fw_crc32_update",
    "fw_crc32",
    "fw_zero_index",
    "fw_uart_read",
    "uart_read",
    "uart_write",
    "fw_uart_write",
    "fw_uart_putc",
    "ticks",
    "fw_timer_now32",
    "fw_server_link",
    "main",
)


def audio_log(elf: Path, pcm: object, utterances: int, tmp: Path) -> tuple[Path, int, int]:
    """QEMU's block log of `utterances` identical audio-mode utterances after HELLO; the log, and
    the last utterance's link bytes and link ticks (its RESULT)."""
    import numpy as np
    from elatta_host.device import Device
    from elatta_host.infer import max_chunk_samples, mode_index
    from elatta_host.qemu import Qemu
    from elatta_host.run import stream_audio

    log = tmp / f"qemu{utterances}.log"
    q = Qemu(
        elf,
        icount=True,
        link_timeout=120.0,
        startup_timeout=60.0,
        extra_args=("-d", "in_asm,exec,nochain", "-D", str(log)),
    )
    link = q.start()
    try:
        info = Device(link).hello(sync_timeout=60)
        chunk = max_chunk_samples(info.max_payload)
        for _ in range(utterances):
            r = stream_audio(link, 0, mode_index("strict"), np.asarray(pcm, np.int16), chunk)
    finally:
        q.stop()
    return log, int(r.link_bytes or 0), int(r.ticks_link or 0)


def audio_profile(elf: Path, pcm: object, top: int) -> None:
    """The link layer of one utterance: instructions per function (and fw_uart_read's blocks)."""
    addrs, names, _ = symbols(elf)
    counts = []
    with tempfile.TemporaryDirectory() as tmpd:
        tmp = Path(tmpd)
        for k in (1, 2):
            log, nbytes, lticks = audio_log(elf, pcm, k, tmp)
            blocks, execs = parse_log(log)
            log.unlink()
            counts.append((blocks, execs))
    (b1, e1), (b2, e2) = counts
    blocks = b1 | b2
    by_fn: collections.Counter[str] = collections.Counter()
    by_blk: collections.Counter[int] = collections.Counter()
    runs: collections.Counter[int] = collections.Counter()
    for pc in set(e1) | set(e2):
        d = e2[pc] - e1[pc]
        body = blocks.get(pc)
        if body is None or d == 0:
            continue
        i = bisect.bisect_right(addrs, pc) - 1
        fn = names[i] if i >= 0 else "?"
        by_fn[fn] += d * len(body)
        if fn in ("fw_uart_read", "wait_rx"):
            by_blk[pc] += d * len(body)
            runs[pc] += d
    link = {f: n for f, n in by_fn.items() if f in LINK_FNS}
    total_link = sum(link.values())
    print(
        f"\n## one utterance (1 s of audio, strict): {sum(by_fn.values())} instructions; "
        f"{nbytes} link bytes received, RESULT's ticks_link {lticks} "
        f"({10 * lticks / max(1, nbytes):.2f} instructions per byte)\n"
    )
    print(f"link functions: {total_link} instructions, {total_link / max(1, nbytes):.2f} per byte ")
    print("(wait_rx is the sleep, outside the link's ticks; main's loop calls the poll)\n")
    print("| function | instructions | per received byte |")
    print("|---|---:|---:|")
    for fn, n in sorted(link.items(), key=lambda kv: -kv[1]):
        print(f"| {fn} | {n} | {n / max(1, nbytes):.3f} |")
    print(f"| wait_rx (sleep) | {by_fn['wait_rx']} | {by_fn['wait_rx'] / max(1, nbytes):.3f} |")
    print("\n### fw_uart_read and wait_rx by block\n")
    print("| block | runs | instructions | per byte | first instructions |")
    print("|---|---:|---:|---:|---|")
    for pc, n in sorted(by_blk.items()):
        head = " ".join(blocks[pc][:4])
        print(f"| 0x{pc:x} | {runs[pc]} | {n} | {n / max(1, nbytes):.3f} | {head} |")
    print("\n### the application's top functions\n")
    for fn, n in by_fn.most_common(top):
        if fn not in LINK_FNS:
            print(f"| {fn} | {n} |")


def main() -> int:

    import numpy as np
    from elatta_measure.bench import samples

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=Path, required=True, help="`codegen build` output directory")
    ap.add_argument("--data", type=Path, required=True, help="`codegen data` directory")
    ap.add_argument("--mode", action="append", help="modes (default: no_adapt, strict)")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument(
        "--mnemonics",
        action="append",
        default=[],
        metavar="FUNCTION[,FUNCTION...]",
        help="also list the executed instructions of FUNCTION by mnemonic (repeatable; names "
        "joined by commas are summed: the LSTM encoder is elt_lstm_s16_run and the kernels the "
        "build generates, <prefix>layer_0_kernel, <prefix>layer_1_kernel, ...)",
    )
    ap.add_argument(
        "--audio",
        action="store_true",
        help="profile the link layer of one second of audio in the audio mode instead",
    )
    a = ap.parse_args()
    if a.audio:
        from elatta_measure.bench_frontend import frontend_clips

        audio_profile(a.build / "fw.elf", frontend_clips(a.data, 1)[0], a.top)
        return 0
    from elatta_host.plan import load_build

    from codegen.base.features import quantize_features

    _, q = load_build(a.build)  # the build's program: feature settings and input format
    ids, xf = samples(a.data, q.source.meta, 1)
    x = quantize_features(xf, q.x_fmt)
    for mode in a.mode or ["no_adapt", "strict"]:
        r = profile_one(a.build / "fw.elf", np.asarray(x[0], dtype=np.int16), int(ids[0]), mode)
        by_fn = r["by_fn"]
        by_cls = r["by_cls"]
        assert isinstance(by_fn, collections.Counter) and isinstance(by_cls, dict)
        total = sum(by_fn.values())
        enc, ada, tot = r["ticks"]  # type: ignore[misc]
        print(
            f"\n## {mode}: {total} guest instructions logged; RESULT ticks encoder {enc}, "
            f"adapt {ada}, total {tot}\n"
        )
        print("| function | instructions | % | neon | vfp | alu | multiply | load/store | branch |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for fn, n in by_fn.most_common(a.top):
            c = by_cls[fn]
            print(
                f"| {fn} | {n} | {100 * n / total:.1f} | {c['neon']} | {c['vfp']} | "
                f"{c['alu']} | {c['multiply']} | {c['load/store']} | {c['branch']} |"
            )
        by_mn = r["by_mn"]
        assert isinstance(by_mn, dict)
        for fn in a.mnemonics:
            mn = collections.Counter()
            for part in fn.split(","):
                mn.update(by_mn.get(part, collections.Counter()))
            if not mn:
                print(f"\n{fn}: no instructions executed (is it inlined or misspelt?)")
                continue
            print(f"\n### {fn} by mnemonic ({sum(mn.values())} instructions)\n")
            print("| mnemonic | instructions | % |")
            print("|---|---:|---:|")
            for m, k in mn.most_common():
                print(f"| {m} | {k} | {100 * k / sum(mn.values()):.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
