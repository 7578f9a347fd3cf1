"""The generated C, compiled for the host as a shared library and driven through ctypes.

The device sources (generated model + adaptation files, the hand-written kernels) are compiled
unchanged with the host gcc (``-fwrapv``, ``-Wall -Wextra -Werror -std=c11``), plus the
host-only wrapper ``templates/host_api.c.j2``. Tests then compare the C and the Python integer
reference (`codegen.intref.model.infer_int`) field for field without a board (docs/architecture.md
§7: render → host-compiled C with ``-fsanitize=undefined`` → QEMU).

``trace=True`` builds with ``-DELT_TRACE``: the kernels report every named trace point (LSTM
c[t] and h[t], z_t, then the adaptation core's) to a Python callback; `first_mismatch` uses it
to name the first differing sample, stage, index and both values.
"""

from __future__ import annotations

import ctypes
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.base.errors import CodegenError
from codegen.base.resources import firmware_dir
from codegen.emit.flags import model_cflags
from codegen.ir.nodes import QModel
from codegen.target import sources
from codegen.target.toolchain import COMMON_CFLAGS, find_tool, run_tool

HOST_CFLAGS: tuple[str, ...] = (
    *COMMON_CFLAGS,
    "-O2",
    "-g",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
)
UBSAN_CFLAGS: tuple[str, ...] = (
    "-fsanitize=undefined",
    "-fno-sanitize-recover=all",
    "-fno-omit-frame-pointer",
)
_TRACE_FN = ctypes.CFUNCTYPE(
    None, ctypes.c_char_p, ctypes.c_int32, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32
)


def build_for(
    q: QModel, src_dir: Path, out_dir: Path, *, sanitize: bool = False, trace: bool = False
) -> HostModel:
    """Host library of the generated sources in ``src_dir`` for the fixed IR ``q``."""
    fw_sources = sources.kernels(q.adapt is not None)
    hb = build_host_library(
        src_dir,
        render_host_api(q),
        out_dir,
        sanitize=sanitize,
        trace=trace,
        firmware_sources=fw_sources,
        cflags=model_cflags(q),
    )
    return HostModel(hb, q)


def render_host_api(q: QModel) -> str:
    from codegen.emit.c import banner, env, model_context

    headers: list[str] = []
    if q.adapt is not None:
        from codegen.emit.adapt import emit_adapt_c

        headers = sorted(n for n in emit_adapt_c(q.adapt, q.prefix) if n.endswith(".h"))
    ctx = model_context(q, headers)
    return (
        env()
        .get_template("host_api.c.j2")
        .render(banner=banner(q, "host_api.c: ctypes entry points of the host build"), **ctx)
    )


@dataclass(frozen=True)
class HostBuild:
    library: Path
    command: str
    sanitize: bool
    trace: bool


def build_host_library(
    src_dir: Path,
    host_api: str,
    out_dir: Path,
    *,
    sanitize: bool = False,
    trace: bool = False,
    firmware_sources: Sequence[str] = (),
    cflags: Sequence[str] = (),
) -> HostBuild:
    """Compile ``src_dir/*.c`` + the named ``firmware/`` kernels (with their reference
    operations, firmware/kernels/ref: the host has no NEON) + the host wrapper into a shared
    library; the file name carries a hash of the inputs, so a changed source never loads a stale
    library (ctypes caches by path)."""
    cc = find_tool("cc")
    fw = firmware_dir()
    ops = fw / sources.HOST.folder
    out_dir.mkdir(parents=True, exist_ok=True)
    api = out_dir / "host_api.c"
    api.write_text(host_api)
    srcs = sorted(src_dir.glob("*.c")) + [fw / s for s in firmware_sources] + [api]
    flags = [
        *HOST_CFLAGS,
        *(UBSAN_CFLAGS if sanitize else ()),
        *(["-DELT_TRACE"] if trace else []),
        *sources.HOST.compile_flags(fw),
        *cflags,
    ]
    digest = hashlib.sha256(" ".join(flags).encode())
    headers = sorted(src_dir.glob("*.h")) + sorted(fw.glob("*.h")) + sorted(ops.glob("*.h"))
    for s in srcs + headers:
        digest.update(s.name.encode() + b"\0" + s.read_bytes())
    lib = out_dir / f"libelt_host_{digest.hexdigest()[:12]}.so"
    cmd = [cc, *flags, f"-I{src_dir}", f"-I{fw}", "-o", str(lib), *map(str, srcs)]
    if not lib.is_file():
        run_tool(cmd, what="host gcc")
    return HostBuild(lib, " ".join(cmd), sanitize, trace)


TraceDict = dict[str, list[tuple[int, np.ndarray]]]


@dataclass
class TraceRecorder:
    """Collects (stage, index, values) events from one C run, in order."""

    events: list[tuple[str, int, np.ndarray]] = field(default_factory=list)

    def __call__(self, stage: bytes, index: int, width: int, ptr: int, n: int) -> None:
        ctype = ctypes.c_int16 if width == 16 else ctypes.c_int32
        arr = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctype)), shape=(n,))
        self.events.append((stage.decode(), int(index), arr.astype(np.int64).copy()))


class HostModel:
    """ctypes view of one host build of the generated C."""

    def __init__(self, build: HostBuild, q: QModel) -> None:
        self.build = build
        self.q = q
        self.lib = ctypes.CDLL(str(build.library))
        self.T, self.F, self.H = q.num_frames, q.input_size, q.latent_size
        got = tuple(int(self.lib.elt_host_shape(ctypes.c_uint32(i))) for i in range(3))
        if got != (self.T, self.F, self.H):
            want = (self.T, self.F, self.H)
            raise CodegenError(f"host library shapes {got} differ from the IR {want}")
        self._cb: Any = None

    def _features(self, x: npt.ArrayLike) -> np.ndarray:
        X = np.asarray(x)
        if X.ndim != 3 or X.shape[1:] != (self.T, self.F):
            raise ValueError(f"features must have shape [N, {self.T}, {self.F}], got {X.shape}")
        if X.size and (int(X.min()) < -32768 or int(X.max()) > 32767):
            raise ValueError("features must be int16 values")
        return np.ascontiguousarray(X, dtype=np.int16)

    def encode(self, x: npt.ArrayLike) -> np.ndarray:
        X = self._features(x)
        z = np.zeros((X.shape[0], self.H), dtype=np.int16)
        self.lib.elt_host_encode(
            X.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_uint32(X.shape[0]),
            z.ctypes.data_as(ctypes.c_void_p),
        )
        return z

    def run(
        self,
        x: npt.ArrayLike,
        sample_ids: npt.ArrayLike,
        mode: str | None = None,
        reset: bool = True,
    ) -> dict[str, np.ndarray]:
        """All per-sample outputs of the C pipeline (same names as `IntInferResult.fields`).

        ``mode`` overrides the built mode (the host wrapper copies the params and sets the
        field); ``reset`` starts a new stream first, as `infer_int` does.
        """
        from codegen.elatta.float_ref import MODES

        if self.q.adapt is None:
            raise CodegenError("this host library has no adaptation core (encode only)")
        X = self._features(x)
        ids = np.asarray(sample_ids)
        N = X.shape[0]
        if ids.shape != (N,) or not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"sample_ids must be an integer array of shape [{N}]")
        if N and (int(ids.min()) < 0 or int(ids.max()) >= 2**32):
            raise ValueError("sample_ids must be in [0, 2^32)")
        if mode is not None and mode not in MODES:
            raise ValueError(f"mode={mode!r}: use one of {MODES}")
        C, k = len(self.q.source.classes), self.q.source.adapt.k
        ids32 = np.ascontiguousarray(ids, dtype=np.uint32)
        z = np.zeros((N, self.H), np.int16)
        ints = np.zeros((N, 5), np.int32)
        p_best = np.zeros((N, k), np.int32)
        l0 = np.zeros((N, C), np.int16)
        lb = np.zeros((N, C), np.int16)

        def ptr(a: np.ndarray) -> ctypes.c_void_p:
            return a.ctypes.data_as(ctypes.c_void_p)

        rc = self.lib.elt_host_infer(
            ptr(X),
            ctypes.c_uint32(N),
            ptr(ids32),
            ctypes.c_int32(-1 if mode is None else MODES.index(mode)),
            ctypes.c_int32(int(reset)),
            ptr(z),
            ptr(ints),
            ptr(p_best),
            ptr(l0),
            ptr(lb),
        )
        if rc != 0:
            raise CodegenError(f"elt_host_infer returned {rc}")
        return {
            "z": z,
            "pred_noadapt": ints[:, 0].copy(),
            "logits_noadapt": l0,
            "H_noadapt": ints[:, 2].copy(),
            "pred": ints[:, 1].copy(),
            "logits": lb,
            "H_best": ints[:, 3].copy(),
            "p_best": p_best,
            "n_pivot_fix": ints[:, 4].copy(),
        }

    def activation_table(self, which: str) -> np.ndarray:
        """C σ ("sigmoid") or 2σ − 1 ("tanh2") for every int16 input, index v + 32768."""
        out = np.zeros(65536, dtype=np.int16)
        self.lib.elt_host_activation_table(
            ctypes.c_uint32({"sigmoid": 0, "tanh2": 1}[which]), out.ctypes.data_as(ctypes.c_void_p)
        )
        return out

    def traced(self, fn: Callable[[], Any]) -> tuple[Any, list[tuple[str, int, np.ndarray]]]:
        """Run ``fn`` with the trace sink installed (library built with trace=True)."""
        if not self.build.trace:
            raise CodegenError("this host library was built without trace=True (-DELT_TRACE)")
        rec = TraceRecorder()
        cb = _TRACE_FN(rec)
        self.lib.elt_host_set_trace(cb)
        try:
            out = fn()
        finally:
            self.lib.elt_host_set_trace(_TRACE_FN())
        return out, rec.events


@dataclass(frozen=True)
class Mismatch:
    """The first difference between the C build and the Python integer reference."""

    sample: int  # row in the batch
    sample_id: int
    stage: str  # result field ("pred", "logits", ...) or trace point ("lstm.h", "z", ...)
    index: tuple[int, ...]  # position inside that field / (trace index, element)
    c_value: int
    py_value: int

    def __str__(self) -> str:
        return (
            f"sample {self.sample} (id {self.sample_id}): first difference at {self.stage}"
            f"{list(self.index)}: C={self.c_value} Python={self.py_value}"
        )


def first_field_mismatch(
    c: dict[str, np.ndarray],
    py: dict[str, np.ndarray],
    sample_ids: npt.ArrayLike,
    order: Sequence[str] | None = None,
) -> Mismatch | None:
    """Compare per-sample result fields (arrays with the sample on axis 0). Returns the first
    differing sample, and within it the first field in ``order`` (pipeline order) and index."""
    ids = np.asarray(sample_ids)
    names = list(order) if order is not None else sorted(py)
    for name in names:
        if name not in c:
            raise KeyError(f"C results lack field {name!r}")
        a, b = np.asarray(c[name]), np.asarray(py[name])
        if a.shape != b.shape:
            raise ValueError(f"field {name}: C shape {a.shape} vs Python {b.shape}")
    bad_rows = sorted(
        {
            int(r)
            for name in names
            for r in np.nonzero(
                (np.asarray(c[name]) != np.asarray(py[name]))
                .reshape(np.asarray(py[name]).shape[0], -1)
                .any(axis=1)
            )[0]
        }
    )
    if not bad_rows:
        return None
    row = bad_rows[0]
    for name in names:
        a, b = np.asarray(c[name])[row], np.asarray(py[name])[row]
        diff = np.argwhere(np.atleast_1d(a != b))
        if diff.size:
            pos = tuple(int(v) for v in diff[0])
            av, bv = np.atleast_1d(a)[pos], np.atleast_1d(b)[pos]
            return Mismatch(row, int(ids[row]), name, pos, int(av), int(bv))
    raise AssertionError("unreachable")


def first_trace_mismatch(
    c_events: list[tuple[str, int, np.ndarray]],
    py_events: list[tuple[str, int, np.ndarray]],
    sample: int = 0,
    sample_id: int = 0,
) -> Mismatch | None:
    """Walk both traces of one sample in emission order; name the first differing trace point
    (stage, its index, element) and both values. A missing or extra event is a mismatch too."""
    for n in range(max(len(c_events), len(py_events))):
        if n >= len(c_events) or n >= len(py_events):
            have = c_events[n] if n < len(c_events) else py_events[n]
            who = "C" if n < len(c_events) else "Python"
            return Mismatch(sample, sample_id, f"{have[0]} (only in {who})", (have[1],), 0, 0)
        (cs, ci, cv), (ps, pi, pv) = c_events[n], py_events[n]
        if (cs, ci) != (ps, pi) or cv.shape != pv.shape:
            return Mismatch(
                sample, sample_id, f"trace order: C {cs}[{ci}] vs Python {ps}[{pi}]", (n,), 0, 0
            )
        diff = np.nonzero(cv != pv)[0]
        if diff.size:
            j = int(diff[0])
            return Mismatch(sample, sample_id, cs, (ci, j), int(cv[j]), int(pv[j]))
    return None


def compare_host_python(
    host: HostModel, x: npt.ArrayLike, sample_ids: npt.ArrayLike, mode: str | None = None
) -> Mismatch | None:
    """Run the C build and `infer_int` on the same batch and compare every field. On a
    difference, and if the library has trace points, re-run the first differing sample with
    traces on both sides and name the first differing stage instead of the result field."""
    from codegen.intref.model import RESULT_FIELDS, infer_int

    X = np.asarray(x)
    ids = np.asarray(sample_ids)
    c = host.run(X, ids, mode)
    py = infer_int(X, host.q, ids, mode).fields()
    mm = first_field_mismatch(c, py, ids, order=RESULT_FIELDS)
    if mm is None or not host.build.trace:
        return mm
    return diagnose(host, X, ids, mode, mm.sample) or mm


def diagnose(
    host: HostModel, x: np.ndarray, ids: np.ndarray, mode: str | None, row: int
) -> Mismatch | None:
    """Trace-level comparison of sample ``row`` (continual modes replay rows 0..row-1 first,
    untraced on the C side, so both carry the same state into the traced sample)."""
    from codegen.intref.model import infer_int

    m = mode if mode is not None else host.q.adapt_params.cfg.mode
    carry = m in ("continual", "continual_bounded")
    lo = 0 if carry else row
    if carry and row > 0:
        host.run(x[:row], ids[:row], mode, reset=True)
    _, c_events = host.traced(
        lambda: host.run(x[row : row + 1], ids[row : row + 1], mode, reset=not (carry and row))
    )
    py_events: list[tuple[str, int, np.ndarray]] = []
    last = row - lo

    def keep(sample: int, stage: str, index: int, values: np.ndarray) -> None:
        if sample == last:
            py_events.append((stage, int(index), np.asarray(values, np.int64).reshape(-1)))

    infer_int(x[lo : row + 1], host.q, ids[lo : row + 1], mode, trace=keep)
    return first_trace_mismatch(c_events, py_events, sample=row, sample_id=int(ids[row]))
