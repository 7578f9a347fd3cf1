"""The continuous mode's integer reference (docs/stream.md): the bit-exact twin of the device's
STREAM path (``firmware/fw_app_kws.c`` and ``firmware/elt_detect_s16.c``).

A stream has no clip boundaries. The integer MFCC (`codegen.intref.mfcc.MfccStream`) computes a
feature frame per hop; every ``every`` hops, once T frames exist, the last T frames are one
*window*. Window w ends with frame t_w = T − 1 + w · every and is scored from scratch
(recomputed, not a carried encoder state): the mode's input stage with its running statistics
(reset at STREAM_BEGIN, then carried from window to window as from clip to clip), the encoder,
the head without a latent search (`codegen.intref.model`). Its logits become probabilities
(`probs_q15`), which the detector (`Detector`) averages over the last ``smooth`` windows; the
first maximum of the average is the window's class and the average its score; a keyword class
whose score reaches ``threshold`` detects, unless a detection was made less than ``suppress``
hops before (TFLM micro_speech ``recognize_commands.cc`` averages, thresholds and suppresses
the same way; here the suppression holds for every class: one spoken word, one detection).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from codegen.base.errors import ConfigError
from codegen.intref.entropy import D_CLAMP, TABLE_MAX_FRAC, _terms_direct, entropy_terms
from codegen.ir.modes import mode as device_mode
from codegen.ir.nodes import QModel
from codegen.ir.wire import STREAM_SMOOTH_MAX

PROB_FRAC = 15  # probabilities and scores: Q0.15 (1.0 = 32768)
PROB_ONE = 1 << PROB_FRAC
FLAG_NORMALISED = 1  # a window record's flags: mode cmvn_select answered with the normalised run
FLAG_DETECT = 2  # the window detects


@dataclass(frozen=True)
class DetectorConfig:
    """What STREAM_BEGIN carries besides the mode (docs/stream.md, "Choosing the settings")."""

    # chosen on the FSDD validation stream by bench/stream_settings.py (docs/stream.md)
    every: int = 5  # hops between two scored windows (5 hops = 100 ms)
    smooth: int = 2  # scored windows the probabilities are averaged over
    threshold: int = 32440  # the smoothed probability that detects, Q0.15 (0.99)
    suppress: int = 75  # hops after a detection in which no other is made (1.5 s)
    keywords: int = 0  # bit c: class c may be detected
    records: bool = True  # every DETECTIONS carries its windows' records

    def __post_init__(self) -> None:
        for name, lo, hi in (
            ("every", 1, 255),
            ("smooth", 1, STREAM_SMOOTH_MAX),
            ("threshold", 0, PROB_ONE),
            ("suppress", 0, 0xFFFF),
            ("keywords", 0, 0xFFFFFFFF),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ConfigError(f"stream setting {name}={v!r}: an integer in {lo}..{hi}")

    def is_keyword(self, c: int) -> bool:
        return c < 32 and bool(self.keywords >> c & 1)


def keyword_mask(classes: tuple[str, ...] | list[str]) -> int:
    """Every class but the filler classes (``_silence_``, ``_unknown_``: names that start with
    an underscore) may be detected."""
    if len(classes) > 32:
        raise ConfigError(
            f"{len(classes)} classes: the continuous mode's keyword mask holds 32 (a u32)"
        )
    return sum(1 << c for c, name in enumerate(classes) if not name.startswith("_"))


def probs_q15(logits: npt.ArrayLike, frac: int) -> npt.NDArray[np.int64]:
    """softmax of int16 logits (Q(15−frac).frac) over the last axis, Q0.15, rounded: with the
    entropy kernel's terms e_i = 2^−round(d_i·log2 e) (Q1.30, d_i = max − l_i clamped at 31
    nats; `codegen.intref.entropy`) and S = Σ e_i ≥ 2^30, p_i = ⌊(e_i·2^15 + ⌊S/2⌋) / S⌋
    (``elt_probs_q15``). The maximum class has e = 2^30, so p ≤ 2^15."""
    L = np.asarray(logits, dtype=np.int64)
    d = np.minimum(np.max(L, axis=-1, keepdims=True) - L, D_CLAMP << frac)
    e = (
        entropy_terms(frac)[0][d].astype(np.int64)
        if frac <= TABLE_MAX_FRAC
        else _terms_direct(d, frac)[0]
    )
    S = np.sum(e, axis=-1, keepdims=True)
    return np.asarray(((e << PROB_FRAC) + (S >> 1)) // S, dtype=np.int64)


@dataclass(frozen=True)
class WindowRecord:
    """One scored window as DETECTIONS reports it (with the logits when records are asked)."""

    frame: int  # the window's last frame
    cls: int  # argmax of the smoothed probabilities
    score: int  # its smoothed probability, Q0.15
    flags: int  # FLAG_NORMALISED | FLAG_DETECT
    logits: tuple[int, ...]

    @property
    def detects(self) -> bool:
        return bool(self.flags & FLAG_DETECT)


class Detector:
    """``elt_detect_t``: the last ``smooth`` windows' probabilities, their sums, the windows
    seen and the frame of the last detection."""

    def __init__(self, cfg: DetectorConfig, n_classes: int) -> None:
        self.cfg = cfg
        self.hist: deque[tuple[int, ...]] = deque()
        self.sums = [0] * n_classes
        self.seen = 0
        self.last: int | None = None

    def step(self, frame: int, probs: npt.ArrayLike) -> tuple[int, int, bool]:
        """One window's probabilities (Q0.15, [C]) ending at ``frame``: (class, score,
        detects)."""
        p = tuple(int(v) for v in np.asarray(probs).reshape(-1))
        cfg = self.cfg
        if len(self.hist) == cfg.smooth:
            old = self.hist.popleft()
            self.sums = [s - o for s, o in zip(self.sums, old, strict=True)]
        self.hist.append(p)
        self.sums = [s + v for s, v in zip(self.sums, p, strict=True)]
        self.seen += 1
        n = len(self.hist)
        top = max(range(len(self.sums)), key=lambda c: (self.sums[c], -c))
        score = (self.sums[top] + n // 2) // n
        detects = (
            self.seen >= cfg.smooth
            and cfg.is_keyword(top)
            and score >= cfg.threshold
            and (self.last is None or frame - self.last >= cfg.suppress)
        )
        if detects:
            self.last = frame
        return top, score, detects


def check_stream_mode(mode: str) -> None:
    """The continuous mode scores with the head's logits as they are: a mode with a latent
    search (an entropy-minimising one would make every window more confident) is refused, as
    the device refuses it."""
    m = device_mode(mode)
    if m.search != "no_adapt" or not m.audio:
        raise ConfigError(
            f"mode {mode!r} in the continuous mode: only modes without a latent search are "
            "served (no_adapt, cmvn, cmvn_causal, cmvn_select)"
        )


class WindowScorer:
    """The device's logits for windows [n, T, F] (int16, in stream order): the mode's input
    stage with the statistics it carries across calls (reset at construction, as STREAM_BEGIN
    resets them), the encoder and the head (no latent search)."""

    # The stages whose state this twin carries from call to call (the device carries every
    # stage's: elt_stage.h); the cmvn forms share one state (codegen.stages.cmvn_int).
    CARRIED = ("cmvn", "cmvn_causal", "cmvn_select")

    def __init__(self, q: QModel, mode: str) -> None:
        from codegen.stages.cmvn_int import CmvnState

        check_stream_mode(mode)
        self.q = q
        self.stage = device_mode(mode).before_encoder
        if self.stage is not None and self.stage not in self.CARRIED:
            raise ConfigError(
                f"mode {mode!r}: the continuous mode's reference carries the state of the input "
                f"stages {', '.join(self.CARRIED)} across windows, not of stage {self.stage!r}"
            )
        self.params = None if self.stage is None else q.stage_params("cmvn")
        self.state = None if self.params is None else CmvnState.reset(self.params)

    def score(self, windows: npt.ArrayLike) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.uint8]]:
        """(logits int16 [n, C] of the answering run, flags uint8 [n])."""
        from codegen.intref.adapt import IntAdaptResult, adapt_int
        from codegen.intref.model import encode_int, params_for_mode
        from codegen.stages.cmvn_int import cmvn_int, cmvn_select_int, select_use

        X = np.asarray(windows)
        n = X.shape[0]
        q = self.q
        params = params_for_mode(q, "no_adapt")
        ids = np.zeros(n, np.int64)

        def head(x: npt.ArrayLike) -> IntAdaptResult:
            return adapt_int(encode_int(x, q).astype(np.int16), params, ids)

        flags = np.zeros(n, np.uint8)
        if self.stage is None or n == 0:
            return np.asarray(head(X).logits_noadapt, np.int16), flags
        p = self.params
        assert p is not None and self.state is not None
        if self.stage != "cmvn_select":
            x1, self.state = cmvn_int(X, p, self.state, causal=self.stage == "cmvn_causal")
            return np.asarray(head(x1).logits_noadapt, np.int16), flags
        r0 = head(X)
        x1, fired, floor_ok = cmvn_select_int(X, p, self.state)
        r1 = head(x1)
        use = select_use(r0.H_noadapt, r1.H_noadapt, p.select_margin, fired, floor_ok)
        logits = np.where(use[:, None], r1.logits_noadapt, r0.logits_noadapt)
        flags[use] = FLAG_NORMALISED
        return np.asarray(logits, np.int16), flags


class StreamReference:
    """The device's continuous mode fed chunk by chunk (any chunking gives the same records):
    `push` returns the records of the windows the samples completed. Memory stays bounded: the
    front end's overlap, the last T frames and the detector's history."""

    def __init__(self, q: QModel, mode: str, cfg: DetectorConfig) -> None:
        from codegen.intref.mfcc import MfccStream

        if q.mfcc is None:
            raise ConfigError(
                "this build does not serve the streaming audio mode (see the manifest's "
                '\'streaming\' entry); rebuild with [target] input = "pcm" or "both"'
            )
        if q.adapt is None:
            raise ConfigError("this build has no head parameters (rebuild with codegen build)")
        self.q = q
        self.cfg = cfg
        self.T = q.num_frames
        self.front = MfccStream(q.mfcc)
        self.scorer = WindowScorer(q, mode)
        self.detector = Detector(cfg, q.adapt.n_classes)
        self.frac = q.adapt.logit_fmt.frac_bits
        self.ring = np.zeros((self.T, q.mfcc.params.n_mfcc), np.int16)
        self.frames = 0  # frames computed
        self.samples = 0

    def window_ends(self, frames: int) -> int:
        """Windows whose last frame is among the first ``frames`` frames."""
        T, N = self.T, self.cfg.every
        return 0 if frames < T else 1 + (frames - T) // N

    def push(self, pcm: npt.ArrayLike) -> list[WindowRecord]:
        x = np.asarray(pcm)
        feats = self.front.push(x)
        self.samples += len(x)
        windows: list[np.ndarray] = []
        ends: list[int] = []
        for f in feats:
            self.ring = np.roll(self.ring, -1, axis=0)
            self.ring[-1] = f
            t = self.frames
            self.frames += 1
            if t >= self.T - 1 and (t - (self.T - 1)) % self.cfg.every == 0:
                windows.append(self.ring.copy())
                ends.append(t)
        if not windows:
            return []
        logits, flags = self.scorer.score(np.stack(windows))
        probs = probs_q15(logits, self.frac)
        out = []
        for i, t in enumerate(ends):
            cls, score, det = self.detector.step(t, probs[i])
            out.append(
                WindowRecord(
                    t,
                    cls,
                    score,
                    int(flags[i]) | (FLAG_DETECT if det else 0),
                    tuple(int(v) for v in logits[i]),
                )
            )
        return out


def run_stream(
    pcm: npt.ArrayLike, q: QModel, mode: str, cfg: DetectorConfig, chunk: int = 1 << 17
) -> Iterator[WindowRecord]:
    """Every window record of a whole stream (int16 [samples]), fed in chunks of ``chunk``
    samples (the records do not depend on the chunking)."""
    x = np.asarray(pcm)
    if x.ndim != 1 or x.dtype != np.int16:
        raise ConfigError(f"a stream is int16 PCM [samples], got {x.dtype} {x.shape}")
    ref = StreamReference(q, mode, cfg)
    for s in range(0, len(x), chunk):
        yield from ref.push(x[s : s + chunk])
