"""A new input stage is one registry entry plus its own module and C file (docs/architecture.md
§3, codegen/stages/): a fixed gain (every feature times a constant Q15 gain, rounded and
saturated), declared in this file only, with a mode that runs it, reaches every consumer: the
config reader (its [gain] table), the quantizer (its Q15 constant), the float twin, the integer
reference, the firmware (its C file, written here, compiled into a `codegen build` through the
registry; every RESULT field of feature INFER and of the audio mode on QEMU equal to the integer
reference) and `codegen eval` (a row with the mode's label, float and integer, its safety
verdict). No file of the project is touched: the registries take the stage and the mode for the
module's tests and drop them after."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from numpy.testing import assert_array_equal
from repopaths import ROOT

from codegen.base.errors import ConfigError
from codegen.base.fixed import rshift_round
from codegen.ir import modes
from codegen.ir.modes import MODES, Mode
from codegen.stages import registry
from codegen.stages.stage import FloatRun, InputStage, IntRun, StageShape, StageTable

GAIN = -0.6  # the config's [gain]: a sign flip too, so a stage the device skipped would show
TARGET = {"kind": "qemu", "machine": "xilinx-zynq-a9", "icount": True}

# The stage's firmware: a frame stage (elt_stage.h), so feature INFER runs it over the clip's
# frames and the audio mode before each encoder step; FW_APP_GAIN_Q15 comes from the build's
# fw_app_model.h (the table's c_constants below).
GAIN_C = """\
#include <stdint.h>

#include "elt_stage.h"
#include "fw_app_model.h"

/* every feature times the Q15 gain, rounded half up, saturated to int16 */
static void gain_frame(int16_t *frame)
{
    for (uint32_t f = 0; f < FW_APP_F; f++) {
        const int32_t v = ((int32_t)frame[f] * FW_APP_GAIN_Q15 + (1 << 14)) >> 15;
        frame[f] = (int16_t)(v > 32767 ? 32767 : (v < -32768 ? -32768 : v));
    }
}

const elt_stage_t elt_stage_gain = {.frame = gain_frame};
"""


@dataclass(frozen=True)
class GainSettings:
    """[gain]: the gain, a float in [-1, 1) (Q15)."""

    gain: float = 0.5

    def __post_init__(self) -> None:
        g = self.gain
        if not isinstance(g, int | float) or isinstance(g, bool) or not -1.0 <= g < 1.0:
            raise ConfigError(f"gain={g!r} is not allowed: use a float in [-1, 1) (Q15)")


@dataclass(frozen=True)
class GainParams:
    gain_q15: int


def quantize_gain(s: GainSettings, shape: StageShape) -> GainParams:
    return GainParams(min(round(s.gain * 32768), 32767))


def gain_float(u: npt.ArrayLike, s: GainSettings) -> FloatRun:
    return FloatRun(np.asarray(u, np.float64) * s.gain)


def gain_int(x: npt.ArrayLike, p: GainParams) -> IntRun:
    y = rshift_round(np.asarray(x, np.int64) * p.gain_q15, 15)
    return IntRun(np.clip(y, -32768, 32767))


def gain_constants(p: GainParams) -> str:
    return (
        f"/* the test's input stage gain: its Q15 gain */\n#define FW_APP_GAIN_Q15 ({p.gain_q15})\n"
    )


def gain_describe(p: GainParams | None) -> tuple[tuple[str, str], ...]:
    return (("gain", "-" if p is None else str(p.gain_q15)),)


def gain_stage(c_file: Path) -> InputStage:
    table = StageTable(
        name="gain",
        settings=GainSettings,
        params=GainParams,
        quantize=quantize_gain,
        sources=(c_file,),
        c_constants=gain_constants,
        describe=gain_describe,
    )
    return InputStage("gain", table, "frame", gain_float, gain_int, "elt_stage_gain", "a gain")


GAIN_WIRE_ID = len(MODES)  # the next free wire id


def gain_mode() -> Mode:
    """The test's mode; built once its stage is registered (a mode names a registered stage)."""
    return Mode(
        "gain",
        GAIN_WIRE_ID,
        "fixed gain (a test's input stage)",
        "no_adapt",
        before_encoder="gain",
        eval_label="fixed gain",
        safety_limit=-100.0,
    )


@pytest.fixture(scope="module")
def registered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The stage and its mode in the registries for this module's tests; the C file's folder."""
    work = tmp_path_factory.mktemp("gain")
    (work / "elt_stage_gain.c").write_text(GAIN_C)
    with registry.registered(gain_stage(work / "elt_stage_gain.c")):
        with modes.registered(gain_mode()):
            yield work
    assert "gain" not in registry.names() and "gain" not in modes.DEVICE_MODES


@pytest.fixture(scope="module")
def gain_build(registered: Path) -> tuple[Path, Path, Path]:
    """The default model built with [gain] gain = GAIN on the tiny data set: (build, data,
    config)."""
    from codegen.data import build as build_data
    from codegen.pipeline.build import build

    data = registered / "data"
    build_data(data, preset="tiny", tier="numpy", progress=False, jobs=1)
    config = registered / "config.toml"
    config.write_text((ROOT / "configs/default.toml").read_text() + f"\n[gain]\ngain = {GAIN}\n")
    out = registered / "build"
    build(ROOT / "models/default/model.pt", ROOT / "models/default/basis.npz", config, out,
          data_dir=data)  # fmt: skip
    return out, data, config


def test_the_stage_reaches_the_config_the_program_and_the_generated_c(
    gain_build: tuple[Path, Path, Path],
) -> None:
    """[gain] is read and validated by its settings, quantized by its quantizer into the
    program, and the build's fw_app_model.h carries its constant and its elt_stage_t at the
    mode's wire id; a build without the stage registered refuses its table."""
    import tomllib

    from elatta_host.plan import load_build

    from codegen.frontend.reader import parse_config

    build_dir, _, config = gain_build
    _, q = load_build(build_dir)  # the program's GainSettings and GainParams load back
    assert q.source.adapt.stage_settings("gain") == GainSettings(GAIN)
    assert q.stage_params("gain") == GainParams(round(GAIN * 32768))
    assert q.stage_params("cmvn") is not None  # the built-in table is still there
    header = (build_dir / "src" / "fw_app_model.h").read_text()
    assert f"#define FW_APP_GAIN_Q15 ({round(GAIN * 32768)})" in header
    table = re.search(r"#define FW_APP_MODE_STAGE \{(.*)\}", header)
    assert table is not None
    assert [s.strip() for s in table.group(1).split(",")][GAIN_WIRE_ID] == "&elt_stage_gain"
    assert f"#define FW_APP_MODE_COUNT {len(MODES)}u" in header
    described = re.search(r'#define FW_APP_DESCRIPTION "(.*)"', header)
    assert described is not None  # INFO's description carries the table's pairs
    assert f"gain={round(GAIN * 32768)}" in described.group(1).split()
    with pytest.raises(ConfigError, match=r"\[gain\]: gain=1.5 is not allowed: use a float in"):
        parse_config(tomllib.loads("[gain]\ngain = 1.5\n"))
    with pytest.raises(ConfigError, match=r"\[gain\].gain = 'loud' has type str; expected float"):
        parse_config(tomllib.loads("[gain]\ngain = 'loud'\n"))
    with pytest.raises(ConfigError, match=r"unknown key\(s\) level; allowed: gain"):
        parse_config(tomllib.loads("[gain]\nlevel = 1\n"))


def test_float_twin_and_integer_reference_are_the_stage(
    gain_build: tuple[Path, Path, Path],
) -> None:
    """The float twin (`stage_classes`, what `codegen run` and `codegen eval` call) is the gain
    on the float features, and the integer reference (`infer_int`, the mode's) is the gain on
    the int16 features: the two stay within one LSB of each other, and the mode's answers are
    the encoder's on the scaled features, float and integer."""
    from elatta_host.plan import load_build

    from codegen.base.features import quantize_features
    from codegen.data import load_split
    from codegen.elatta.float_ref import encode_float, head_logits
    from codegen.intref.model import infer_int
    from codegen.ir.meta import features_for

    build_dir, data, _ = gain_build
    _, q = load_build(build_dir)
    model = q.source
    xf = features_for(load_split(str(data), "test").pcm[:24], model.meta)
    W, b = model.head.weight.values, model.head.bias.values

    def logits_of(u: Any) -> Any:
        return head_logits(encode_float(np.asarray(u), model), W, b)

    got = registry.stage_classes(xf, "gain", model.adapt.stages, logits_of)
    assert_array_equal(got, np.argmax(logits_of(xf * GAIN), axis=1))
    assert (got != np.argmax(logits_of(xf), axis=1)).any()  # the gain changes answers
    xi = quantize_features(xf, q.x_fmt)
    ids = np.arange(len(xi))
    scaled = gain_int(xi, q.stage_params("gain")).x
    lsb = np.abs(scaled - quantize_features(xf * GAIN, q.x_fmt).astype(np.int64))
    inside = np.abs(xf) < 32000 / (1 << q.x_fmt.frac_bits)  # the int16 features did not saturate
    assert inside.mean() > 0.99 and lsb[inside].max() <= 1
    ref = infer_int(xi, q, ids, mode="gain")
    plain = infer_int(scaled.astype(np.int16), q, ids, mode="no_adapt")
    for field, values in ref.fields().items():
        assert_array_equal(values, plain.fields()[field], err_msg=field)
    assert (ref.pred != infer_int(xi, q, ids, mode="no_adapt").pred).any()


@pytest.mark.qemu
@pytest.mark.parametrize("input_kind", ["features", "pcm"])
def test_the_firmware_runs_the_stage_bit_exact(
    gain_build: tuple[Path, Path, Path], input_kind: str, tmp_path: Path
) -> None:
    """The firmware built with the stage's C runs the new mode (feature INFER: the stage over
    the clip's frames; the audio mode: before each encoder step), and every RESULT field equals
    the integer reference of the mode, sample by sample; the float twin is the run's float
    row."""
    from elatta_host.plan import load_build, make_plan
    from elatta_host.run import DeviceSpec, execute, read_results

    from codegen.intref.model import infer_int, stream_infer_int

    build_dir, data, _ = gain_build
    plan = make_plan(build_dir, data, ("gain",), 10, input_kind=input_kind)
    spec = DeviceSpec("qemu0", elf=build_dir / "fw.elf", icount=True, timeout=5.0)
    out = execute(plan, [spec], tmp_path / "run", resume=False, target=TARGET, progress=False)
    assert not out.errors, out.errors
    assert out.report["bit_exact"]["mismatches"] == 0
    assert out.report["bit_exact"]["compared"] == plan.total > 0
    recs = {
        (r.stream, r.result.sample_id): r.result
        for r in read_results(tmp_path / "run" / "results.jsonl")
    }
    _, q = load_build(build_dir)
    for st in plan.streams:
        if input_kind == "pcm":
            assert st.pcm is not None
            want = stream_infer_int(st.pcm, q, st.ids, mode="gain").fields()
        else:
            want = infer_int(st.x, q, st.ids, mode="gain").fields()
        got = [recs[(st.key, int(i))] for i in st.ids]
        assert all(r.mode == GAIN_WIRE_ID for r in got)
        for field, values in want.items():
            device = np.array([np.asarray(getattr(r, field)) for r in got])
            assert_array_equal(device, np.asarray(values).reshape(device.shape), err_msg=field)


def test_codegen_eval_runs_the_mode_with_its_label(
    gain_build: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`codegen eval --mode gain --fixed`: the mode's row under its label in the float and the
    integer tables, its safety verdict against its limit, and its [gain] settings in the
    report, all read from the mode and the stage."""
    from codegen.cli import main

    _, data, config = gain_build
    argv = ["eval", "--model", str(ROOT / "models/default/model.pt")]
    argv += ["--basis", str(ROOT / "models/default/basis.npz"), "--data", str(data)]
    argv += ["--config", str(config), "--report", str(tmp_path / "eval"), "--limit", "4"]
    argv += ["--seeds", "1", "--no-progress", "--mode", "gain", "--fixed"]
    argv += ["--sigma0", "0.05", "--beta", "0.5", "--radius", "1.0"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^.{8}fixed gain {7}  ", printed, re.M), printed  # its row, its label
    assert re.search(r"fixed gain +limit -100\.0: safe;", printed), printed
    report = json.loads((tmp_path / "eval" / "report.json").read_text())
    assert tuple(report["float"]) == ("no_adapt", "gain")
    assert tuple(report["fixed"]) == ("no_adapt", "gain")
    assert report["config"]["gain"] == {"gain": GAIN}
    assert set(report["safety"]) == {"gain"}
    assert all(v["limit_points"] == -100.0 for v in report["safety"]["gain"].values())


def test_a_stage_must_be_well_formed(registered: Path) -> None:
    """The registry refuses what a consumer could not take, naming it: a taken name, an
    unknown form, a table name bound to other classes, a mode naming an unknown stage."""
    stage = registry.stage("gain")
    with pytest.raises(ConfigError, match="registered already"):
        registry.register(stage)
    with pytest.raises(ConfigError, match="form 'sideways' is not one of"):
        registry.register(dataclasses.replace(stage, name="gain2", form="sideways"))
    other = dataclasses.replace(stage.table, settings=dataclass(frozen=True)(type("S", (), {})))
    with pytest.raises(ConfigError, match=r"table \[gain\] is another stage's"):
        registry.register(dataclasses.replace(stage, name="gain3", table=other, symbol="x"))
    with pytest.raises(ValueError, match="unknown input stage 'pcen'"):
        Mode("pcen", len(modes.MODES), "x", "no_adapt", before_encoder="pcen")
    with pytest.raises(ConfigError, match="is built in"):
        registry.unregister("cmvn")
