"""Fixed IR of the integer MFCC front end (docs/numeric.md §7): the integers
`codegen.quantize.mfcc` decides and both twins replay (`codegen.intref.mfcc`,
`firmware/elt_mfcc_s16.c`, through `codegen.emit.mfcc`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from codegen.base.features import MfccParams

FRAME_BITS_MAX = 22  # the quantizer's first candidate for QMfcc.frame_bits
FRAME_BITS_MIN = 12  # fewer bits per windowed sample: refused
TWIDDLE_FRAC = 31  # Q31 twiddles: rmul = VQRDMULH.S32
WINDOW_FRAC = 30  # Q1.30 window: its rounding stays below the FFT's own rounding noise
FB_FRAC = 15  # mel filter weights
LOG_FRAC = 20  # log2 of the mel energies
LOG_LUT_BITS = 8  # 256 table segments
LOG_INTERP_BITS = 15  # interpolation bits below the segment index (mantissa: 23 bits)
DCT_FRAC = 31
CEP_FRAC = 16  # cepstrum before normalisation
FLOOR_MANT_BITS = 31  # F in [2^30, 2^31)
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


@dataclass(frozen=True, eq=False)
class QMfcc:
    """The integer front end of one model (arrays are int64 numpy views of the C tables)."""

    params: MfccParams
    x_frac: int  # fraction bits of the model's input format
    frame_bits: int  # bits of the largest windowed sample after the block exponent
    n_cfft: int  # N = n_fft / 2 complex points
    window: np.ndarray  # [win_length] int16 Q15
    tw_cos: np.ndarray  # [N/2] int32 Q31, cos(2π m / N)
    tw_sin: np.ndarray  # [N/2] int32 Q31, sin(2π m / N)
    bitrev: np.ndarray  # [N] bit-reversed index
    bin_lo: int  # first FFT bin any filter weights
    bin_hi: int  # last FFT bin any filter weights (inclusive)
    split_cos: np.ndarray  # [bins] int32 Q31, cos(2π k / n_fft), k = bin_lo..bin_hi
    split_sin: np.ndarray  # [bins] int32 Q31
    power_shift: int
    mel_start: np.ndarray  # [n_mels] first bin of filter m (absolute)
    mel_len: np.ndarray  # [n_mels] bins of filter m
    mel_off: np.ndarray  # [n_mels] offset of filter m in mel_w
    mel_w: np.ndarray  # [sum len] int16 Q15
    exp_offset: int  # mel value = mel_acc · 2^(2 sh + exp_offset)
    floor_mant: int
    floor_exp: int
    log2_lut: np.ndarray  # [257] int32 Q(LOG_FRAC), log2(1 + j/256)
    dct: np.ndarray  # [n_mfcc, n_mels] int32 Q31, ln2 · DCT-II (orthonormal)
    cep_shift: int
    norm_mean: np.ndarray  # [n_mfcc] int32 Q(CEP_FRAC)
    norm_mult: np.ndarray  # [n_mfcc] int32
    norm_shift: np.ndarray  # [n_mfcc]
    bounds: dict[str, tuple[int, int]]  # stage -> (proven bound, word limit)

    @property
    def log2_n(self) -> int:
        return self.n_cfft.bit_length() - 1

    @property
    def n_bins(self) -> int:
        return self.bin_hi - self.bin_lo + 1

    def formats(self) -> dict[str, str]:
        """Stage -> format text, for the manifest, the generated C and `codegen inspect`."""
        return {
            "pcm": "int16 Q0.15 (sample / 32768)",
            "window": f"int32 Q{31 - WINDOW_FRAC}.{WINDOW_FRAC}",
            "windowed frame": f"int64 x*w, block exponent per frame, int32 max |f| <= "
            f"2^{self.frame_bits}",
            "twiddles": f"int32 Q0.{TWIDDLE_FRAC} (rounded product per term)",
            "FFT data": "int32, no per-stage scaling (2 X[k] after the real split)",
            "power": f"int64, then >> {self.power_shift} (rounded)",
            "mel filters": f"int16 Q0.{FB_FRAC}",
            "mel energies": f"int64, value = acc * 2^(2 sh {'+' if self.exp_offset >= 0 else '-'} "
            f"{abs(self.exp_offset)})",
            "log floor": f"{self.floor_mant} * 2^{self.floor_exp}",
            "log2 mel": f"int32 Q{31 - LOG_FRAC}.{LOG_FRAC} (257-entry table, 15-bit interp.)",
            "DCT": f"int32 Q0.{DCT_FRAC} (ln 2 folded in)",
            "cepstrum": f"int32 Q{31 - CEP_FRAC}.{CEP_FRAC}",
            "features": f"int16 Q{15 - self.x_frac}.{self.x_frac} (the model's x format)",
        }

    def summary(self) -> dict[str, Any]:
        """JSON-ready description (manifest ``mfcc_frontend``)."""
        return {
            "params": self.params.to_dict(),
            "formats": self.formats(),
            "frame_bits": self.frame_bits,
            "power_shift": self.power_shift,
            "fft": {"complex_points": self.n_cfft, "stages": self.log2_n, "radix": 2},
            "bins": [self.bin_lo, self.bin_hi],
            "filter_taps": int(self.mel_w.size),
            "bounds": {k: {"bound": b, "limit": lim} for k, (b, lim) in self.bounds.items()},
        }
