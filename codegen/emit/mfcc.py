"""C emission of the integer MFCC front end: ``<prefix>mfcc_params.{c,h}`` from
``templates/mfcc_params.{c,h}.j2`` (an ``elt_mfcc_params_t`` instance, firmware/elt_mfcc_s16.h).
Formats only: every integer comes from `codegen.ir.mfcc.QMfcc` as `codegen.quantize.mfcc`
decided it; the Q format of every table is written beside it."""

from __future__ import annotations

import hashlib
import json
import math
import re

import numpy as np

from codegen.base.errors import ConfigError
from codegen.base.version import __version__
from codegen.emit.c import carray
from codegen.ir.mfcc import CEP_FRAC, DCT_FRAC, FB_FRAC, LOG_FRAC, WINDOW_FRAC, QMfcc

_PREFIX_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)?$")


def mfcc_cflags(q: QMfcc) -> tuple[str, ...]:
    """-D flags that size ``elt_mfcc_work_t`` exactly for this front end."""
    return (
        f"-DELT_MFCC_N_MAX={q.n_cfft}",
        f"-DELT_MFCC_BINS_MAX={q.n_bins}",
        f"-DELT_MFCC_MELS_MAX={q.params.n_mels}",
        f"-DELT_MFCC_WIN_MAX={q.params.win_length}",
    )


def mfcc_hash(q: QMfcc) -> str:
    """sha256 of every integer of the front end (stated in the generated files)."""
    h = hashlib.sha256(json.dumps(q.summary(), sort_keys=True).encode())
    for name in (
        "window", "tw_cos", "tw_sin", "bitrev", "split_cos", "split_sin", "mel_start",
        "mel_len", "mel_off", "mel_w", "log2_lut", "dct", "norm_mean", "norm_mult", "norm_shift",
    ):  # fmt: skip
        h.update(name.encode() + np.asarray(getattr(q, name), "<i8").tobytes())
    return h.hexdigest()


def _fft_twiddles(q: QMfcc) -> np.ndarray:
    """The twiddles of the NEON FFT's steps from stage h = 4 on, in the order it reads them
    (layout only: the same integers as ``tw_cos``, ``tw_sin``): per radix-4 pass over stages h
    and 2h (h = 4, 16, .. while 4h <= N) and per four j < h, the four cos and four sin of stage
    h at j, of stage 2h at j and of stage 2h at j + h; then, if one stage h = N / 2 is left and
    the power stage does not take it (`_fused_power`), per four j its four cos and four sin. At
    least one entry."""
    N = q.n_cfft
    out: list[np.ndarray] = []

    def four(tw: np.ndarray, j: int, step: int) -> np.ndarray:
        return tw[np.arange(j, j + 4) * step]

    h = 4
    while 4 * h <= N:
        for j in range(0, h, 4):
            for hh, jj in ((h, j), (2 * h, j), (2 * h, j + h)):
                step = N // (2 * hh)
                out += [four(q.tw_cos, jj, step), four(q.tw_sin, jj, step)]
        h *= 4
    if 2 * h <= N and _fused_power(q)[1] == 0:
        for j in range(0, h, 4):
            out += [four(q.tw_cos, j, 1), four(q.tw_sin, j, 1)]
    return np.concatenate(out) if out else np.zeros(1, np.int64)


def _fused_power(q: QMfcc) -> tuple[int, int, np.ndarray]:
    """Where the NEON power stage takes the last FFT stage h = H = N / 2 with it
    (firmware/kernels/neon_a32/elt_mfcc_s16_ops.h, mfcc_power_fused): when the transform runs
    the NEON head (N >= 16), its stages from h = 4 end with a radix-2 one (log2 N odd) and every
    weighted bin is below H. Returns (k0, steps, twiddles): step t at k = k0 + 4t takes the
    butterflies and bins k .. k + 3 and H - k - 3 .. H - k; the steps cover [k0, H - k0]
    (k0 = max(bin_lo, H - bin_hi, 1)); per step the stage twiddles tw_cos, tw_sin at both runs
    of j and split_cos, split_sin at both runs of bins (layout only). (0, 0, [0]) otherwise."""
    N = q.n_cfft
    H = N // 2
    none = (0, 0, np.zeros(1, np.int64))
    if N < 16 or (N.bit_length() - 1) % 2 == 0 or q.bin_hi >= H:
        return none
    k0 = max(q.bin_lo, H - q.bin_hi, 1)
    if H < 2 * k0 + 6:
        return none
    steps = (H - 2 * k0 + 1 + 7) // 8
    rows: list[np.ndarray] = []
    for t in range(steps):
        f = np.arange(k0 + 4 * t, k0 + 4 * t + 4)
        r = np.arange(H - k0 - 4 * t - 3, H - k0 - 4 * t + 1)
        rows += [q.tw_cos[f], q.tw_sin[f], q.tw_cos[r], q.tw_sin[r]]
        rows += [q.split_cos[f - q.bin_lo], q.split_sin[f - q.bin_lo]]
        rows += [q.split_cos[r - q.bin_lo], q.split_sin[r - q.bin_lo]]
    return k0, steps, np.concatenate(rows)


def _mel_blocks(q: QMfcc) -> tuple[np.ndarray, np.ndarray]:
    """The mel filters in blocks of four bins for the NEON sums (layout only: the same integers as
    ``mel_w``): per filter the byte offset of its first bin in the power array (8 bytes a bin,
    from ``bin_lo``) and its number of blocks, ceil(len / 4); the weights of every block, the
    lanes past the filter's end 0. A last block may reach 3 bins past ``n_bins``: the work
    area's power array has those 3 more (firmware/elt_mfcc_s16.h)."""
    blk: list[int] = []
    w4: list[int] = []
    for m in range(q.params.n_mels):
        n, o = int(q.mel_len[m]), int(q.mel_off[m])
        nb = (n + 3) // 4
        blk += [8 * (int(q.mel_start[m]) - q.bin_lo), nb]
        w4 += [int(v) for v in q.mel_w[o : o + n]] + [0] * (4 * nb - n)
    return np.asarray(blk, np.int64), np.asarray(w4, np.int64)


def _dct_blocks(q: QMfcc) -> tuple[np.ndarray, np.ndarray]:
    """The DCT and the normalisation in passes of four coefficients for the NEON path (layout
    only: the same integers as ``dct``, ``norm_mean``, ``norm_mult``, ``norm_shift``): per pass
    the four coefficients' entries of filter 0, 1, ..; per pass the four means, the four
    multipliers and the four shifts negated, each in the low word of a 64-bit lane (VRSHL.S64
    takes a lane's count from its low byte). Coefficients past n_mfcc are 0 (not stored)."""
    J, M = q.params.n_mfcc, q.params.n_mels
    P = (J + 3) // 4
    d = np.zeros((4 * P, M), np.int64)
    d[:J] = q.dct
    dct4 = d.reshape(P, 4, M).transpose(0, 2, 1)
    norm4 = np.zeros((P, 16), np.int64)
    for j in range(J):
        b, i = divmod(j, 4)
        norm4[b, i] = q.norm_mean[j]
        norm4[b, 4 + i] = q.norm_mult[j]
        norm4[b, 8 + 2 * i] = -int(q.norm_shift[j])
    return dct4.reshape(-1), norm4.reshape(-1)


def _arr(name: str, ctype: str, values: np.ndarray, fmt: str, what: str) -> dict[str, object]:
    vals = np.asarray(values, np.int64).reshape(-1)
    return {
        "name": name,
        "ctype": ctype,
        "length": int(vals.size),
        "fmt": fmt,
        "what": what,
        "body": carray(vals),
    }


def emit_mfcc_c(q: QMfcc, prefix: str) -> dict[str, str]:
    """Render ``const elt_mfcc_params_t <prefix>mfcc_params`` and its tables. Deterministic."""
    from codegen.base.resources import jinja_env

    if not _PREFIX_RE.match(prefix):
        raise ConfigError(f"prefix={prefix!r} is not allowed: use a C identifier prefix")
    p = q.params
    s = prefix
    mel_blk, mel_w4 = _mel_blocks(q)
    dct4, norm4 = _dct_blocks(q)
    fuse_k0, fuse_n, fuse_tw = _fused_power(q)
    arrays = [
        _arr(
            f"{s}mfcc_window",
            "int32_t",
            q.window,
            f"Q{31 - WINDOW_FRAC}.{WINDOW_FRAC}",
            f"{p.window} window [win_length]",
        ),  # fmt: skip
        _arr(f"{s}mfcc_tw_cos", "int32_t", q.tw_cos, "Q0.31", "cos(2 pi m / N), m < N / 2"),
        _arr(f"{s}mfcc_tw_sin", "int32_t", q.tw_sin, "Q0.31", "sin(2 pi m / N), m < N / 2"),
        _arr(f"{s}mfcc_bitrev", "uint16_t", q.bitrev, "index", "bit-reversed n, n < N"),
        _arr(
            f"{s}mfcc_fft_tw",
            "int32_t",
            _fft_twiddles(q),
            "Q0.31",
            "tw_cos, tw_sin by FFT step from stage h = 4 (NEON): 4 cos, 4 sin per stage",
        ),  # fmt: skip
        _arr(
            f"{s}mfcc_fuse_tw",
            "int32_t",
            fuse_tw,
            "Q0.31",
            "per fused step: tw_cos, tw_sin of its two runs of j; split_cos, split_sin of its bins",
        ),  # fmt: skip
        _arr(f"{s}mfcc_split_cos", "int32_t", q.split_cos, "Q0.31", "cos(2 pi k / n_fft)"),
        _arr(f"{s}mfcc_split_sin", "int32_t", q.split_sin, "Q0.31", "sin(2 pi k / n_fft)"),
        _arr(f"{s}mfcc_mel_start", "uint16_t", q.mel_start, "bin", "first bin of filter m"),
        _arr(f"{s}mfcc_mel_len", "uint16_t", q.mel_len, "bins", "bins of filter m"),
        _arr(f"{s}mfcc_mel_off", "uint16_t", q.mel_off, "index", "filter m's first weight"),
        _arr(f"{s}mfcc_mel_w", "int16_t", q.mel_w, f"Q0.{FB_FRAC}", "HTK mel filter weights"),
        _arr(
            f"{s}mfcc_mel_blk",
            "uint16_t",
            mel_blk,
            "bytes, blocks",
            "per filter: byte offset of its first bin in the power array, blocks of four bins",
        ),  # fmt: skip
        _arr(
            f"{s}mfcc_mel_w4",
            "uint32_t",
            mel_w4,
            f"Q0.{FB_FRAC}",
            "mel_w in blocks of four bins per filter, 0 past the filter's end",
        ),  # fmt: skip
        _arr(
            f"{s}mfcc_log2_lut",
            "int32_t",
            q.log2_lut,
            f"Q{31 - LOG_FRAC}.{LOG_FRAC}",
            "log2(1 + j / 256), j <= 256",
        ),  # fmt: skip
        _arr(
            f"{s}mfcc_dct",
            "int32_t",
            q.dct,
            f"Q0.{DCT_FRAC}",
            f"ln 2 * orthonormal DCT-II [{p.n_mfcc}][{p.n_mels}]",
        ),  # fmt: skip
        _arr(
            f"{s}mfcc_dct4",
            "int32_t",
            dct4,
            f"Q0.{DCT_FRAC}",
            "dct in passes of four coefficients: [pass][filter][4], 0 past n_mfcc",
        ),  # fmt: skip
        _arr(
            f"{s}mfcc_norm4",
            "int32_t",
            norm4,
            "as norm_mean, norm_mult; -norm_shift",
            "per pass of four coefficients: 4 means, 4 multipliers, 4 x (-shift, 0)",
        ),  # fmt: skip
        _arr(
            f"{s}mfcc_norm_mean",
            "int32_t",
            q.norm_mean,
            f"Q{31 - CEP_FRAC}.{CEP_FRAC}",
            "normalisation mean per coefficient",
        ),  # fmt: skip
        _arr(
            f"{s}mfcc_norm_mult",
            "int32_t",
            q.norm_mult,
            f"2^(shift - {CEP_FRAC} + {q.x_frac}) / std",
            "normalisation multiplier",
        ),  # fmt: skip
        _arr(f"{s}mfcc_norm_shift", "uint8_t", q.norm_shift, "bits", "normalisation shift"),
    ]
    fields = [
        ("win_length", p.win_length, "samples per frame"),
        ("hop_length", p.hop_length, "samples per hop"),
        ("n_cfft", q.n_cfft, "complex FFT points, n_fft / 2"),
        ("n_mels", p.n_mels, "mel filters"),
        ("n_mfcc", p.n_mfcc, "coefficients"),
        ("bin_lo", q.bin_lo, "first weighted bin"),
        ("n_bins", q.n_bins, "weighted bins"),
        ("frame_bits", q.frame_bits, "block exponent target"),
        ("power_shift", q.power_shift, "power rounding shift"),
        ("exp_offset", q.exp_offset, "mel value = acc 2^(2 sh + exp_offset)"),
        ("floor_exp", q.floor_exp, f"log floor {p.log_floor:g} = floor_mant 2^floor_exp"),
        ("floor_mant", q.floor_mant, ""),
        ("cep_shift", q.cep_shift, f"DCT sum -> cepstrum Q{31 - CEP_FRAC}.{CEP_FRAC}"),
        ("fuse_k0", fuse_k0, "NEON: first bin of the last FFT stage fused with the power"),
        ("fuse_n", fuse_n, "NEON: fused steps (0: not fused)"),
    ]
    ptrs = [
        (f, f"{s}mfcc_{f}")
        for f in (
            "window", "tw_cos", "tw_sin", "bitrev", "fft_tw", "fuse_tw", "split_cos", "split_sin",
            "mel_start", "mel_len", "mel_off", "mel_w", "mel_blk", "mel_w4", "log2_lut", "dct",
            "dct4", "norm4", "norm_mean", "norm_mult", "norm_shift",
        )
    ]  # fmt: skip
    header = f"{s}mfcc_params.h"
    sizes = [
        ("N", q.n_cfft),
        ("BINS", q.n_bins),
        ("MELS", p.n_mels),
        ("WIN", p.win_length),
    ]
    ctx = {
        "prefix": s,
        "header": header,
        "guard": re.sub(r"[^A-Z0-9]", "_", header.upper()),
        "version": __version__,
        "digest": mfcc_hash(q),
        "params": json.dumps(p.to_dict(), sort_keys=True),
        "formats": sorted(q.formats().items()),
        "bounds": [
            (k, f"{math.log2(b):.2f}", f"{math.log2(lim):.2f}") for k, (b, lim) in q.bounds.items()
        ],
        "arrays": arrays,
        "fields": [{"name": n, "value": str(v), "comment": c} for n, v, c in fields],
        "ptrs": ptrs,
        "sizes": sizes,
        "n_mfcc": p.n_mfcc,
        "win_length": p.win_length,
        "hop_length": p.hop_length,
    }
    env = jinja_env()
    return {
        header: env.get_template("mfcc_params.h.j2").render(**ctx),
        f"{s}mfcc_params.c": env.get_template("mfcc_params.c.j2").render(**ctx),
    }
