"""Bring your own model (codegen.frontend.importer): files saved the ways PyTorch users save them
build
and agree with the user's own forward pass; models outside the family, and models that look
like it but pool differently, are refused with the part and the fix named; limits are checked
before calibration."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from repopaths import ROOT
from torch import nn

from codegen.base.errors import CodegenError
from codegen.base.features import MfccParams
from codegen.base.files import file_sha256
from codegen.frontend.basis import Basis, compute_basis, save_basis
from codegen.frontend.cliargs import Declared
from codegen.pipeline.build import build

CLASSES = 12
F, T = 10, 49


class Kws(nn.Module):
    """A user's model: LSTM (either layout, optional bias, 1 or 2 layers) + pooling + head."""

    def __init__(
        self,
        H: int = 24,
        batch_first: bool = True,
        pool: str = "last",
        bias: bool = True,
        layers: int = 1,
    ) -> None:
        super().__init__()
        self.rnn = nn.LSTM(F, H, num_layers=layers, batch_first=batch_first, bias=bias)
        self.classifier = nn.Linear(H, CLASSES)
        self.pool = pool
        self.batch_first = batch_first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, (h, _) = self.rnn(x)
        if self.pool == "last":
            return self.classifier(h[-1])
        t_axis = 1 if self.batch_first else 0
        if self.pool == "max":
            return self.classifier(out.amax(dim=t_axis))
        if self.pool == "first":
            return self.classifier(out.select(t_axis, 0))
        return self.classifier(out.mean(dim=t_axis))


class GruKws(nn.Module):
    def __init__(self, layers: int = 1, pool: str = "last", batch_first: bool = True) -> None:
        super().__init__()
        self.gru = nn.GRU(F, 16, num_layers=layers, batch_first=batch_first)
        self.head = nn.Linear(16, CLASSES)
        self.pool, self.batch_first = pool, batch_first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, h = self.gru(x)
        t_axis = 1 if self.batch_first else 0
        z = {"last": h[-1], "mean": out.mean(t_axis), "max": out.amax(t_axis)}[self.pool]
        return self.head(z)


class RnnKws(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.RNN(F, 16, batch_first=True)
        self.head = nn.Linear(16, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.rnn(x)[1][-1])


class MlpKws(nn.Module):
    """An MLP head: Linear + activation (+ Dropout) layers before the final Linear."""

    def __init__(self, widths: tuple[int, ...] = (16,), act: str = "relu", cell: str = "lstm"):
        super().__init__()
        self.lstm = (nn.GRU if cell == "gru" else nn.LSTM)(F, 16, batch_first=True)
        layers: list[nn.Module] = []
        w = 16
        for d in widths:
            layers += [nn.Linear(w, d), nn.ReLU() if act == "relu" else nn.Tanh(), nn.Dropout(0.1)]
            w = d
        self.hidden = nn.Sequential(*layers)
        self.head = nn.Linear(w, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, state = self.lstm(x)
        h = state[0] if isinstance(state, tuple) else state
        return self.head(self.hidden(h[-1]))


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from codegen.data import build as build_data

    out = tmp_path_factory.mktemp("importdata")
    build_data(out, preset="tiny", tier="numpy", progress=False, jobs=1)
    return out


def scaled(m: nn.Module, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    for p in m.parameters():
        nn.init.uniform_(p, -0.6, 0.6)
    return m.eval()


def basis_for(path: Path, H: int, tmp: Path) -> Path:
    rng = np.random.default_rng(0)
    z = np.tanh(rng.standard_normal((30, H)))
    V, s, mean, ev = compute_basis(z, 2)
    out = tmp / f"{path.stem}.basis.npz"
    save_basis(out, Basis(V, s, mean, z.shape[0], 2, 0, file_sha256(path), ev))
    return out


CONFIG = ROOT / "configs" / "default.toml"
# the settings these models were trained on (the tiny set's): declared, as a user must
FEATURES = Declared(features=MfccParams(n_mfcc=F), origin=(("features", "--features"),))


def build_user(
    path: Path,
    H: int,
    data: Path,
    tmp: Path,
    config: Path = CONFIG,
    trust_pickle: bool = False,
    declared: Declared = FEATURES,
) -> dict[str, object]:
    res = build(
        path,
        basis_for(path, H, tmp),
        config,
        tmp / "b",
        data_dir=data,
        compile_elf=False,
        trust_pickle=trust_pickle,
        declared=declared,
    )
    u = res.manifest["float_vs_fixed"]["user_model"]
    return dict(u)


@pytest.mark.parametrize(
    ("name", "module", "save"),
    [
        ("whole module, time-major, bias-free", Kws(batch_first=False, bias=False), "module"),
        ("whole module in DataParallel", nn.DataParallel(Kws()), "module"),
        ("torch.export program", Kws(), "export"),
        ("torch.export, time-major", Kws(batch_first=False), "export"),
        ("TorchScript, traced, mean pooling", Kws(pool="mean"), "trace"),
        (
            "two layers, time-major, max pooling",
            Kws(batch_first=False, pool="max", layers=2),
            "module",
        ),
        ("two layers, torch.export", Kws(layers=2), "export32"),
        ("GRU, whole module", GruKws(), "module"),
        ("GRU, two layers, time-major, mean pooling", GruKws(2, "mean", False), "module"),
        ("GRU, torch.export", GruKws(pool="max"), "export32"),
        ("MLP head, whole module", MlpKws((24,)), "module"),
        ("two-layer MLP head on a GRU, torch.export", MlpKws((20, 8), cell="gru"), "export32"),
    ],
)
def test_user_models_build_and_agree_with_themselves(
    name: str, module: nn.Module, save: str, data: Path, tmp_path: Path
) -> None:
    scaled(module, 1)
    H = [m for m in module.modules() if isinstance(m, nn.Linear | nn.RNNBase)][-1]
    H = H.in_features if isinstance(H, nn.Linear) else H.hidden_size  # the latent's size
    if save == "trace":
        path = tmp_path / "model.ts"
        torch.jit.save(torch.jit.trace(module, torch.zeros(4, T, F)), path)
        u = build_user(path, H, data, tmp_path)
    elif save == "module":
        path = tmp_path / "model.pt"
        torch.save(module, path)
        with pytest.raises(CodegenError, match="--trust-pickle"):
            build_user(path, H, data, tmp_path)
        u = build_user(path, H, data, tmp_path, trust_pickle=True)
    else:
        # a program exported with a static batch runs in chunks of it, each op through
        # torch.fx's interpreter: batch 2 (the layouts) is the many-chunks case, 32 the few
        inner = module.module if isinstance(module, nn.DataParallel) else module
        t_first = not getattr(inner, "batch_first", True)
        n = 32 if save == "export32" else 2
        example = torch.zeros((T, n, F) if t_first else (n, T, F))
        path = tmp_path / "model.pt2"
        torch.export.save(torch.export.export(inner, (example,)), path)
        u = build_user(path, H, data, tmp_path)
    assert u["checked"], name
    assert u["float_twin_max_abs_logit_error"] < 1e-4, name
    assert u["integer_same_class"] >= 0.99, (name, u)
    assert any("feature settings (--features)" in a for a in u["provenance"])


def test_state_dict_with_dataparallel_prefix_is_read_and_its_pooling_declared(
    data: Path, tmp_path: Path
) -> None:
    m = scaled(Kws(H=16), 2)
    state = {
        "module." + k.replace("rnn.", "lstm.").replace("classifier.", "head."): v
        for k, v in m.state_dict().items()
    }
    path = tmp_path / "weights.pt"
    torch.save(state, path)
    with pytest.raises(CodegenError, match=r"weights only.*--pooling last\|mean\|max"):
        build_user(path, 16, data, tmp_path)
    u = build_user(path, 16, data, tmp_path, declared=replace(FEATURES, pooling="last"))
    assert not u["checked"]
    assert any("pooling: last" in a for a in u["provenance"])


@pytest.mark.parametrize("pool", ["mean", "max"])
def test_pooled_models_compile_to_their_pooling(pool: str, data: Path, tmp_path: Path) -> None:
    """Once a silent wrong answer (the head of h_T compiled for a mean-pooled model): the build
    tells the pooling by running the model and lowers it."""
    path = tmp_path / f"{pool}.pt"
    torch.save(scaled(Kws(pool=pool), 3), path)
    u = build_user(path, 24, data, tmp_path, trust_pickle=True)
    assert u["float_twin_max_abs_logit_error"] < 1e-4
    assert u["integer_same_class"] >= 0.99, u
    prog = (tmp_path / "b" / "program.json").read_text()
    assert f'"pool": "{pool}"' in prog


def test_unsupported_pooling_is_refused_naming_the_pooling(data: Path, tmp_path: Path) -> None:
    path = tmp_path / "first.pt"
    torch.save(scaled(Kws(pool="first"), 3), path)
    with pytest.raises(CodegenError, match=r"every supported pooling.*first part that differs"):
        build_user(path, 24, data, tmp_path, trust_pickle=True)


@pytest.mark.parametrize(
    ("module", "match"),
    [
        (RnnKws(), r"encoder 'rnn' is nn.RNN; supported: an nn.LSTM or nn.GRU with 1 or 2"),
        (MlpKws(act="tanh"), r"hidden.1; between the head's nn.Linear layers only nn.ReLU"),
        (nn.Sequential(nn.LSTM(F, 8, num_layers=3, batch_first=True)), "num_layers=3"),
    ],
)
def test_modules_outside_the_family_are_refused_by_part(
    module: nn.Module, match: str, data: Path, tmp_path: Path
) -> None:
    path = tmp_path / "m.pt"
    torch.save(module, path)
    with pytest.raises(CodegenError, match=match):
        build_user(path, 16, data, tmp_path, trust_pickle=True)


def test_limits_are_checked_before_calibration(data: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.pt"
    torch.save(scaled(Kws(H=300), 4), big)
    with pytest.raises(CodegenError, match="hidden_size 300.*1..255"):
        build_user(big, 300, data, tmp_path, trust_pickle=True)
    small = tmp_path / "small.pt"
    torch.save(scaled(Kws(H=2), 4), small)
    cfg = tmp_path / "k3.toml"
    cfg.write_text("[elatta]\nk = 3\n")
    with pytest.raises(CodegenError, match=r"k = 3 exceeds the model's hidden size 2.*k <= 2"):
        build(small, basis_for(small, 2, tmp_path), cfg, tmp_path / "o", data_dir=data,
              compile_elf=False, trust_pickle=True, declared=FEATURES)  # fmt: skip
    cfg.write_text("[target]\nmax_payload = 512\n")
    with pytest.raises(
        CodegenError, match=r"49 x 10 int16 features = 989 bytes.*max_payload to >= 989"
    ):
        build_user(small, 2, data, tmp_path, cfg, trust_pickle=True)


def test_output_directory_is_checked_first_and_stale_sources_go(data: Path, tmp_path: Path) -> None:
    path = tmp_path / "m.pt"
    torch.save(scaled(Kws(H=8), 5), path)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CodegenError, match="is a file, not a directory"):
        build(path, basis_for(path, 8, tmp_path), CONFIG, blocker / "out", data_dir=data,
              compile_elf=False, trust_pickle=True, declared=FEATURES)  # fmt: skip
    out = tmp_path / "b"
    (out / "src").mkdir(parents=True)
    stale = out / "src" / "old_model.c"
    stale.write_text("int old;\n")
    build_user(path, 8, data, tmp_path, trust_pickle=True)
    assert not stale.exists()
    assert (out / "src" / "kws_model.c").is_file()


def test_python_api_compiles_an_in_memory_module(data: Path, tmp_path: Path) -> None:
    import codegen

    m = scaled(Kws(H=12, batch_first=False), 6)
    with pytest.raises(CodegenError, match=r"no feature settings: pass features="):
        codegen.compile(m, torch.zeros(T, 2, F), 2, CONFIG, tmp_path / "api", data=data,
                        compile_elf=False)  # fmt: skip
    res = codegen.compile(m, torch.zeros(T, 2, F), 2, CONFIG, tmp_path / "api", data=data,
                          compile_elf=False, features={"n_mfcc": F, "frames": T})  # fmt: skip
    u = res.manifest["float_vs_fixed"]["user_model"]  # type: ignore[attr-defined]
    assert u["kind"] == "nn.Module (Python API)" and u["checked"]
    assert u["integer_same_class"] >= 0.99
    assert (tmp_path / "api" / "basis.npz").is_file() and (
        tmp_path / "api" / "program.json"
    ).is_file()
    with pytest.raises(CodegenError, match="fails on example_input"):
        codegen.compile(m, torch.zeros(2, 3), 2, CONFIG, tmp_path / "x", data=data,
                        features={"n_mfcc": F})  # fmt: skip


@pytest.mark.qemu
@pytest.mark.parametrize(
    ("cell", "pool", "layers"),
    [
        # `make test`: one of each encoder the firmware runs (LSTM of 1 and 2 layers, GRU, an
        # MLP head) and each pooling kernel (last, mean, max); the rest repeat a firmware path
        # with another file format or pooling (`make test-all`)
        pytest.param("lstm", "last", 1, marks=pytest.mark.slow),
        pytest.param("lstm", "mean", 1, marks=pytest.mark.slow),
        ("lstm", "max", 1),
        ("lstm", "mean", 2),
        pytest.param("gru", "last", 1, marks=pytest.mark.slow),
        ("gru", "max", 2),
        ("mlp", "last", 1),
        pytest.param("gru-export", "mean", 1, marks=pytest.mark.slow),
        pytest.param("lstm-state-dict", "last", 1, marks=pytest.mark.slow),
    ],
)
def test_imported_model_streams_bit_exactly(
    cell: str, pool: str, layers: int, data: Path, tmp_path: Path
) -> None:
    """User models (LSTM or GRU, 1 or 2 layers, time-major, bias-free, their own layer names,
    last/mean/max pooling, an MLP head) saved whole or as a torch.export program: built to an
    ELF, 60 strict + 60 cmvn samples through QEMU equal the integer reference in every field
    (z included: the latent)."""
    from elatta_host.plan import make_plan
    from elatta_host.run import DeviceSpec, execute

    path = tmp_path / "user.pt"
    if cell == "mlp":
        module: nn.Module = MlpKws((20, 8))
    elif cell.startswith("gru"):
        module = GruKws(layers, pool, batch_first=False)
    else:
        module = Kws(H=20, batch_first=False, bias=False, pool=pool, layers=layers)
    # random weights can leave a clip's two best logits within one LSB (a flip the integer
    # model may not follow); these seeds keep the 92 calibration clips of the tiny set clear
    scaled(module, 8 if cell == "gru-export" else 7)
    if cell == "gru-export":
        path = tmp_path / "user.pt2"
        torch.export.save(torch.export.export(module, (torch.zeros(T, 3, F),)), path)
    elif cell == "lstm-state-dict":  # weights only, under DataParallel's prefix
        torch.save({"module." + k: v for k, v in module.state_dict().items()}, path)
    else:
        torch.save(module, path)
    # the basis as `codegen basis` computes it from the user's file (its latents)
    from codegen.frontend.basis import basis_from_model, save_basis

    basis = tmp_path / "basis.npz"
    said = replace(FEATURES, pooling="last" if cell == "lstm-state-dict" else None)
    save_basis(basis, basis_from_model(path, data, 30, 2, 0, trust_pickle=True, declared=said))
    res = build(path, basis, CONFIG, tmp_path / "b", data_dir=data, trust_pickle=True,
                declared=said)  # fmt: skip
    user = res.manifest["float_vs_fixed"]["user_model"]
    if cell == "lstm-state-dict":  # no forward pass in the file: the pooling is declared
        assert not user["checked"]
    else:  # on the calibration clips and on clean test clips calibration never saw
        assert user["integer_same_class"] >= 0.99
        assert user["integer_same_class_clean_test"] >= 0.99, user
    plan = make_plan(tmp_path / "b", data, ("strict", "cmvn"), 60)
    spec = DeviceSpec("qemu0", elf=tmp_path / "b" / "fw.elf", icount=False, timeout=2.0)
    out = execute(plan, [spec], tmp_path / "run", resume=False, target={"kind": "qemu"},
                  progress=False)  # fmt: skip
    assert out.errors == ()
    assert out.report["bit_exact"]["compared"] == 120
    assert out.report["bit_exact"]["mismatches"] == 0
    # the audio mode: the per-step encoder of this family (the GRU has none: said, not built)
    streaming = res.manifest["streaming"]
    if cell.startswith("gru"):
        assert not streaming["audio_mode"] and "GRU" in streaming["unavailable"]
        return
    assert streaming["audio_mode"]
    plan = make_plan(tmp_path / "b", data, ("continual",), 10, input_kind="pcm")
    out = execute(plan, [spec], tmp_path / "pcm", resume=False, target={"kind": "qemu"},
                  progress=False, chunk=511)  # fmt: skip
    assert out.errors == ()
    assert out.report["bit_exact"]["compared"] == plan.total >= 10
    assert out.report["bit_exact"]["mismatches"] == 0
