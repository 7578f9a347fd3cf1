"""`codegen build` end to end: CLI, manifest, inspect, ELF, deterministic C, no float on the
device path, and the host-compiled C (UBSan) equal to the Python integer reference on every
field of the whole pipeline (LSTM + ELaTTA), with a mismatch report that names the stage."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from itertools import product
from pathlib import Path

import numpy as np
import pytest
from buildkit import (
    Kit,
    calib,
    config_text,
    data_norm,
    extreme_inputs,
    full_build,
    int16_inputs,
    make_kit,
    run_arm_probe,
    scalar_reference,
)
from elatta_measure.hostlib import HostModel, compare_host_python

from codegen.cli import main
from codegen.data import build as build_data
from codegen.data import load_split
from codegen.intref.model import RESULT_FIELDS, infer_int
from codegen.ir.nodes import QModel
from codegen.pipeline.build import build
from codegen.target.toolchain import find_tool

MODES = ("no_adapt", "strict", "continual", "continual_bounded")


@pytest.fixture(scope="module")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tinydata")
    build_data(out, preset="tiny", tier="numpy", progress=False, jobs=1)
    return out


@pytest.fixture(scope="module")
def cli_build(tiny_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Kit, Path]:
    tmp = tmp_path_factory.mktemp("clibuild")
    train = load_split(tiny_data, "train")
    kit = make_kit(
        tmp / "kit", C=len(train.classes), classes=train.classes, norm=data_norm(train.pcm)
    )
    out = tmp / "out"
    rc = main(
        [
            "build",
            "--model",
            str(kit.model),
            "--basis",
            str(kit.basis),
            "--config",
            str(kit.config),
            "--data",
            str(tiny_data),
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    return kit, out


def test_cli_build_writes_sources_elf_and_manifest(cli_build: tuple[Kit, Path]) -> None:
    kit, out = cli_build
    assert sorted(p.name for p in (out / "src").iterdir()) == [
        "fw_app_model.h",
        "kws_adapt_params.c",
        "kws_adapt_params.h",
        "kws_mfcc_params.c",
        "kws_mfcc_params.h",
        "kws_model.c",
        "kws_model.h",
    ]
    assert (out / "fw.elf").is_file()
    doc = json.loads((out / "manifest.json").read_text())
    # the integer MFCC front end's tables and formats (docs/numeric.md §7)
    fe = doc["mfcc_frontend"]
    assert fe["files"] == ["kws_mfcc_params.c", "kws_mfcc_params.h"]
    assert fe["formats"]["features"] == f"int16 {doc['formats']['x']} (the model's x format)"
    assert all(b["bound"] <= b["limit"] for b in fe["bounds"].values())
    assert doc["shapes"] == {
        "num_frames": 49,
        "input_size": 10,
        "hidden_size": 32,
        "num_classes": 12,
        "k": 2,
        "lam": 6,
        "n_iter": 2,
    }
    assert doc["formats"]["h"] == "Q0.15" and doc["formats"]["gate_preactivation"] == "Q4.11"
    assert doc["formats"]["c"] == "Q6.25"
    assert re.fullmatch(r"Q\d+\.\d+", doc["formats"]["x"])
    assert doc["luts"]["sigmoid"]["entries"] == 257
    assert "lstm.gates" in {a["name"] for a in doc["accumulators"]}
    assert all(a["margin_bits"] > 0 for a in doc["accumulators"])
    g = doc["lstm_gate_accumulator"]
    assert g["bits"] == 32 and 13 <= g["acc_frac"] <= g["acc_frac_formats"]
    assert g["bound"] == sum(g["worst_row_terms"].values()) <= g["capacity"] == 2**31 - 1
    assert doc["shifts"]["acc_frac"] == g["acc_frac"]
    assert doc["shifts"]["x_opshift"] == g["x_opshift"]
    assert doc["shifts"]["h_opshift"] == g["h_opshift"]
    text = (out / "src" / "kws_model.c").read_text()
    assert f"int32, exact, at A = {g['acc_frac']} fraction bits" in text
    assert f"worst-case bound {g['bound']} (row {g['worst_row']}" in text
    assert doc["calibration"]["source"].endswith("(seed 0)")
    fw = doc["firmware"]
    assert fw["text"] > 0 and fw["static_ram_bytes"] <= fw["ram_budget_bytes"] == 65536
    assert "-Wall -Wextra -Werror" in fw["compile_command"]
    assert "-DELT_K_MAX=2" in fw["compile_command"]
    for name, inp in doc["inputs"].items():
        assert len(inp["sha256"]) == 64, name
    q = doc["float_vs_fixed"]
    assert q["z"]["max_abs"] < 0.02 and q["same_class_noadapt"] >= 0.95
    for t in doc["tensors"]:
        # round to nearest: half an LSB, one LSB where the float value lies beyond the format
        lim = t["lsb"] if t["saturated"] else t["lsb"] / 2
        assert t["max_abs_error"] <= lim + 1e-12, t["name"]


def test_cli_build_board_preset(
    tiny_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`codegen build --board pynq-z2`: the preset's UART0 replaces the config's [target], the
    manifest records board and divisors; a bad name lists the boards."""
    train = load_split(tiny_data, "train")
    kit = make_kit(
        tmp_path / "kit", C=len(train.classes), classes=train.classes, norm=data_norm(train.pcm)
    )
    common = ["--model", str(kit.model), "--basis", str(kit.basis), "--config", str(kit.config)]
    common += ["--data", str(tiny_data)]
    rc = main(["build", *common, "--out", str(tmp_path / "out"), "--board", "pynq-z2"])
    assert rc == 0
    fw = json.loads((tmp_path / "out" / "manifest.json").read_text())["firmware"]
    assert (fw["board"], fw["uart"], fw["uart_ref_hz"]) == ("pynq-z2", 0, 100_000_000)
    assert abs(fw["uart_ref_hz"] / (fw["uart_cd"] * (fw["uart_bdiv"] + 1)) / 115_200 - 1) < 0.02
    fw_json = json.loads((tmp_path / "out" / "firmware.json").read_text())
    assert fw_json["config"]["board"] == "pynq-z2" and fw_json["config"]["uart"] == 0
    capsys.readouterr()
    rc = main(["build", *common, "--out", str(tmp_path / "bad"), "--board", "pynq"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "board='pynq': unknown board; allowed boards are qemu, zybo-z7-20, zedboard" in err


def test_build_board_precedence() -> None:
    """--board replaces [target]'s board and UART values (and says which); --uart-ref-hz etc.
    override either."""
    from codegen.ir.nodes import TargetOptions
    from codegen.pipeline.build import firmware_config

    notes: list[str] = []
    zed = firmware_config(TargetOptions(), "zedboard", {}, notes)
    assert (zed.board, zed.uart, zed.uart_ref_hz) == ("zedboard", 1, 50_000_000)
    assert notes == [
        "--board zedboard replaces the config's [target] uart=0, uart_ref_hz=100000000"
    ]
    from codegen.target.firmware import uart_divisors

    d = uart_divisors(zed.uart, zed.baud, zed.uart_ref_hz)
    assert abs(d.actual_baud - 115_200) / 115_200 < 0.02
    notes = []
    own = firmware_config(TargetOptions(), "zedboard", {"uart_ref_hz": 100_000_000}, notes)
    assert own.uart_ref_hz == 100_000_000 and own.uart == 1
    assert notes == [
        "--board zedboard replaces the config's [target] uart=0",
        "uart_ref_hz=100000000 overrides the zedboard preset's uart_ref_hz=50000000",
    ]
    toml = TargetOptions(board="microzed-7020", uart=1, uart_ref_hz=50_000_000)
    assert firmware_config(toml, None, {}, None).board == "microzed-7020"


def test_inspect_prints_formats_errors_margins_and_sizes(
    cli_build: tuple[Kit, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = cli_build
    capsys.readouterr()
    assert main(["inspect", str(out)]) == 0
    text = capsys.readouterr().out
    for needle in (
        "lstm.weight_hh_l0",
        "max|err|",
        "margin (bits)",
        "static RAM",
        "Q0.15",
        "LSTM gate accumulator: int32 at A = ",
        "sigmoid: entries=257",
        "compile command",
        "z = h_T",
        "head.weight",
    ):
        assert needle in text, needle
    assert main(["inspect", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["prefix"] == "kws_"
    assert main(["inspect", str(out / "nothing")]) == 2


def test_cli_refuses_without_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kit = make_kit(tmp_path / "kit", H=8, T=49)
    rc = main(
        [
            "build",
            "--model",
            str(kit.model),
            "--basis",
            str(kit.basis),
            "--config",
            str(kit.config),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    assert rc == 2 and "--data DIR is required" in capsys.readouterr().err


def test_fixed_eval_report_layout(cli_build: tuple[Kit, Path], tiny_data: Path) -> None:
    from elatta_measure.fixed_eval import compare_fixed_float, evaluate_fixed

    from codegen.data import dataset_info

    kit, _ = cli_build
    table = evaluate_fixed(kit.model, kit.basis, kit.config, tiny_data, limit=6)
    info = dataset_info(tiny_data)
    assert set(table) == {"no_adapt", "strict"}
    snrs = {f"{float(s):g}" for s in info["snrs"]}
    assert set(table["strict"]) == snrs
    for per_snr in table.values():
        for cells in per_snr.values():
            assert set(cells) == {*info["noises"], "average"}
            assert all(0.0 <= v <= 1.0 for v in cells.values())
    cmp = compare_fixed_float(
        kit.model, kit.basis, kit.config, tiny_data, limit=6, modes=("no_adapt",)
    )
    assert cmp.fixed["no_adapt"] == table["no_adapt"] and cmp.clips_per_condition == 6
    assert all(v >= 0.9 for v in cmp.same_class["no_adapt"].values())


def test_firmware_over_the_ram_budget_is_refused_with_the_split(tmp_path: Path) -> None:
    """A model whose firmware the linker refuses (data + bss + stacks > 64 KiB): the build says
    by how much, where the bytes are, and the ways out, and leaves no probe behind."""
    from codegen.base.errors import CodegenError

    cfg = config_text(k=32).replace("[target]\n", "[target]\nmax_payload = 8192\n")
    kit = make_kit(tmp_path / "kit", F=40, H=255, C=200, T=98, k=32, config=cfg)
    with pytest.raises(CodegenError) as exc:
        build(kit.model, kit.basis, kit.config, tmp_path / "b", calib_features=calib(kit, n=8))
    msg = str(exc.value)
    m = re.search(r"static RAM (\d+) B exceeds the 65536 B budget by (\d+) B", msg)
    assert m and int(m.group(1)) - 65536 == int(m.group(2)) > 0, msg
    for part in ("frame buffers", "encoder state", "model runtime"):
        assert part in msg, msg
    assert re.search(r"stacks \d+ B", msg), msg  # the link script's stacks (startup.S modes)
    assert 'input = "pcm"' in msg and "max_payload (now 8192)" in msg
    assert not (tmp_path / "b" / "ram-probe").exists()


def test_generated_c_is_deterministic_and_names_its_inputs(tmp_path: Path) -> None:
    kit = make_kit(tmp_path / "kit", H=16, C=4)
    x = calib(kit, n=32)
    a = build(kit.model, kit.basis, kit.config, tmp_path / "a", calib_features=x, compile_elf=False)
    b = build(kit.model, kit.basis, kit.config, tmp_path / "b", calib_features=x, compile_elf=False)
    for pa, pb in zip(a.sources, b.sources, strict=True):
        assert pa.name == pb.name and pa.read_bytes() == pb.read_bytes()
    text = (tmp_path / "a" / "src" / "kws_model.c").read_text()
    for sha in (
        a.qmodel.source.hashes.model,
        a.qmodel.source.hashes.basis,
        a.qmodel.source.hashes.config,
    ):
        assert sha in text
    assert "malloc" not in text and "float" not in text.split("*/", 1)[1].split("/*")[0]
    # every weight array documents shape, Q format and float range
    for m in re.finditer(r"/\* (lstm\.\S+|sigmoid_lut): (.*)\*/", text):
        assert "shape [" in m.group(2) and re.search(r"Q\d+\.\d+", m.group(2))
        assert "float range [" in m.group(2)


def test_device_code_has_no_floating_point(cli_build: tuple[Kit, Path]) -> None:
    """The model and ELaTTA kernels in the ELF use no VFP/NEON floating-point instruction."""
    _, out = cli_build
    objdump = find_tool("arm-none-eabi-gcc").replace("gcc", "objdump")
    dis = subprocess.run(
        [objdump, "-d", str(out / "fw.elf")], check=True, capture_output=True, text=True
    ).stdout
    funcs = re.split(r"\n(?=[0-9a-f]{8} <)", dis)
    ours = [f for f in funcs if re.match(r"[0-9a-f]{8} <(elt_|kws_)", f)]
    assert any("<elt_lstm_s16_run>" in f for f in ours)
    assert any("<kws_model_encode" in f for f in ours)
    for f in ours:
        bad = re.findall(r"\tv\w+\.f(?:16|32|64)\b|\tvcvt", f)
        assert not bad, f.splitlines()[0] + f" uses {bad[:3]}"


PROBE_MAIN = r"""
/* Test probe (tests/codegen/pipeline/test_build.py): run the generated model on embedded samples,
 * print fields. */
#include <stdint.h>
#include "fw_uart.h"
#include "fw_probe_print.h"
#include "kws_model.h"
#include "probe_data.h"
int main(void);
static elt_adapt_state_t st;
static elt_adapt_result_t res;
static int16_t z[KWS_HIDDEN_SIZE];
int main(void)
{
    uint32_t i, j, m;
    fw_uart_init();
    for (m = 0; m < PROBE_MODES; ++m) {
        elt_adapt_params_t p = kws_adapt_params;
        p.mode = probe_modes[m];
        elt_adapt_reset(&st);
        for (i = 0; i < PROBE_N; ++i) {
            const int16_t *xi = probe_x + i * KWS_FEATURE_COUNT;
            kws_model_encode(xi, z);
            kws_model_infer_params(&p, xi, probe_ids[i], &st, &res);
            fw_uart_putc('R');
            fw_uart_putc(' ');
            for (j = 0; j < KWS_HIDDEN_SIZE; ++j) put_s(z[j]);
            put_s(res.pred_noadapt);
            for (j = 0; j < KWS_NUM_CLASSES; ++j) put_s(res.logits_noadapt[j]);
            put_s(res.H_noadapt);
            put_s(res.pred);
            for (j = 0; j < KWS_NUM_CLASSES; ++j) put_s(res.logits[j]);
            put_s(res.H_best);
            for (j = 0; j < KWS_K; ++j) put_s(res.p_best[j]);
            put_s(res.n_pivot_fix);
            fw_uart_putc('\n');
        }
    }
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
"""


@pytest.mark.qemu
@pytest.mark.parametrize(
    "scale, limited_by, variant",
    [
        (1.0, "formats", "neon_a32"),  # A = frac W_ih + frac x: x_opshift 0 (VRSHL by 0 = identity)
        (3.0, "int32 proof", "neon_a32"),
        (3.0, "int32 proof", "ref"),  # the plain C operations on the same core
    ],
)
def test_cortex_a9_build_equals_python_under_qemu(
    tmp_path: Path, scale: float, limited_by: str, variant: str
) -> None:
    """The ARM build of the generated C (as in fw.elf, the NEON LSTM kernel; with the ref kernel
    variant the plain C) computes what the Python reference does: a probe main runs it under
    qemu-system-arm (xilinx-zynq-a9) on random inputs and saturating ones (all −32768, all
    32767, alternating extremes: gate pre-activations beyond Q4.11) in every mode and prints
    every field."""
    from codegen.base.resources import firmware_dir
    from codegen.elatta.float_ref import MODES as ALL_MODES
    from codegen.emit.c import carray, render_model, write_sources
    from codegen.emit.flags import model_cflags
    from codegen.frontend.reader import read_model
    from codegen.quantize.model import quantize_model
    from codegen.target import sources

    kit = make_kit(tmp_path / "kit", seed=11, scale=scale)
    q = quantize_model(read_model(kit.model, kit.basis, kit.config), calib(kit))
    assert q.encoder[0].proof.limited_by == limited_by
    src = tmp_path / "src"
    write_sources(render_model(q), src)
    x = np.concatenate(
        [
            int16_inputs(np.random.default_rng(5), 11, kit.T, kit.F, q.x_fmt.frac_bits),
            extreme_inputs(kit.T, kit.F),
        ]
    )
    n = len(x)
    assert scalar_reference(x[-5:-3], q.encoder[0])[1] > 0  # gates do saturate
    ids = np.random.default_rng(6).choice(2**32 - 1, size=n, replace=False)
    mode_ids = ", ".join(str(ALL_MODES.index(m)) for m in MODES)
    (src / "probe_data.h").write_text(
        f"#define PROBE_N {n}u\n#define PROBE_MODES {len(MODES)}u\n"
        f"static const int32_t probe_modes[] = {{{mode_ids}}};\n"
        f"static const uint32_t probe_ids[] = {{\n{carray(ids.astype(np.int64))}\n}};\n"
        f"static const int16_t probe_x[{n} * KWS_FEATURE_COUNT] = {{\n"
        f"{carray(x.reshape(-1))}\n}};\n"
    )
    (src / "probe_main.c").write_text(PROBE_MAIN)
    fw = firmware_dir()
    sources = [
        src / "probe_main.c",
        *sorted(p for p in src.glob("*.c") if p.name != "probe_main.c"),
        *(fw / s for s in sources.kernels(True)),
    ]
    lines = [
        ln
        for ln in run_arm_probe(tmp_path, sources, [src], model_cflags(q), variant)
        if ln.startswith("R ")
    ]
    assert len(lines) == n * len(MODES)
    C, k, H = len(q.source.classes), kit.k, kit.H
    for m, mode in enumerate(MODES):
        py = infer_int(x, q, ids, mode).fields()
        for i in range(n):
            v = np.array(lines[m * n + i].split()[1:], dtype=np.int64)
            parts = np.split(v, np.cumsum([H, 1, C, 1, 1, C, 1, k, 1])[:-1])
            got = dict(
                zip(
                    (
                        "z",
                        "pred_noadapt",
                        "logits_noadapt",
                        "H_noadapt",
                        "pred",
                        "logits",
                        "H_best",
                        "p_best",
                        "n_pivot_fix",
                    ),
                    parts,
                    strict=True,
                )
            )
            for name, val in got.items():
                np.testing.assert_array_equal(
                    val, np.atleast_1d(py[name][i]), err_msg=f"{mode} sample {i} {name}"
                )


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> tuple[Kit, QModel, HostModel]:
    tmp = tmp_path_factory.mktemp("full")
    kit = make_kit(tmp / "kit", seed=3)
    q, hm = full_build(tmp, kit, calib(kit), sanitize=True, trace=True)
    return kit, q, hm


@pytest.mark.parametrize("mode", MODES)
def test_host_c_equals_python_every_field(host, mode: str) -> None:  # type: ignore[no-untyped-def]
    kit, q, hm = host
    n = 160 if mode.startswith("continual") else 400
    x = int16_inputs(np.random.default_rng(hash(mode) % 1000), n, kit.T, kit.F, q.x_fmt.frac_bits)
    ids = np.random.default_rng(1).choice(2**32 - 1, size=n, replace=False)
    assert compare_host_python(hm, x, ids, mode) is None


def test_real_clips_bit_exact(host, tiny_data: Path) -> None:  # type: ignore[no-untyped-def]
    from codegen.base.features import quantize_features
    from codegen.ir.meta import features_for

    kit, q, hm = host
    split = load_split(tiny_data, "test")
    x = quantize_features(features_for(split.pcm, q.source.meta), q.x_fmt)
    for mode in ("strict", "continual_bounded"):
        assert compare_host_python(hm, x, split.ids, mode) is None


@pytest.mark.slow
def test_real_builtin_clips_2000_bit_exact(host, tiny_data: Path) -> None:  # type: ignore[no-untyped-def]
    """Every clip of every test condition of the built-in tiny set (≥ 2,000 real samples)."""
    from codegen.base.features import quantize_features
    from codegen.data import conditions, load_condition
    from codegen.ir.meta import features_for

    kit, q, hm = host
    splits = [load_condition(tiny_data, c) for c in conditions(tiny_data)]
    pcm = np.concatenate([s.pcm for s in splits])
    ids = np.concatenate([s.ids for s in splits])
    assert len(ids) >= 2000
    x = quantize_features(features_for(pcm, q.source.meta), q.x_fmt)
    for mode in MODES:
        assert compare_host_python(hm, x, ids, mode) is None, mode


def test_mismatch_report_names_first_stage_index_and_values(host) -> None:  # type: ignore[no-untyped-def]
    kit, q, hm = host
    x = int16_inputs(np.random.default_rng(8), 6, kit.T, kit.F, q.x_fmt.frac_bits)
    ids = np.arange(6)
    # a Python-side model whose head bias differs by one LSB in class 3: the C is unchanged
    b = np.array(q.adapt.b)
    b[3] += 1 << q.adapt.head_shift
    b.setflags(write=False)
    hm_bad = HostModel.__new__(HostModel)
    hm_bad.__dict__.update(hm.__dict__)
    hm_bad.q = dataclasses.replace(q, adapt=dataclasses.replace(q.adapt, b=b))
    mm = compare_host_python(hm_bad, x, ids, "strict")
    assert mm is not None
    assert mm.sample == 0 and mm.stage == "logits_noadapt" and mm.index == (-1, 3)
    assert mm.py_value == mm.c_value + 1 or mm.c_value == 32767
    assert "sample 0 (id 0): first difference at logits_noadapt[-1, 3]" in str(mm)


def test_python_reference_fields_have_device_types(host) -> None:  # type: ignore[no-untyped-def]
    kit, q, _ = host
    x = int16_inputs(np.random.default_rng(2), 8, kit.T, kit.F, q.x_fmt.frac_bits)
    f = infer_int(x, q, np.arange(8)).fields()
    assert set(f) == set(RESULT_FIELDS)
    assert f["z"].dtype == np.int16 and f["logits"].dtype == np.int16
    assert f["p_best"].shape == (8, kit.k)


GRID = [
    # (k, n_iter, extra config) — QELaTTA-V1 and -V2 variants on top of the plain one
    *[(k, n, "") for k, n in product((1, 2, 4, 8), (1, 2, 5))],
    (2, 2, "qelatta_v1 = true"),
    (4, 2, "qelatta_v1 = true"),
    (2, 2, 'qelatta_v2 = "8b4"'),
    (4, 5, 'qelatta_v2 = "4b2"'),
    (8, 2, 'qelatta_v2 = "8b4"'),
]


def _grid_case(tmp: Path, k: int, n: int, extra: str, samples: int, seed: int) -> None:
    cfg = config_text(k=k, n_iter=n, extra=extra)
    kit = make_kit(tmp / "kit", k=k, seed=seed, config=cfg)
    q, hm = full_build(tmp, kit, calib(kit), sanitize=False, trace=True)
    rng = np.random.default_rng(seed)
    for mode in MODES:
        m = samples if mode in ("no_adapt", "strict") else max(samples // 4, 50)
        x = int16_inputs(rng, m, kit.T, kit.F, q.x_fmt.frac_bits)
        ids = rng.choice(2**32 - 1, size=m, replace=False)
        mm = compare_host_python(hm, x, ids, mode)
        assert mm is None, f"k={k} n={n} {extra!r} {mode}: {mm}"


@pytest.mark.parametrize(
    "k, n, extra", [(1, 5, ""), (4, 2, 'qelatta_v2 = "4b2"'), (8, 1, "qelatta_v1 = true")]
)
def test_grid_slice(tmp_path: Path, k: int, n: int, extra: str) -> None:
    _grid_case(tmp_path, k, n, extra, samples=120, seed=k * 10 + n)


@pytest.mark.slow
@pytest.mark.parametrize("k, n, extra", GRID)
def test_grid_full_10000(tmp_path: Path, k: int, n: int, extra: str) -> None:
    """≥ 10,000 random inputs (incl. saturating) per grid point over all modes."""
    _grid_case(tmp_path, k, n, extra, samples=4_000, seed=k * 10 + n + len(extra))
