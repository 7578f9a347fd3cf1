"""The compiler's intermediate representation: frozen, typed, one dataclass per stage
(docs/architecture.md §3).

Two levels:

* **float IR** (`Model`): what the frontend read and validated — the encoder's layers
  (`Model.encoder`: `Lstm`, `Gru`) and head weights as float64, the basis V_k, the ELaTTA/CMA-ES
  settings, quantization and target options, and the hashes of every input file. Nothing here
  is quantized.
* **fixed IR** (`QModel`, its layers `QLstm`, `QGru`): what `codegen.quantize.model` decided
  once — every Q format, every integer, every shift, the sigmoid table, the accumulator widths
  and their overflow proofs. The Jinja emitter and the Python integer reference both read these
  integers; neither re-quantizes (docs/numeric.md §4).

Arrays inside the IR are copied and made read-only on construction, so a frozen dataclass is
frozen all the way down. Equality is by identity (``eq=False``) for classes holding arrays.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from codegen.base.contract import (
    H_FRAC,
    K_MAX,
    LAM_MAX,
    LNSIG_FRAC,
    N_ITER_MAX,
    SIGMA_MAX,
    SIGMA_MIN,
    X_FRAC,
)
from codegen.base.errors import ConfigError
from codegen.base.fixed import rshift_round
from codegen.base.qformat import QFormat
from codegen.elatta.cmaes import CmaesParams as FloatCmaesConstants
from codegen.elatta.float_ref import ElattaConfig, is_int
from codegen.ir.modes import DEVICE_MODES, mode
from codegen.stages.registry import check_settings, settings_of, tables

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# How the encoder's outputs over time become the latent (the final Linear's input).
POOLS: tuple[str, ...] = ("last", "mean", "max")
POOL_SHIFT = 24  # mean pooling: z = sat16(rshift_round(Σ_t h_t · round(2^24 / T), 24))
# Gate order of torch.nn.LSTM rows (weight_ih_l0 = [W_ii | W_if | W_ig | W_io]).
GATES: tuple[str, ...] = ("i", "f", "g", "o")
# Gate order of torch.nn.GRU rows (weight_ih_l0 = [W_ir | W_iz | W_in]).
GRU_GATES: tuple[str, ...] = ("r", "z", "n")
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
class Recurrent:
    """One unidirectional recurrent layer of the encoder as torch stores it: ``gates`` blocks of
    H weight rows each (the kind's gate order), bias b_ih and b_hh apart.

    The layer reads ``num_frames`` frames of ``input_size`` values and steps from a zero state;
    the last layer of an encoder hands on h_T (``pool`` "last"), or the mean or maximum of h_t
    over the steps; an inner layer hands its whole output sequence to the next (its ``pool`` is
    "last" and unused). The subclasses name the kind (`codegen.ir.layers` holds what each
    kind compiles to).
    """

    kind: ClassVar[str] = ""
    gates: ClassVar[tuple[str, ...]] = ()

    input_size: int
    hidden_size: int
    num_frames: int
    w_ih: Tensor  # [G·H, F]
    w_hh: Tensor  # [G·H, H]
    b_ih: Tensor  # [G·H]
    b_hh: Tensor  # [G·H]
    pool: str = "last"  # POOLS

    def __post_init__(self) -> None:
        G, H, F = len(self.gates), self.hidden_size, self.input_size
        want = {"w_ih": (G * H, F), "w_hh": (G * H, H), "b_ih": (G * H,), "b_hh": (G * H,)}
        for name, shape in want.items():
            got = getattr(self, name).shape
            if got != shape:
                raise ConfigError(
                    f"{self.kind} layer {name}: shape {list(got)}, expected {list(shape)} "
                    f"({G} gate blocks of H = {H} rows, F = {F} inputs)"
                )
        if self.pool not in POOLS:
            raise ConfigError(f"pool={self.pool!r} is not supported: use one of {POOLS}")


@dataclass(frozen=True, eq=False)
class Lstm(Recurrent):
    """An LSTM layer (torch.nn.LSTM): gate rows i, f, g, o; h and the cell state c."""

    kind: ClassVar[str] = "lstm"
    gates: ClassVar[tuple[str, ...]] = GATES


@dataclass(frozen=True, eq=False)
class Gru(Recurrent):
    """A GRU layer (torch.nn.GRU): gate rows r, z, n; n = tanh(x_n + r ⊙ (W_hn h + b_hn))."""

    kind: ClassVar[str] = "gru"
    gates: ClassVar[tuple[str, ...]] = GRU_GATES


# A layer of the float encoder (`Model.encoder`); `codegen.ir.layers.KINDS` lists the kinds.
EncoderLayer = Lstm | Gru


def check_encoder(encoder: tuple[Any, ...], what: str) -> None:
    """The rules of a stacked encoder, for the float and the fixed IR alike: at least one layer,
    every layer T frames, layer n + 1 reads layer n's h_t (input_size = the hidden size below),
    pooling only at the top (an inner layer hands on its whole sequence)."""
    if not isinstance(encoder, tuple) or not encoder:
        raise ConfigError(f"{what}: the encoder must be a non-empty tuple of layers")
    for n, (lo, hi) in enumerate(zip(encoder, encoder[1:], strict=False)):
        if hi.input_size != lo.hidden_size or hi.num_frames != lo.num_frames:
            raise ConfigError(
                f"{what}: layer {n + 1} reads {hi.num_frames} frames of {hi.input_size} values "
                f"but layer {n} hands on {lo.num_frames} frames of {lo.hidden_size}"
            )
        if lo.pool != "last":
            raise ConfigError(
                f"{what}: layer {n} has pool={lo.pool!r}: only the last layer pools (an inner "
                "layer hands on its whole output sequence)"
            )


@dataclass(frozen=True, eq=False)
class Dense:
    """Linear head: logits = W z + b (paper eq. 1, Cls)."""

    in_features: int
    out_features: int
    weight: Tensor  # [C, D]
    bias: Tensor  # [C]


@dataclass(frozen=True, eq=False)
class LatentBasis:
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
    # LSTM weight formats (docs/numeric.md §4): "search" moves weight fraction bits to the
    # x/h operands where that lowers the calibration latent error (codegen.quantize.format_search);
    # "max" keeps the most fraction bits each weight tensor's range allows.
    weight_format: str = "search"


WEIGHT_FORMATS = ("search", "max")


@dataclass(frozen=True)
class TargetOptions:
    """[target] in the TOML config: the board and its UART, and the C symbol prefix."""

    # A board preset (codegen/target/boards.py); "" (unnamed): the core's default board, "qemu"
    # when no core is named either. Its console UART, reference clock and baud rate apply unless
    # uart, uart_ref_hz, baud are given here too.
    board: str = ""
    # A core (codegen/target/cores.py, e.g. "cortex-m7"); "" (unnamed): the board's.
    core: str = ""
    uart: int = 0
    baud: int = 115_200
    uart_ref_hz: int = 100_000_000
    max_payload: int = 2048
    prefix: str = "kws_"
    # Input paths of the firmware (docs/protocol.md): "features" (INFER), "pcm" (the streaming
    # audio mode only: no T x F feature buffers, so long windows fit), "both".
    input: str = "both"


@dataclass(frozen=True)
class InputHashes:
    """sha256 of every input file (the generated banner names them)."""

    model: str
    basis: str
    config: str

    def as_dict(self) -> dict[str, str]:
        return {"model": self.model, "basis": self.basis, "config": self.config}


class _Stacked:
    """The shapes of a model with an encoder (a tuple of layers) and an MLP head, float or fixed."""

    encoder: tuple[Any, ...]
    mlp: tuple[Any, ...]

    @property
    def input_size(self) -> int:
        """F: the features per frame (the first layer's input)."""
        return int(self.encoder[0].input_size)

    @property
    def num_frames(self) -> int:
        """T: the frames of a sample."""
        return int(self.encoder[0].num_frames)

    @property
    def encoder_size(self) -> int:
        """The width of the encoder's output (the last layer's hidden size)."""
        return int(self.encoder[-1].hidden_size)

    @property
    def latent_size(self) -> int:
        """The head's input: the encoder's output, or the last hidden Linear's width."""
        return int(self.mlp[-1].out_features) if self.mlp else self.encoder_size


@dataclass(frozen=True, eq=False)
class Model(_Stacked):
    """The float IR: everything the frontend accepted, validated and hashed."""

    # the recurrent layers bottom to top (`check_encoder`): layer 0 reads the features, each
    # layer above the sequence of the one below; the last one's pooled output is the encoder's
    encoder: tuple[EncoderLayer, ...]
    head: Dense
    basis: LatentBasis
    adapt: AdaptConfig  # [elatta] of the TOML config, validated once (integer limits included)
    quant: QuantOptions
    target: TargetOptions
    classes: tuple[str, ...]
    meta: Any  # codegen.ir.meta.ModelMeta (feature parameters, normalisation)
    hashes: InputHashes
    paths: dict[str, str] = field(default_factory=dict)
    # where each setting the model file did not carry came from (declared, the data set)
    provenance: tuple[str, ...] = ()
    # hidden Linear + ReLU layers between the pooled encoder output and the head: the ELaTTA
    # latent is then the last one's output (the head's input)
    mlp: tuple[Dense, ...] = ()

    def __post_init__(self) -> None:
        check_encoder(self.encoder, "model")

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
class GateShifts:
    """The shifts every recurrent kind's integer step shares (docs/numeric.md §4), decided by
    the compiler.

    Gate pre-activations are summed exactly in int32 at ``acc_frac`` (A) fractional bits from
    rounded operands: xs = rshift_round(x, x_opshift), hs = rshift_round(h, h_opshift),
    acc = bias_A + W_ih xs + W_hh hs (x_opshift = frac W_ih + frac x − A, h_opshift =
    frac W_hh + 15 − A).
    """

    acc_frac: int  # A: fraction bits of the int32 gate accumulator and of the bias
    x_opshift: int  # x (x_fmt) -> xs, rounding right shift (0: identity)
    h_opshift: int  # h (Q0.15) -> hs, rounding right shift (0: identity)
    sig_rshift: int  # acc -> Q4.11 σ input (σ gates): A − 11
    tanh_rshift: int  # acc -> 2x in Q4.11 (tanh gate: tanh(x) = 2σ(2x) − 1): A − 12


@dataclass(frozen=True)
class LstmShifts(GateShifts):
    """Every shift of the integer LSTM step: `GateShifts` (σ gates i, f, o; tanh gate g) and
    the cell state's."""

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


class _Pooled:
    """What the fixed layers share: the mean pooling's reciprocal and the gate row shifts."""

    num_frames: int
    hidden_size: int
    gates: ClassVar[tuple[str, ...]]
    tanh_gate: ClassVar[str]
    shifts: GateShifts

    @property
    def pool_recip(self) -> int:
        """Mean pooling's 1/T as round(2^POOL_SHIFT / T)."""
        return round((1 << POOL_SHIFT) / self.num_frames)

    def gate_row_shifts(self) -> IntArray:
        """The final rounding shift of every gate row (the kind's torch order): sig_rshift for
        the σ gates, tanh_rshift for the tanh gate."""
        s = np.full(len(self.gates) * self.hidden_size, self.shifts.sig_rshift, dtype=np.int64)
        g = self.gates.index(self.tanh_gate)
        s[g * self.hidden_size : (g + 1) * self.hidden_size] = self.shifts.tanh_rshift
        return s


@dataclass(frozen=True, eq=False)
class QLstm(_Pooled):
    """The integer LSTM layer (fixed IR): formats, integers, shifts, accumulators, LUT."""

    kind: ClassVar[str] = "lstm"
    gates: ClassVar[tuple[str, ...]] = GATES
    tanh_gate: ClassVar[str] = "g"

    input_size: int
    hidden_size: int
    num_frames: int
    x_fmt: QFormat  # int16 input: the features (calibrated) or the layer below's h (Q0.15)
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
    pool: str = "last"  # POOLS: z = h_T, mean_t h_t or max_t h_t

    def tensors(self) -> tuple[QTensor, ...]:
        """The layer's own integer tensors (the σ table is every layer's: ``lut``)."""
        return (self.w_ih, self.w_hh, self.bias)


@dataclass(frozen=True, eq=False)
class QGru(_Pooled):
    """The integer GRU layer (fixed IR; the step is written out in `codegen.quantize.gru`):
    b_ih and b_hh both at A fraction bits, kept apart (the n rows scale W_hn h + b_hn by r)."""

    kind: ClassVar[str] = "gru"
    gates: ClassVar[tuple[str, ...]] = GRU_GATES
    tanh_gate: ClassVar[str] = "n"

    input_size: int
    hidden_size: int
    num_frames: int
    x_fmt: QFormat  # int16 input: the features (calibrated) or the layer below's h (Q0.15)
    gate_fmt: QFormat  # Q4.11: σ input
    h_fmt: QFormat  # Q0.15: hidden state and z_t
    w_ih: QTensor  # [3H, F]
    w_hh: QTensor  # [3H, H]
    b_ih: QTensor  # [3H], int32 at A fraction bits
    b_hh: QTensor  # [3H], int32 at A fraction bits
    acc_gate: Accumulator  # the int32 sums, proven (codegen.quantize.gru)
    proof: GateProof
    shifts: GateShifts
    lut: SigmoidLut
    pool: str = "last"

    def tensors(self) -> tuple[QTensor, ...]:
        """The layer's own integer tensors (the σ table is every layer's: ``lut``)."""
        return (self.w_ih, self.w_hh, self.b_ih, self.b_hh)


# A layer of the fixed encoder (`QModel.encoder`).
QEncoderLayer = QLstm | QGru


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
class QDense:
    """One hidden Linear + ReLU layer of an MLP head, integer form:
    y = sat16(rshift_round(max(W x + b, 0), shift)), W int16, b int32 at the accumulator's
    fraction bits (w frac + x frac), y in ``out_fmt``; the int32 sum is proven."""

    in_features: int
    out_features: int
    w: QTensor  # [out, in]
    b: QTensor  # [out], int32 at acc frac
    in_fmt: QFormat
    out_fmt: QFormat
    shift: int  # acc frac - out frac
    acc: Accumulator


@dataclass(frozen=True, eq=False)
class QModel(_Stacked):
    """The fixed IR of the whole build: the float IR it came from, the integer encoder (one
    fixed layer per float layer), the adaptation core's quantized parameters (`AdaptParams`),
    calibration."""

    source: Model
    encoder: tuple[QEncoderLayer, ...]  # `check_encoder`; layer n + 1 reads layer n's h (Q0.15)
    adapt: AdaptParams | None  # None: an encoder-only build (the encoder's tests)
    calib: CalibStats
    # the input stages' integer params by table (`codegen.stages.registry`; the table's
    # quantizer decided them); empty in an encoder-only build
    stages: dict[str, Any] = field(default_factory=dict)
    mlp: tuple[QDense, ...] = ()  # hidden Linear + ReLU layers before the head
    # The integer MFCC front end (codegen.ir.mfcc.QMfcc) when the device serves the streaming
    # audio mode (docs/numeric.md §7.6); None: feature input only.
    mfcc: Any = None

    def __post_init__(self) -> None:
        check_encoder(self.encoder, "fixed model")
        if len(self.encoder) != len(self.source.encoder):
            raise ConfigError(
                f"fixed model: {len(self.encoder)} fixed layers for "
                f"{len(self.source.encoder)} float layers"
            )
        for n, (f, q) in enumerate(zip(self.source.encoder, self.encoder, strict=True)):
            if f.kind != q.kind:
                raise ConfigError(f"fixed model: layer {n} is {f.kind} in float, {q.kind} fixed")

    def stage_params(self, table: str) -> Any:
        """The integer params of input-stage table ``table``; ConfigError when this build has
        none (an encoder-only build, or a table registered after it was built)."""
        try:
            return self.stages[table]
        except KeyError:
            raise ConfigError(
                f"this build has no [{table}] parameters (rebuild it with codegen build; it "
                f"has {sorted(self.stages) or 'none'})"
            ) from None

    @property
    def stream(self) -> bool:
        """The firmware serves the streaming audio mode (AUDIO_BEGIN/AUDIO/AUDIO_END)."""
        return self.mfcc is not None

    @property
    def feature_infer(self) -> bool:
        """The firmware serves feature INFER ([target] input = "features" or "both")."""
        return self.source.target.input != "pcm"

    @property
    def x_fmt(self) -> QFormat:
        """The int16 features' format (the first layer's input)."""
        return self.encoder[0].x_fmt

    @property
    def z_fmt(self) -> QFormat:
        """The encoder's output format, the adaptation core's z_t: Q0.15 (h), or the last MLP
        layer's calibrated format."""
        return self.mlp[-1].out_fmt if self.mlp else self.encoder[-1].h_fmt

    @property
    def prefix(self) -> str:
        return self.source.prefix

    @property
    def adapt_params(self) -> AdaptParams:
        """The adaptation core's parameters; an encoder-only IR has none."""
        if self.adapt is None:
            raise ConfigError("this build has no adaptation core (encoder only)")
        return self.adapt


# ------------------------------------------------------------------------- adaptation core IR
# The formats of the adaptation core (docs/numeric.md §5) and its settings and integers, read by
# the C emitter (`codegen.emit.adapt`) and the integer reference (`codegen.intref.adapt`).

Z_T_FMT = QFormat(0, 15)  # LSTM h_T
LATENT_FMT = QFormat(2, 13)  # 2 bits of headroom for V p over |z_t| < 1
P_FMT = QFormat(31 - X_FRAC, X_FRAC, 32)  # Q4.27
H_FMT = QFormat(31 - H_FRAC, H_FRAC, 32)  # Q5.26
LNSIG_FMT = QFormat(31 - LNSIG_FRAC, LNSIG_FRAC, 32)  # Q8.23
RADIUS_FRAC = 23  # continual_bounded radius, Q8.23
BETA_FRAC = 30  # Q1.30


@dataclass(frozen=True)
class Grid:
    """QELaTTA-V2 grid: signed ``x_bits``-bit two's complement with ``y_int`` integer bits
    (sign included, like ``ap_fixed<x, y>``): value = r·2^−(x−y), r ∈ [−2^(x−1), 2^(x−1)−1]."""

    x_bits: int
    y_int: int

    def __post_init__(self) -> None:
        if not (isinstance(self.x_bits, int) and 2 <= self.x_bits <= 16):
            raise ConfigError(f"qelatta_v2 x_bits={self.x_bits!r} is not allowed: use 2..16")
        if not (isinstance(self.y_int, int) and 1 <= self.y_int <= min(self.x_bits, 5)):
            raise ConfigError(
                f"qelatta_v2 y_int_bits={self.y_int!r} is not allowed: use 1..min(x_bits, 5) "
                "(the grid must fit the Q4.27 state of p)"
            )

    @property
    def frac(self) -> int:
        return self.x_bits - self.y_int

    @property
    def lo(self) -> int:
        return -(1 << (self.x_bits - 1))

    @property
    def hi(self) -> int:
        return (1 << (self.x_bits - 1)) - 1

    @property
    def name(self) -> str:
        return f"{self.x_bits}b{self.y_int}"

    def requant(self, v: npt.ArrayLike, frac_in: int) -> IntArray:
        """``elt_requant_s32``: round to the grid (one rule), saturate, back to Q.frac_in."""
        s = frac_in - self.frac
        r = np.clip(rshift_round(np.asarray(v, dtype=np.int64), s), self.lo, self.hi)
        return np.asarray(r * (np.int64(1) << s), dtype=np.int64)


@dataclass(frozen=True)
class CmaesIntParams:
    """Every CMA-ES integer constant (rounded once from the pycma-4.5.0 float64 values)."""

    k: int
    lam: int
    mu: int
    n_iter: int
    active: bool
    w: tuple[int, ...]  # [μ] positive recombination weights, Q1.30
    wc: tuple[int, ...]  # [λ] cμ·w_i (i < μ) and cμ·w_i·k (negative), Q1.30
    wc_sqrt: tuple[int, ...]  # [λ] √|wc_i| (the covariance terms' vector scale), Q1.30
    one_minus_cs: int  # Q1.30
    gain_s: int  # √(c_σ(2−c_σ)μ_eff), Q3.28
    one_minus_cc: int  # Q1.30
    gain_c: int  # √(c_c(2−c_c)μ_eff), Q3.28
    c1: int  # Q1.30
    c1_sqrt: int  # √c1, Q1.30
    decay_h1: int  # 1 − c1 − cμΣw (h_σ = 1), Q1.30
    decay_h0: int  # 1 − c1(1 − c_c(2−c_c)) − cμΣw (h_σ = 0), Q1.30
    cs_over_ds: int  # c_σ/d_σ, Q1.30
    inv_chi: int  # 1/χ_k, Q1.30
    hsig_thr: tuple[int, ...]  # [n_iter] T_g for g = 1..n, Q.46 (int64)
    ln_sigma0: int  # Q8.23
    source: FloatCmaesConstants  # the unrounded float64 constants (for comments and the float twin)


@dataclass(frozen=True, repr=False)
class AdaptConfig:
    """One integer ELaTTA run (the float `ElattaConfig` plus QELaTTA-V2); λ is resolved."""

    k: int = 2
    n_iter: int = 2
    lam: int = 6
    sigma0: float = 0.1
    mode: str = "strict"
    seed: int = 0
    beta: float = 0.5
    radius: float = 1.0
    qelatta_v1: bool = False
    qelatta_v2: tuple[int, int] | None = None  # (x_bits, y_int_bits), e.g. (8, 4), (4, 2)
    active: bool = True
    # the input stages' settings by TOML table (`codegen.stages.registry`: [cmvn] ->
    # `codegen.stages.cmvn.CmvnSettings`); a table the config does not have takes its defaults
    # (`stage_settings`)
    stages: dict[str, Any] = field(default_factory=dict)

    def stage_settings(self, table: str) -> Any:
        """The settings of input-stage table ``table`` (its defaults where the config has none)."""
        return settings_of(self.stages, table)

    def __repr__(self) -> str:
        """One flat line, each input-stage table's settings as ``<table>_<key>=value`` after the
        run's own (every registered table, in registry order, its defaults where the config has
        none): what the generated sources' banner shows and the adaptation's input hash reads."""
        own = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.name != "stages"]
        for t in tables():
            s = self.stage_settings(t.name)
            own += [f"{t.name}_{f.name}={getattr(s, f.name)!r}" for f in fields(s)]
        return f"AdaptConfig({', '.join(own)})"

    def __post_init__(self) -> None:
        if not is_int(self.k) or not 1 <= self.k <= K_MAX:
            raise ConfigError(f"k={self.k!r} is not allowed: use an integer in 1..{K_MAX}")
        if not is_int(self.n_iter) or not 1 <= self.n_iter <= N_ITER_MAX:
            raise ConfigError(f"n_iter={self.n_iter!r} is not allowed: use 1..{N_ITER_MAX}")
        if not is_int(self.lam) or not 2 <= self.lam <= LAM_MAX:
            raise ConfigError(f"lam={self.lam!r} is not allowed: use an integer in 2..{LAM_MAX}")
        s0 = self.sigma0
        if (
            not isinstance(s0, int | float)
            or isinstance(s0, bool)
            or not (math.isfinite(s0) and SIGMA_MIN <= s0 <= SIGMA_MAX)
        ):
            raise ConfigError(
                f"sigma0={s0!r} is not allowed: use a float in [2^-20, {SIGMA_MAX:g}]"
            )
        if self.mode not in DEVICE_MODES:
            raise ConfigError(f"mode={self.mode!r} is not allowed: use one of {DEVICE_MODES}")
        if not isinstance(self.stages, dict):
            raise ConfigError(f"stages={self.stages!r} is not allowed: use a dict by table name")
        object.__setattr__(self, "stages", dict(self.stages))
        check_settings(self.stages)
        if not is_int(self.seed) or not 0 <= self.seed < 2**64:
            raise ConfigError(f"seed={self.seed!r} is not allowed: use an integer in [0, 2^64)")
        if not isinstance(self.beta, int | float) or not 0.0 <= self.beta <= 1.0:
            raise ConfigError(f"beta={self.beta!r} is not allowed: use a float in [0, 1]")
        if not isinstance(self.radius, int | float) or not 0.0 <= self.radius < 256.0:
            raise ConfigError(
                f"radius={self.radius!r} is not allowed: use a float in [0, 256) (Q8.23)"
            )
        if not isinstance(self.qelatta_v1, bool):
            raise ConfigError(f"qelatta_v1={self.qelatta_v1!r} is not allowed: use True or False")
        if self.qelatta_v2 is not None:
            v2 = self.qelatta_v2
            if not (isinstance(v2, tuple) and len(v2) == 2 and all(is_int(x) for x in v2)):
                raise ConfigError(
                    f"qelatta_v2={v2!r} is not allowed: use None or (x_bits, y_int_bits), "
                    "e.g. (8, 4)"
                )
            Grid(int(v2[0]), int(v2[1]))
        if not isinstance(self.active, bool):
            raise ConfigError(f"active={self.active!r} is not allowed: use True or False")

    @classmethod
    def from_float(
        cls, cfg: ElattaConfig, qelatta_v2: tuple[int, int] | None = None
    ) -> AdaptConfig:
        """The integer twin of a float configuration (λ resolved to 4 + ⌊3 ln k⌋ if None)."""
        return cls(
            k=int(cfg.k),
            n_iter=int(cfg.n_iter),
            lam=int(cfg.popsize),
            sigma0=float(cfg.sigma0),
            mode=str(cfg.mode),
            seed=int(cfg.seed),
            beta=float(cfg.beta),
            radius=float(cfg.radius),
            qelatta_v1=bool(cfg.qelatta_v1),
            qelatta_v2=qelatta_v2,
            active=bool(cfg.active),
        )

    @property
    def grid(self) -> Grid | None:
        return None if self.qelatta_v2 is None else Grid(*self.qelatta_v2)

    def replace(self, **changes: Any) -> AdaptConfig:
        """A validated copy with some fields changed."""
        import dataclasses

        return dataclasses.replace(self, **changes)

    def to_float(self) -> ElattaConfig:
        """The float configuration this one twins (QELaTTA-V2 has no float counterpart; mode
        whose latent search is another's, e.g. cmvn's, has that search as its ELaTTA twin)."""
        return ElattaConfig(
            k=self.k,
            n_iter=self.n_iter,
            lam=self.lam,
            sigma0=self.sigma0,
            mode=mode(self.mode).search,
            seed=self.seed,
            beta=self.beta,
            radius=self.radius,
            qelatta_v1=self.qelatta_v1,
            active=self.active,
        )


@dataclass(frozen=True, eq=False)
class AdaptParams:
    """Every integer the kernels read; the C emitter and `adapt_int` read exactly these."""

    cfg: AdaptConfig
    W: IntArray  # [C, D] int16, w_fmt
    w_fmt: QFormat
    b: IntArray  # [C] int32, b_fmt (the accumulator format)
    b_fmt: QFormat
    V: IntArray  # [D, k] int16, v_fmt
    v_fmt: QFormat
    latent_fmt: QFormat
    logit_fmt: QFormat
    zt_shift: int  # Q0.15 → latent: 15 − latent frac
    v_shift: int  # V·p (Q.(fv+27)) → latent frac
    head_shift: int  # accumulator → logit frac
    G: IntArray  # [C, k] int32: the head folded onto the basis, W·V with g_drop low bits dropped
    g_shift: int  # G·p (Q.(fw+fv−g_drop+27)) → accumulator frac: v_shift − g_drop
    cmaes: CmaesIntParams
    beta_q30: int
    radius_q23: int
    grid: Grid | None
    exp2_lut: IntArray
    log2_lut: IntArray
    gauss_lut: IntArray
    w_range: tuple[float, float]
    b_range: tuple[float, float]
    v_range: tuple[float, float]
    head_bound: int  # max over rows of the proven |accumulator| bound
    input_hash: str

    @property
    def n_classes(self) -> int:
        return int(self.W.shape[0])

    @property
    def dim(self) -> int:
        return int(self.W.shape[1])

    @property
    def k(self) -> int:
        return self.cfg.k


def adapt_formats(q: QModel) -> dict[str, dict[str, Any]]:
    """Formats of the adaptation core's tensors and states, by name: the manifest
    (`codegen.artefact.manifest`), INFO's application description (`codegen.emit.c`) and the
    quality report (`codegen.intref.quality`) read the same table."""
    p = q.adapt
    if p is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, fmt in (
        ("latent", p.latent_fmt),
        ("head.weight", p.w_fmt),
        ("head.bias", p.b_fmt),
        ("basis.V", p.v_fmt),
        ("logits", p.logit_fmt),
        ("entropy", H_FMT),
        ("p", P_FMT),
        ("ln_sigma", LNSIG_FMT),
    ):
        out[name] = {"name": fmt.name, "frac_bits": fmt.frac_bits, "word": fmt.word}
    if p.grid is not None:
        out["qelatta_v2_grid"] = {
            "name": str(getattr(p.grid, "name", p.grid)),
            "frac_bits": int(p.grid.frac),
            "word": 32,
        }
    return out
