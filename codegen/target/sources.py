"""The firmware's source files, in one place: what `codegen firmware`, `codegen build`, the host
libraries of the tests and `codegen bench` compile (names under ``firmware/``, link order)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codegen.base.errors import ConfigError

# The bare-metal runtime around a board folder (codegen/target/cores.py `BoardFolder.runtime`,
# which puts the board's start-up code first and its drivers around these): the main loop, frames
# and the protocol server, and the runtime support every board shares (memcpy and friends, the
# stack's high-water mark, the fault reporter). The board implements the target interface, the
# headers fw_uart.h, fw_timer.h, fw_rt.h and fw_board.h at the top of firmware/.
MAIN = "main.c"
LINK: tuple[str, ...] = ("fw_frame.c", "fw_server.c")
RT = "fw_rt.c"
# The integer encoders: LSTM (its twin: codegen/intref/lstm.py) and GRU (codegen/intref/gru.py;
# the linker drops whichever a model does not call), and the hidden Linear + ReLU layers of an
# MLP head (elt_dense_s16.c).
LSTM: tuple[str, ...] = ("elt_lstm_s16.c", "elt_gru_s16.c", "elt_dense_s16.c")
# The ELaTTA adaptation core; elt_intmath.c: the exact division and square root the others call.
ADAPT: tuple[str, ...] = (
    "elt_intmath.c",
    "elt_rng.c",
    "elt_entropy_s16.c",
    "elt_cmaes_s32.c",
    "elt_adapt.c",
)
# The model runtime (INFER/RESET, the audio and continuous modes), bound to one model by the
# generated fw_app_model.h, and the continuous mode's detector (its twin:
# codegen/intref/listen.py); the input stages it runs before the encoder bring their own C
# (codegen.stages.registry: each table's sources, e.g. elt_cmvn_s16.c and elt_cmvn_stage.c).
APP: tuple[str, ...] = ("elt_detect_s16.c", "fw_app_kws.c")
# The audio mode's front end: the integer MFCC (its twin: codegen/intref/mfcc.py; tables:
# codegen/emit/mfcc.py) and the IMA ADPCM decoder of compressed audio on the link (its twin:
# codegen/base/adpcm.py; docs/numeric.md §8).
MFCC: tuple[str, ...] = ("elt_mfcc_s16.c", "elt_adpcm.c")
# The float32 encoder of the bench's float baselines.
F32: tuple[str, ...] = ("elt_lstm_f32.c",)


def kernels(with_adapt: bool) -> tuple[str, ...]:
    """The model kernels a build links: the encoder, and the adaptation core if it has one."""
    return LSTM + (ADAPT if with_adapt else ())


# The kernels' variants (docs/architecture.md §5), as TFLM keeps its reference and optimised
# kernels apart: a kernel with a NEON form keeps what every core runs in firmware/<kernel>.c, and
# the operations that differ (inner loops, whole stages) in firmware/kernels/<variant>/ under the
# same file names and function names in every variant (static inline, always_inline where the
# split must not cost a call: the device's icount ticks are unchanged by it). A build puts one
# variant's folder on the include path before firmware/; the kernels never test ELT_NEON.
KERNELS_DIR = "kernels"


@dataclass(frozen=True)
class KernelVariant:
    """One variant of the kernels' operations: its folder under firmware/ and the -D flags a
    build with it takes (the reference variant also keeps the rest of the firmware, the link
    layer and the generated kernels, on their plain-C paths: -DELT_SCALAR, firmware/elt_neon.h)."""

    name: str
    cflags: tuple[str, ...]
    what: str

    @property
    def folder(self) -> str:
        return f"{KERNELS_DIR}/{self.name}"

    def compile_flags(self, firmware: Path) -> tuple[str, ...]:
        """What a compile of the kernels with this variant adds: its -D flags and its folder
        on the include path (``firmware``: the firmware/ directory)."""
        return (*self.cflags, f"-I{firmware / self.folder}")


# Plain C, any core: the readable reference of the same integers (host builds, a core without
# NEON, the bench's `scalar` baseline).
REF = KernelVariant("ref", ("-DELT_SCALAR",), "plain C (any core)")
# The Cortex-A9's Advanced SIMD in A32 state (ARM DDI 0406C chapter A4 "The Advanced SIMD and
# Floating-point instructions"); every header of the folder refuses a build without ELT_NEON.
NEON_A32 = KernelVariant("neon_a32", (), "Cortex-A9 NEON (ARMv7-A Advanced SIMD, A32)")
VARIANTS: dict[str, KernelVariant] = {v.name: v for v in (REF, NEON_A32)}
# what a host build takes (a core's own: codegen/target/cores.py `Core.kernels`)
HOST = REF


def variant(name: str) -> KernelVariant:
    """The variant called ``name``; ConfigError naming the variants otherwise."""
    if name not in VARIANTS:
        raise ConfigError(f"kernel variant {name!r}: choose from {', '.join(VARIANTS)}")
    return VARIANTS[name]
