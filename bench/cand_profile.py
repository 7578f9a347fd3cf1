"""Executed instructions per candidate of the candidate logits (the generated kernel of
codegen/emit/adapt_neon.py, called from elt_adapt_run) for a class count C at k, from QEMU's exec
log.

Builds the QEMU probe of tests/firmware/test_int_qemu.py for one model with ELT_C_MAX = C and
ELT_K_MAX = k (so elt_adapt_run takes the kernel), runs it with `-d in_asm,exec,nochain`
filtered to the kernel, and divides its executed instructions by the candidates evaluated
(samples x n x lambda). Also prints the kernel's VMLAL count (C k / 2 rounded up per block).

    python bench/cand_profile.py --k 16 10 12 20 35
"""

from __future__ import annotations

import argparse
import bisect
import collections
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _bench_profile() -> ModuleType:
    """bench/profile.py by path (its name is also the standard library's profiler)."""
    spec = importlib.util.spec_from_file_location("bench_profile", ROOT / "bench" / "profile.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def per_candidate(C: int, k: int, samples: int = 3) -> tuple[float, int]:
    from test_int_qemu import Probe, run_probe

    from codegen.emit.adapt_neon import CandSpec, vmlal_per_candidate
    from codegen.target.boards import DEFAULT_BOARD, get_board
    from codegen.target.toolchain import find_tool

    prof = _bench_profile()
    parse_log, symbols = prof.parse_log, prof.symbols
    pr = Probe(40, C, k, "strict", 2, samples=samples, sigma0=0.5)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        params, _, _ = run_probe(tmp, False, (pr,))
        elf = tmp / "probe.elf"
        addrs, names, sizes = symbols(elf)
        kernel = "t0_adapt_cand_rows"
        if kernel not in names:
            raise SystemExit(f"C={C} k={k}: no generated kernel in the probe (shifts?)")
        filt = ",".join(
            f"0x{a:x}+0x{n:x}" for a, nm, n in zip(addrs, names, sizes, strict=True) if nm == kernel
        )
        log = tmp / "qemu.log"
        machine = get_board(DEFAULT_BOARD).core.qemu_machine  # the probe's board: run_probe's
        cmd = [find_tool("qemu-system-arm"), "-M", machine, "-nographic", "-monitor"]
        cmd += ["none", "-icount", "shift=0", "-kernel", str(elf), "-serial", "stdio"]
        cmd += ["-serial", "null", "-d", "in_asm,exec,nochain", "-D", str(log), "-dfilter", filt]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, start_new_session=True)
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("END"):
                    break
        finally:
            proc.kill()
            proc.wait()
        blocks, execs = parse_log(log)
    by: collections.Counter[str] = collections.Counter()
    for pc, n in execs.items():
        body = blocks.get(pc)
        if body is not None:
            by[names[bisect.bisect_right(addrs, pc) - 1]] += n * len(body)
    P = params[0]
    ncand = samples * P.cfg.n_iter * P.cfg.lam
    return by[kernel] / ncand, vmlal_per_candidate(CandSpec(C, k, P.g_shift + P.head_shift))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("classes", type=int, nargs="+", help="class counts C")
    ap.add_argument("--k", type=int, default=16)
    args = ap.parse_args()
    print("| C | k | instructions per candidate | VMLAL | C k / 2 |")
    print("|---:|---:|---:|---:|---:|")
    for C in args.classes:
        ins, vm = per_candidate(C, args.k)
        print(f"| {C} | {args.k} | {ins:.1f} | {vm} | {C * args.k / 2:g} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
