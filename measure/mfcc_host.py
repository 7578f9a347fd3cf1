"""The integer MFCC front end in C (``firmware/elt_mfcc_s16.c`` + the generated
``<prefix>mfcc_params.c``), compiled for the host with
`elatta_measure.hostlib.build_host_library` and driven through ctypes, so tests compare it with
`codegen.intref.mfcc` without a board."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import numpy.typing as npt
from elatta_measure.hostlib import HostBuild, build_host_library

from codegen.emit.mfcc import emit_mfcc_c, mfcc_cflags
from codegen.ir.mfcc import QMfcc
from codegen.target import sources

PREFIX = "host_"


class HostMfcc:
    """ctypes view of one host build of the front end."""

    def __init__(self, build: HostBuild, q: QMfcc) -> None:
        self.build = build
        self.q = q
        self.lib = ctypes.CDLL(str(build.library))

    def clips(self, pcm: npt.ArrayLike) -> np.ndarray:
        """int16 clips [n, samples] → int16 features [n, frames, n_mfcc]."""
        x = np.ascontiguousarray(pcm, dtype=np.int16)
        p = self.q.params
        if x.ndim != 2 or x.shape[1] < p.win_length:
            raise ValueError(f"clips must have shape [n, >= {p.win_length}], got {x.shape}")
        T = 1 + (x.shape[1] - p.win_length) // p.hop_length
        out = np.zeros((x.shape[0], T, p.n_mfcc), np.int16)
        got = self.lib.elt_host_mfcc(
            x.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_uint32(x.shape[0]),
            ctypes.c_uint32(x.shape[1]),
            out.ctypes.data_as(ctypes.c_void_p),
        )
        if x.shape[0] and got != T:
            raise AssertionError(f"C front end made {got} frames per clip, expected {T}")
        return out

    def stream(self, pcm: npt.ArrayLike, chunk: int, max_frames: int = 1 << 30) -> np.ndarray:
        """One stream of int16 samples pushed in chunks of ``chunk`` → features [frames, F]."""
        x = np.ascontiguousarray(pcm, dtype=np.int16)
        p = self.q.params
        if x.ndim != 1 or chunk < 1 or max_frames < 1:
            raise ValueError(f"stream: samples [n] and chunk, max_frames >= 1, got {x.shape}")
        T = max(0, 1 + (x.size - p.win_length) // p.hop_length) if x.size >= p.win_length else 0
        out = np.zeros((T, p.n_mfcc), np.int16)
        got = self.lib.elt_host_mfcc_stream(
            x.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_int32(x.size),
            ctypes.c_int32(chunk),
            ctypes.c_int32(min(max_frames, 2**31 - 1)),
            out.ctypes.data_as(ctypes.c_void_p),
        )
        if got != T:
            raise AssertionError(f"C stream made {got} frames, expected {T}")
        return out

    def frames(self, frames: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """int16 frames [n, win_length] → (features, block exponents, log2 mel energies)."""
        x = np.ascontiguousarray(frames, dtype=np.int16)
        p = self.q.params
        if x.ndim != 2 or x.shape[1] != p.win_length:
            raise ValueError(f"frames must have shape [n, {p.win_length}], got {x.shape}")
        n = x.shape[0]
        out = np.zeros((n, p.n_mfcc), np.int16)
        sh = np.zeros(n, np.int32)
        lg = np.zeros((n, p.n_mels), np.int32)
        self.lib.elt_host_mfcc_frames(
            x.ctypes.data_as(ctypes.c_void_p),
            ctypes.c_uint32(n),
            out.ctypes.data_as(ctypes.c_void_p),
            sh.ctypes.data_as(ctypes.c_void_p),
            lg.ctypes.data_as(ctypes.c_void_p),
        )
        return out, sh, lg


def build_host_mfcc(q: QMfcc, out_dir: Path, *, sanitize: bool = False) -> HostMfcc:
    """Emit the front end's tables into ``out_dir/src`` and compile them with the kernel."""
    from codegen.base.resources import jinja_env

    src = out_dir / "src"
    src.mkdir(parents=True, exist_ok=True)
    files = emit_mfcc_c(q, PREFIX)
    for name, text in files.items():
        (src / name).write_text(text)
    api = (
        jinja_env()
        .get_template("mfcc_host_api.c.j2")
        .render(
            header=f"{PREFIX}mfcc_params.h",
            prefix=PREFIX,
            n_mfcc=q.params.n_mfcc,
            n_mels=q.params.n_mels,
            win_length=q.params.win_length,
        )
    )
    hb = build_host_library(
        src,
        api,
        out_dir,
        sanitize=sanitize,
        firmware_sources=sources.MFCC,
        cflags=mfcc_cflags(q),
    )
    return HostMfcc(hb, q)
