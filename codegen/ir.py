"""The compiler's intermediate representation: frozen, typed, one dataclass per stage
(docs/architecture.md §3).

Two levels:

* **float IR** (`Model`): what the frontend read and validated — the LSTM and head weights as
  float64, the basis V_k, the ELaTTA/CMA-ES settings, quantization and target options, and the
  hashes of every input file. Nothing here is quantized.
* **fixed IR** (`QLstm`, `QModel`): what `codegen.quantize` decided once — every Q format, every
  integer, every shift, the sigmoid table, the accumulator widths and their overflow proofs.
  The Jinja emitter and the Python integer reference both read these integers; neither
  re-quantizes (docs/numeric.md §4).

Arrays inside the IR are copied and made read-only on construction, so a frozen dataclass is
frozen all the way down. Equality is by identity (``eq=False``) for classes holding arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.qformat import QFormat

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Gate order of torch.nn.LSTM rows (weight_ih_l0 = [W_ii | W_if | W_ig | W_io]).
GATES: tuple[str, ...] = ("i", "f", "g", "o")
# C types the emitter knows, by storage word.
CTYPES: dict[int, str] = {8: "int8_t", 16: "int16_t", 32: "int32_t", 64: "int64_t"}


def frozen_array(a: npt.ArrayLike, dtype: Any) -> np.ndarray:
    """A read-only C-contiguous copy (IR arrays never change after construction)."""
    out = np.array(a, dtype=dtype, copy=True, order="C")
    out.setflags(write=False)
    return out


# ------------------------------------------------------------------------------------ float IR


@dataclass(frozen=True, eq=False)
class Tensor:
    """A named float tensor as read from the inputs (float64, read-only)."""

    name: str
    values: FloatArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", frozen_array(self.values, np.float64))

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.values.shape)

    @property
    def max_abs(self) -> float:
        return float(np.max(np.abs(self.values))) if self.values.size else 0.0


@dataclass(frozen=True, eq=False)
class Lstm:
    """One unidirectional LSTM layer, torch gate order i, f, g, o (rows of the weights).

    h_T after ``num_frames`` steps from h_0 = c_0 = 0 is the latent z_t (paper §3).
    """

    input_size: int
    hidden_size: int
    num_frames: int
    w_ih: Tensor  # [4H, F]
    w_hh: Tensor  # [4H, H]
    b_ih: Tensor  # [4H]
    b_hh: Tensor  # [4H]


@dataclass(frozen=True, eq=False)
class Dense:
    """Linear head: logits = W z + b (paper eq. 1, Cls)."""

    in_features: int
    out_features: int
    weight: Tensor  # [C, D]
    bias: Tensor  # [C]


@dataclass(frozen=True, eq=False)
class Basis:
    """ELaTTA subspace V_k (D × k, orthonormal columns) and its provenance."""

    V: Tensor  # [D, k]
    mean: Tensor  # [D]
    singular_values: Tensor  # [k]
    n: int
    model_sha256: str

    @property
    def dim(self) -> int:
        return self.V.shape[0]

    @property
    def k(self) -> int:
        return self.V.shape[1]


@dataclass(frozen=True)
class CmaesParams:
    """ELaTTA / CMA-ES settings of the build ([elatta] in the TOML config).

    ``elatta`` is the float reference's validated `ElattaConfig`; ``qelatta_v2`` is None or
    (x, y): the CMA-ES state in x-bit fixed point with y integer bits (QELaTTA-V2, e.g. 8b4).
    """

    elatta: Any  # codegen.elatta.float_ref.ElattaConfig (kept Any: import cost, no cycle)
    qelatta_v2: tuple[int, int] | None = None

    @property
    def k(self) -> int:
        return int(self.elatta.k)


@dataclass(frozen=True)
class QuantOptions:
    """[quant] in the TOML config. Only 16-bit activations and weights are implemented."""

    act_bits: int = 16
    weight_bits: int = 16
    calib_samples: int = 512
    calib_seed: int = 0
    # Multiplied onto the calibrated input range before its format is chosen (headroom for
    # noisy inputs; the cell state's int32 format is proven, not calibrated).
    range_margin: float = 2.0
    # The LSTM gate accumulator is int32, exact by proof (docs/numeric.md §4): "auto" and
    # "int32" both mean that (the build is refused where no admissible scaling proves it).
    accumulator: str = "auto"


@dataclass(frozen=True)
class TargetOptions:
    """[target] in the TOML config: the board's UART and the C symbol prefix."""

    uart: int = 0
    baud: int = 115_200
    uart_ref_hz: int = 100_000_000
    max_payload: int = 2048
    prefix: str = "kws_"


@dataclass(frozen=True)
class InputHashes:
    """sha256 of every input file (the generated banner names them)."""

    model: str
    basis: str
    config: str

    def as_dict(self) -> dict[str, str]:
        return {"model": self.model, "basis": self.basis, "config": self.config}


@dataclass(frozen=True, eq=False)
class Model:
    """The float IR: everything the frontend accepted, validated and hashed."""

    lstm: Lstm
    head: Dense
    basis: Basis
    cmaes: CmaesParams
    quant: QuantOptions
    target: TargetOptions
    classes: tuple[str, ...]
    meta: Any  # codegen.model.ModelMeta (feature parameters, normalisation)
    hashes: InputHashes
    paths: dict[str, str] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        return self.target.prefix


# ------------------------------------------------------------------------------------ fixed IR


@dataclass(frozen=True, eq=False)
class QTensor:
    """A quantized tensor: raw integers in ``fmt`` (value = raw · 2^-frac_bits) and the float
    values they came from (kept for the per-tensor error report, never for computation)."""

    name: str
    fmt: QFormat
    raw: IntArray
    ref: FloatArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "raw", frozen_array(self.raw, np.int64))
        object.__setattr__(self, "ref", frozen_array(self.ref, np.float64))
        if self.raw.shape != self.ref.shape:
            raise ValueError(f"{self.name}: raw {self.raw.shape} vs ref {self.ref.shape}")
        lo, hi = self.fmt.min_raw, self.fmt.max_raw
        if self.raw.size and (self.raw.min() < lo or self.raw.max() > hi):
            raise ValueError(f"{self.name}: integers outside {self.fmt.name}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(s) for s in self.raw.shape)

    @property
    def ctype(self) -> str:
        return CTYPES[self.fmt.word]

    @property
    def dequantized(self) -> FloatArray:
        out: FloatArray = self.fmt.to_float(self.raw)
        return out

    @property
    def max_abs_error(self) -> float:
        return float(np.max(np.abs(self.dequantized - self.ref))) if self.raw.size else 0.0

    @property
    def rms_error(self) -> float:
        return float(np.sqrt(np.mean((self.dequantized - self.ref) ** 2))) if self.raw.size else 0.0

    @property
    def float_range(self) -> tuple[float, float]:
        if not self.ref.size:
            return (0.0, 0.0)
        return (float(self.ref.min()), float(self.ref.max()))

    @property
    def saturated(self) -> int:
        """Elements clipped at the format's limits (their float value lies outside it)."""
        lim_hi = self.fmt.max_raw / (1 << self.fmt.frac_bits)
        lim_lo = self.fmt.min_raw / (1 << self.fmt.frac_bits)
        return int(np.sum((self.ref > lim_hi) | (self.ref < lim_lo)))


@dataclass(frozen=True)
class Accumulator:
    """One accumulator and its overflow proof (docs/numeric.md §3).

    ``bound`` is the worst case |Σ w·x| over every row and every admissible input: Σ|w_raw| per
    row times the largest |x_raw| (the whole int16 range for inputs the device receives),
    maximised over rows. ``bits`` is the chosen width; ``margin_bits`` = log2(capacity / bound).
    """

    name: str
    bits: int
    bound: int
    worst_row: int

    @property
    def capacity(self) -> int:
        return (1 << (self.bits - 1)) - 1

    @property
    def margin_bits(self) -> float:
        return float(np.log2(self.capacity / max(self.bound, 1)))


@dataclass(frozen=True)
class LstmShifts:
    """Every shift of the integer LSTM step (docs/numeric.md §4), all decided by the compiler.

    Gate pre-activations are summed exactly in int32 at ``acc_frac`` (A) fractional bits from
    rounded operands: xs = rshift_round(x, x_opshift), hs = rshift_round(h, h_opshift),
    acc = bias_A + W_ih xs + W_hh hs (x_opshift = frac W_ih + frac x − A, h_opshift =
    frac W_hh + 15 − A).
    """

    acc_frac: int  # A: fraction bits of the int32 gate accumulator and of the bias
    x_opshift: int  # x (x_fmt) -> xs, rounding right shift (0: identity)
    h_opshift: int  # h (Q0.15) -> hs, rounding right shift (0: identity)
    sig_rshift: int  # acc -> Q4.11 σ input (gates i, f, o): A − 11
    tanh_rshift: int  # acc -> 2x in Q4.11 (gate g: tanh(x) = 2σ(2x) − 1): A − 12
    cell_ig_lshift: int  # i·g (frac 30) -> frac 15 + c_frac, beside f·c
    cell_tanh_rshift: int  # c (int32, c_frac) -> 2c in Q4.11


@dataclass(frozen=True)
class GateProof:
    """The int32 gate accumulator's proof (docs/numeric.md §4), for every int16 input.

    bound(A) = max_r Σ|W_ih[r]|·max|xs| + Σ|W_hh[r]|·max|hs| + |bias_A[r]| + 2^(s_r − 1),
    with max|xs| = |rshift_round(−32768, x_opshift)| (likewise hs) and s_r the row's final
    shift. ``acc_frac`` is the largest A ≤ ``acc_frac_formats`` = min(frac W_ih + frac x,
    frac W_hh + 15) with bound(A) ≤ 2^31 − 1; ``bound_above`` is bound(A + 1) when the proof
    (not the formats) limited A, else None.
    """

    acc_frac: int
    acc_frac_formats: int
    bound: int
    worst_row: int
    terms: tuple[int, int, int, int]  # worst row: W_ih part, W_hh part, |bias|, rounding
    bound_above: int | None

    @property
    def limited_by(self) -> str:
        return "formats" if self.bound_above is None else "int32 proof"


@dataclass(frozen=True, eq=False)
class SigmoidLut:
    """σ on a uniform grid over [0, 16] (σ(−x) = 1 − σ(x) covers the negative half), Q0.15.

    Entry j is σ(j·16/(size−1)); an input v (Q4.11) reads entries a >> index_shift and the next
    one with a = min(|v|, 32767), interpolates with the low ``index_shift`` bits of a, and
    mirrors for v < 0: σ(v) = 32768 − σ(|v|).
    """

    table: QTensor
    in_fmt: QFormat
    index_shift: int

    @property
    def size(self) -> int:
        return int(self.table.raw.shape[0])


@dataclass(frozen=True, eq=False)
class QLstm:
    """The integer LSTM (fixed IR): formats, integers, shifts, accumulators, LUT."""

    input_size: int
    hidden_size: int
    num_frames: int
    x_fmt: QFormat  # int16 input features (normalised MFCC), calibrated
    gate_fmt: QFormat  # Q4.11: σ input
    c_fmt: QFormat  # cell state, int32, range proven: |c_t| <= t
    h_fmt: QFormat  # Q0.15: hidden state and z_t
    w_ih: QTensor  # [4H, F]
    w_hh: QTensor  # [4H, H]
    bias: QTensor  # [4H], int32, b_ih + b_hh at acc_frac (A) fraction bits
    acc_gate: Accumulator  # the int32 gate sum W_ih xs + W_hh hs + bias, proven
    proof: GateProof
    shifts: LstmShifts
    lut: SigmoidLut


@dataclass(frozen=True)
class CalibStats:
    """Ranges seen on the calibration set (clean SOURCE data) and what they chose."""

    samples: int
    source: str
    sha256: str  # of the float64 calibration features (they decide the input format)
    x_max_abs: float
    c_max_abs: float
    gate_max_abs: dict[str, float]
    h_max_abs: float
    gate_saturation: dict[str, float]  # fraction beyond the LUT range (±16 σ gates, ±8 g)


@dataclass(frozen=True, eq=False)
class QModel:
    """The fixed IR of the whole build: the float IR it came from, the integer LSTM, the
    adaptation core's quantized parameters (`codegen.intref.adapt.AdaptParams`), calibration."""

    source: Model
    lstm: QLstm
    adapt: Any  # codegen.intref.adapt.AdaptParams
    calib: CalibStats

    @property
    def prefix(self) -> str:
        return self.source.prefix
