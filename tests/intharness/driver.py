"""Build and drive ``tests/intharness/harness.c``: the firmware ELaTTA kernels with their reference
operations (firmware/kernels/ref) plus generated params files, compiled for the host with
ASan/UBSan, compared field by field with the Python integer reference
(`codegen.intref.adapt.adapt_int`). The NEON operations run the same comparison under QEMU
(tests/adaptprobe.py, both variants)."""

from __future__ import annotations

import functools
import hashlib
import os
import struct
import subprocess
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from codegen.base.resources import firmware_dir
from codegen.elatta.cmaes import default_popsize
from codegen.emit.adapt import emit_adapt_c
from codegen.intref.adapt import IntAdaptResult
from codegen.ir.nodes import AdaptConfig, AdaptParams
from codegen.quantize.adapt import quantize_adapt
from codegen.target import sources
from codegen.target.toolchain import COMMON_CFLAGS, find_tool

HERE = Path(__file__).resolve().parent
SANITIZE = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer")
KERNELS = sources.ADAPT
TraceRec = tuple[int, str, int, npt.NDArray[np.int64]]
ENV = {
    **os.environ,
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
}


@dataclass(frozen=True)
class Harness:
    exe: Path
    params: tuple[AdaptParams, ...]
    trace: bool

    def _run(self, args: Sequence[str], data: bytes) -> bytes:
        proc = subprocess.run(
            [str(self.exe), *args], input=data, capture_output=True, env=ENV, check=False
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"harness {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr.decode()}"
            )
        return proc.stdout

    def adapt(
        self, idx: int, z: npt.ArrayLike, ids: npt.ArrayLike, trace_path: Path | None = None
    ) -> tuple[dict[str, np.ndarray], list[TraceRec] | None]:
        P = self.params[idx]
        Z = np.asarray(z, dtype="<i2")
        ida = np.asarray(ids, dtype="<u4")
        N, D = Z.shape
        rec = np.empty(N, dtype=[("id", "<u4"), ("z", "<i2", (D,))])
        rec["id"], rec["z"] = ida, Z
        data = struct.pack("<II", idx, N) + rec.tobytes()
        out = self._run(["adapt", str(trace_path) if trace_path else "-"], data)
        k, C = P.k, P.n_classes
        width = 5 + k + 2 * C
        arr = np.frombuffer(out, dtype="<i4").reshape(N, width).astype(np.int64)
        res = {
            "pred_noadapt": arr[:, 0],
            "pred": arr[:, 1],
            "H_noadapt": arr[:, 2],
            "H_best": arr[:, 3],
            "n_pivot_fix": arr[:, 4],
            "p_best": arr[:, 5 : 5 + k],
            "logits_noadapt": arr[:, 5 + k : 5 + k + C],
            "logits": arr[:, 5 + k + C :],
        }
        return res, (read_trace(trace_path) if trace_path else None)

    def rng(self, seed: int, ids: Sequence[int], count: int) -> np.ndarray:
        data = struct.pack("<QII", seed, len(ids), count) + np.asarray(ids, "<u4").tobytes()
        return np.frombuffer(self._run(["rng"], data), "<u4").reshape(len(ids), count)

    def gauss(self, idx: int, seed: int, ids: Sequence[int], count: int) -> np.ndarray:
        data = struct.pack("<IQII", idx, seed, len(ids), count) + np.asarray(ids, "<u4").tobytes()
        return np.frombuffer(self._run(["gauss"], data), "<i4").reshape(len(ids), count)

    def entropy(self, idx: int, L: npt.ArrayLike, frac: int) -> tuple[np.ndarray, np.ndarray]:
        La = np.asarray(L, dtype="<i2")
        n, c = La.shape
        out = self._run(["entropy"], struct.pack("<IIIi", idx, n, c, frac) + La.tobytes())
        arr = np.frombuffer(out, "<i4").reshape(n, 2).astype(np.int64)
        return arr[:, 0], arr[:, 1]

    def udiv(self, num: npt.ArrayLike, den: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """elt_udiv64 and elt_udiv64_r (one reciprocal) on uint64 pairs."""
        pairs = np.stack([np.asarray(num, "<u8"), np.asarray(den, "<u8")], axis=1)
        out = self._run(["udiv"], struct.pack("<I", len(pairs)) + pairs.tobytes())
        q = np.frombuffer(out, "<u8").reshape(-1, 2)
        return q[:, 0], q[:, 1]

    def isqrt(self, n: npt.ArrayLike) -> np.ndarray:
        a = np.asarray(n, "<u8")
        return np.frombuffer(self._run(["isqrt"], struct.pack("<I", len(a)) + a.tobytes()), "<u4")

    def tables(self, idx: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        arr = np.frombuffer(self._run(["tables"], struct.pack("<I", idx)), "<i4").astype(np.int64)
        return arr[:257], arr[257:514], arr[514:].reshape(32, 33)

    def params_text(self, idx: int) -> dict[str, int]:
        out = self._run(["params"], struct.pack("<I", idx)).decode()
        return {ln.split()[0]: int(ln.split()[1]) for ln in out.splitlines() if ln.strip()}

    def sizes(self) -> dict[str, int]:
        out = self._run(["sizes"], b"").decode()
        return {ln.split()[0]: int(ln.split()[1]) for ln in out.splitlines() if ln.strip()}


def read_trace(path: Path) -> list[TraceRec]:
    buf = path.read_bytes()
    recs: list[TraceRec] = []
    off = 0
    while off < len(buf):
        sample, index, ln = struct.unpack_from("<iii", buf, off)
        off += 12
        stage = buf[off : off + ln].decode()
        off += ln
        (n,) = struct.unpack_from("<i", buf, off)
        off += 4
        data = np.frombuffer(buf, "<i4", count=n, offset=off).astype(np.int64)
        off += 4 * n
        recs.append((sample, stage, index, data))
    return recs


def build_harness(
    params: Sequence[AdaptParams],
    out: Path | None = None,
    *,
    trace: bool = True,
    sanitize: bool = True,
    defines: Sequence[str] = (),
) -> Harness:
    """Generate every params file (prefix t<i>_), a registry, and compile one executable.

    Without ``out`` the build is cached under the system temp directory, keyed by the hash of
    every generated and hand-written source and of the flags (a changed input never reuses it).
    """
    if out is None:
        h = hashlib.sha256(repr((trace, sanitize, tuple(defines))).encode())
        for i, P in enumerate(params):
            for name, text in sorted(emit_adapt_c(P, f"t{i}_").items()):
                h.update(name.encode() + text.encode())
        fw = firmware_dir()
        ops = sorted((fw / sources.HOST.folder).glob("*.h"))
        for src in [HERE / "harness.c", *sorted(fw.glob("elt_*")), fw / "fw_fixed.h", *ops]:
            h.update(src.name.encode() + src.read_bytes())
        out = Path(tempfile.gettempdir()) / "elt_intharness" / h.hexdigest()[:16]
        if (out / "harness").is_file():
            return Harness(out / "harness", tuple(params), trace)
    out.mkdir(parents=True, exist_ok=True)
    generated: list[Path] = []
    headers: list[str] = []
    for i, P in enumerate(params):
        for name, text in emit_adapt_c(P, f"t{i}_").items():
            (out / name).write_text(text)
            if name.endswith(".c"):
                generated.append(out / name)
            else:
                headers.append(name)
    reg = [
        "#include <stdint.h>",
        *(f'#include "{h}"' for h in headers),
        "const elt_adapt_params_t *const harness_params[] = {",
        *(f"    &t{i}_adapt_params," for i in range(len(params))),
        "};",
        f"const int32_t harness_n_params = {len(params)};",
        "",
    ]
    (out / "harness_registry.c").write_text("\n".join(reg))
    fw = firmware_dir()
    exe = out / "harness"
    cmd = [
        find_tool("cc"),
        *COMMON_CFLAGS,
        "-O1",
        "-g",
        *(SANITIZE if sanitize else ()),
        *(["-DELT_TRACE"] if trace else []),
        *defines,
        *sources.HOST.compile_flags(fw),
        f"-I{fw}",
        f"-I{out}",
        str(HERE / "harness.c"),
        str(out / "harness_registry.c"),
        *map(str, generated),
        *(str(fw / k) for k in KERNELS),
        "-o",
        str(exe),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"harness build failed:\n$ {' '.join(cmd)}\n{proc.stderr}")
    return Harness(exe, tuple(params), trace)


def first_result_mismatch(py: IntAdaptResult, c: dict[str, np.ndarray]) -> str | None:
    """'' if every field is equal, else the first differing sample, field and both values."""
    n = py.pred.shape[0]
    for i in range(n):
        for f in IntAdaptResult.FIELDS:
            a = np.asarray(getattr(py, f))[i]
            b = np.asarray(c[f])[i]
            if not np.array_equal(np.asarray(a, np.int64), np.asarray(b, np.int64)):
                return f"sample {i}: field {f}: python {a!r} != C {b!r}"
    return None


def group_trace(recs: Sequence[TraceRec]) -> dict[int, list[tuple[str, int, np.ndarray]]]:
    out: dict[int, list[tuple[str, int, np.ndarray]]] = defaultdict(list)
    for s, stage, idx, data in recs:
        out[s].append((stage, idx, np.asarray(data, np.int64)))
    return out


def first_trace_mismatch(py: Sequence[TraceRec], c: Sequence[TraceRec]) -> str | None:
    """The first sample, stage, iteration and position where the traces differ."""
    gp, gc = group_trace(py), group_trace(c)
    for s in sorted(set(gp) | set(gc)):
        a, b = gp.get(s, []), gc.get(s, [])
        for j in range(max(len(a), len(b))):
            if j >= len(a) or j >= len(b):
                extra = a[j] if j < len(a) else b[j]
                return f"sample {s}: record {j} ({extra[0]}) only on one side"
            (sa, ia, da), (sb, ib, db) = a[j], b[j]
            if (sa, ia) != (sb, ib) or da.shape != db.shape:
                return (
                    f"sample {s}: record {j}: python {sa}[{ia}] {da.shape} != "
                    f"C {sb}[{ib}] {db.shape}"
                )
            if not np.array_equal(da, db):
                pos = int(np.flatnonzero(da != db)[0])
                return (
                    f"sample {s}: stage {sa} iteration {ia} position {pos}: python {da[pos]} "
                    f"!= C {db[pos]}"
                )
    return None


def random_head(
    rng: np.random.Generator, D: int = 32, C: int = 12, k: int = 2, scale: float = 0.5
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random linear head (W [C, D], b [C]), an orthonormal V [D, k] and 256 clean latents."""
    W = rng.normal(size=(C, D)) * scale
    b = rng.normal(size=C) * 0.3
    V = np.linalg.qr(rng.normal(size=(D, k)))[0]
    z_calib = np.tanh(rng.normal(size=(256, D)))
    return W, b, V, z_calib


def random_latents(
    rng: np.random.Generator, n: int, D: int = 32, saturate: float = 0.0
) -> np.ndarray:
    """int16 Q0.15 latents like LSTM h_T; a fraction ``saturate`` of entries at ±full scale."""
    z = np.round(np.tanh(rng.normal(size=(n, D)) * 1.5) * 32767).astype(np.int64)
    if saturate > 0:
        mask = np.asarray(rng.random(size=z.shape) < saturate)
        z[mask] = rng.choice(np.array([-32768, 32767]), size=int(mask.sum()))
    return z


@dataclass(frozen=True)
class Case:
    mode: str
    k: int
    n: int
    v1: bool = False
    v2: tuple[int, int] | None = None
    samples: int = 500
    sigma0: float = 0.3
    saturate: float = 0.0
    head_scale: float = 0.5
    active: bool = True
    traced: int = 12  # samples whose full trace is compared

    def params(self, seed: int) -> AdaptParams:
        rng = np.random.default_rng(seed)
        W, b, V, zc = random_head(rng, k=self.k, scale=self.head_scale)
        cfg = AdaptConfig(
            k=self.k,
            n_iter=self.n,
            lam=default_popsize(self.k),
            sigma0=self.sigma0,
            mode=self.mode,
            seed=seed * 7919,
            beta=0.6,
            radius=0.8,
            qelatta_v1=self.v1,
            qelatta_v2=self.v2,
            active=self.active,
        )
        return quantize_adapt(W, b, V, cfg, zc)


# The fast slice: every mode, k, n, V1, V2 8b4 / 4b2, saturating inputs; 10,000 samples.
FAST = (
    Case("no_adapt", 2, 2, samples=2500),
    Case("strict", 2, 2, samples=2700, saturate=0.05),
    Case("strict", 1, 1, samples=500),
    Case("strict", 4, 5, v1=True, samples=800),
    Case("strict", 8, 2, samples=500, active=False),
    Case("strict", 8, 5, v1=True, v2=(8, 4), samples=500),
    Case("strict", 2, 5, v2=(4, 2), samples=1000),
    Case("continual", 2, 2, samples=150),
    Case("continual_bounded", 2, 2, samples=150),
    Case("continual_bounded", 4, 1, v1=True, v2=(4, 2), samples=100),
    Case("strict", 2, 2, samples=1000, sigma0=16.0, saturate=0.5, head_scale=6.0),
    Case("continual", 2, 5, samples=100, sigma0=2.0, saturate=0.2),
)


@functools.lru_cache(maxsize=1)
def shared_harness() -> Harness:
    """One sanitized, traced build of the fast slice, shared by every test module."""
    return build_harness([c.params(i) for i, c in enumerate(FAST)])


def div_cases(rng: np.random.Generator, n: int = 4000) -> tuple[list[int], list[int]]:
    """Numerator/denominator pairs for the exact division: the kernels' own shapes (entropy
    T·2²⁶ / S, Cholesky and active-weight quotients, the clip), quotients around 2³² (the slow
    path above), the largest numerators and denominators, and powers of two ± 1."""
    num: list[int] = []
    den: list[int] = []
    edges = [
        1,
        2,
        3,
        2**31 - 1,
        2**31,
        2**31 + 1,
        2**32 - 1,
        2**32,
        2**32 + 1,
        2**39 - 1,
        2**62 - 1,
        2**63 - 1,
        2**63,
        2**64 - 1,
    ]
    for d in edges:
        for q in (0, 1, 2**31, 2**32 - 1, 2**32, 2**33):
            for r in (0, 1, d - 1):
                v = q * d + r
                if v < 2**64 and r < d:
                    num.append(v)
                    den.append(d)
        for v in (0, 1, 2**63 - 1, 2**64 - 1, d - 1, d, d + 1):
            if 0 <= v < 2**64:
                num.append(v)
                den.append(d)
    for b in range(1, 64):
        for d in ((1 << b) - 1, 1 << b, (1 << b) + 1):
            num.append(min(d * (2**32 - 1) + d - 1, 2**64 - 1))
            den.append(d)
    while len(num) < n:
        d = int(rng.integers(1, 2**62)) >> int(rng.integers(0, 62))
        d = max(d, 1)
        q = int(rng.integers(0, 2**32)) >> int(rng.integers(0, 32))
        v = q * d + int(rng.integers(0, d)) if d < 2**62 else q * d
        if v < 2**64:
            num.append(v)
            den.append(d)
    for _ in range(n // 4):  # entropy: S in [2^30, 2^38], T 2^26 < 2^63 with T/S <= ln 256
        s = int(rng.integers(2**30, 2**38))
        t = min(int(rng.integers(0, int(s * 5.6) + 1)), 2**37 - 1)  # T < 2^37 (numeric.md)
        num.append(t << 26)
        den.append(s)
    return num, den


def isqrt_cases(rng: np.random.Generator, n: int = 4000) -> list[int]:
    """Every shape the kernels pass (< 2⁶²): perfect squares ± 1 across all sizes, powers of
    two ± 1, random values of every bit length."""
    out = [0, 1, 2, 3, 4, 2**62 - 1, (2**31 - 1) ** 2, (2**31 - 1) ** 2 - 1]
    for b in range(1, 62):
        out += [(1 << b) - 1, 1 << b, (1 << b) + 1]
    for b in range(1, 32):
        r = int(rng.integers(1 << (b - 1), 1 << b))
        out += [r * r - 1, r * r, r * r + 1, (r + 1) * (r + 1) - 1]
    while len(out) < n:
        out.append(int(rng.integers(0, 2**62)) >> int(rng.integers(0, 62)))
    return [v for v in out if 0 <= v < 2**62]
