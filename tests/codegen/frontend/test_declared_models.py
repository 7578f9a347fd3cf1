"""Never compile a different model than the user's (docs/model.md, "Bring your own model"):
held-out user models, defined here and saved the ways users save them, either build a firmware
model whose classes agree with the user's own forward pass on features computed with the
user's settings (>= 99 %), or are refused with the cause and the fix named. What a file cannot
show (pooling, head activation, feature settings) is declared, never assumed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
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
from codegen.frontend.basis import Basis, basis_from_model, compute_basis, save_basis
from codegen.frontend.cliargs import Declared, features_from_text
from codegen.pipeline.build import BuildResult, build, integer_agreement

CONFIG = ROOT / "configs" / "default.toml"
C = 12
F10 = Declared(features=MfccParams(n_mfcc=10), origin=(("features", "--features"),))


class PooledTagger(nn.Module):
    """LSTM under the user's own name, pooled over time, one Linear."""

    def __init__(self, pool: str, F: int = 10, H: int = 20) -> None:
        super().__init__()
        self.encoder = nn.LSTM(F, H, batch_first=True)
        self.out = nn.Linear(H, C)
        self.pool = pool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq, (h, _) = self.encoder(x)
        z = {"last": h[-1], "mean": seq.mean(1), "max": seq.amax(1)}[self.pool]
        return self.out(z)


class WideHead(nn.Module):
    """Head of two Linear layers of equal width (32 -> 32 -> 12) in an nn.Sequential."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(10, 32, batch_first=True)
        self.classifier = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, C))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.lstm(x)[1][0][-1])


class Odd(nn.Module):
    """A recurrent layer and a head the compiler does not lower (one variant at a time)."""

    def __init__(self, variant: str) -> None:
        super().__init__()
        H = 16
        if variant == "rnn":
            self.rec: nn.Module = nn.RNN(10, H, batch_first=True)
        elif variant == "bidirectional":
            self.rec = nn.LSTM(10, H, batch_first=True, bidirectional=True)
        elif variant == "proj":
            self.rec = nn.LSTM(10, H, batch_first=True, proj_size=8)
        else:
            self.rec = nn.GRU(10, H, batch_first=True)
        width = {"bidirectional": 2 * H, "proj": 8}.get(variant, H)
        mid: list[nn.Module] = [nn.Linear(width, width)]
        if variant == "layernorm":
            mid.append(nn.LayerNorm(width))
        mid.append(nn.Tanh() if variant == "tanh" else nn.ReLU())
        self.mlp = nn.Sequential(*mid, nn.Linear(width, C))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq, _ = self.rec(x)
        return self.mlp(seq[:, -1])


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from codegen.data import build as build_data

    out = tmp_path_factory.mktemp("declared")
    build_data(out, preset="tiny", tier="numpy", progress=False, jobs=1)
    return out


def seeded(m: nn.Module, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    for p in m.parameters():
        nn.init.uniform_(p, -0.6, 0.6)
    return m.eval()


def basis_for(path: Path, D: int, tmp: Path) -> Path:
    z = np.tanh(np.random.default_rng(0).standard_normal((30, D)))
    V, s, mean, ev = compute_basis(z, 2)
    out = tmp / f"{path.stem}.basis.npz"
    save_basis(out, Basis(V, s, mean, 30, 2, 0, file_sha256(path), ev))
    return out


def build_it(
    path: Path, D: int, data: Path, tmp: Path, said: Declared, config: Path = CONFIG, **kw: bool
) -> BuildResult:
    return build(path, basis_for(path, D, tmp), config, tmp / "b", data_dir=data,
                 compile_elf=False, declared=said, **kw)  # fmt: skip


def agreement_with(module: nn.Module, res: BuildResult, data: Path) -> float:
    """The integer model's class against the user's module's own forward pass, on the clean
    test clips' features computed with the settings the build recorded."""
    from codegen.data import load_split
    from codegen.ir.meta import features_for

    test = load_split(str(data), "test")
    feats = features_for(test.pcm, res.qmodel.source.meta)
    with torch.no_grad():
        logits = module(torch.from_numpy(np.asarray(feats, dtype=np.float32))).double().numpy()
    same = integer_agreement(res.qmodel, logits, feats)["integer_same_class"]
    assert same is not None
    return float(same)


def export(module: nn.Module, path: Path, T: int = 49, F: int = 10) -> Path:
    """A torch.export program of static batch 32: the build runs it in chunks of its batch
    (`codegen.frontend.importer._chunked`), each op through torch.fx's interpreter, so a small
    batch costs seconds per pass over the clips; batch 2 is built in
    tests/codegen/frontend/test_import.py."""
    torch.export.save(torch.export.export(module, (torch.zeros(32, T, F),)), path)
    return path


@pytest.mark.parametrize("pool", ["mean", "max"])
def test_state_dict_pooling_must_be_declared_and_is_then_compiled(
    pool: str, data: Path, tmp_path: Path
) -> None:
    user = seeded(PooledTagger(pool), 11)
    path = tmp_path / "weights.pt"
    torch.save(user.state_dict(), path)
    with pytest.raises(CodegenError, match=r"weights only.*pass --pooling last\|mean\|max"):
        build_it(path, 20, data, tmp_path, F10)
    res = build_it(path, 20, data, tmp_path, replace(F10, pooling=pool))
    assert res.qmodel.source.meta.pool == pool
    assert agreement_with(user, res, data) >= 0.99
    assert "assumed" not in res.text
    assert f"pooling: {pool}" in res.text


def test_feature_settings_are_declared_and_used(data: Path, tmp_path: Path) -> None:
    """A model trained on 40 MFCC, 25 ms windows, 10 ms hops (98 frames), saved as .pt2."""
    user = seeded(PooledTagger("last", F=40, H=16), 12)
    path = export(user, tmp_path / "m40.pt2", T=98, F=40)
    with pytest.raises(CodegenError, match=r"no feature settings.*pass --features"):
        build_it(path, 16, data, tmp_path, Declared())
    wrong, _ = features_from_text("n_mfcc=40")
    with pytest.raises(CodegenError, match=r"exported for 98 frames but --features gives 49"):
        build_it(path, 16, data, tmp_path, replace(F10, features=wrong))
    with pytest.raises(CodegenError, match=r"frames = 98 but .* give 49 frames"):
        features_from_text("n_mfcc=40,frames=98")
    right, _ = features_from_text("n_mfcc=40,win_ms=25,hop_ms=10,frames=98")
    big = tmp_path / "big.toml"  # one INFER of 98 x 40 features
    big.write_text("[target]\nmax_payload = 8192\n")
    res = build_it(path, 16, data, tmp_path, replace(F10, features=right), big)
    meta = res.qmodel.source.meta
    assert meta.num_frames == 98 and MfccParams.from_dict(meta.features) == right
    u = res.manifest["float_vs_fixed"]["user_model"]
    assert u["integer_same_class"] >= 0.99 and u["integer_same_class_clean_test"] >= 0.99
    assert agreement_with(user, res, data) >= 0.99
    assert "window 25 ms, hop 10 ms, 98 frames" in res.text


def test_equal_width_head_builds_from_pt2_and_state_dict(data: Path, tmp_path: Path) -> None:
    user = seeded(WideHead(), 13)
    res = build_it(export(user, tmp_path / "wide.pt2"), 32, data, tmp_path, F10)
    assert agreement_with(user, res, data) >= 0.99
    path = tmp_path / "wide.pt"
    torch.save(user.state_dict(), path)  # classifier.0, classifier.2: nn.Sequential names
    said = replace(F10, pooling="last")
    with pytest.raises(CodegenError, match=r"between its head's Linear layers.*--head-activation"):
        build_it(path, 32, data, tmp_path, said)
    res = build_it(path, 32, data, tmp_path, replace(said, head_activation="relu"))
    assert agreement_with(user, res, data) >= 0.99


@pytest.mark.parametrize(
    ("variant", "match"),
    [
        ("rnn", r"encoder 'rec' is an nn.RNN"),
        ("bidirectional", r"encoder 'rec' is an nn.LSTM with bidirectional=True"),
        ("proj", r"encoder 'rec' is an nn.LSTM with proj_size=8"),
    ],
)
@pytest.mark.parametrize("form", ["pt2", "state_dict"])
def test_unsupported_encoders_are_named(
    variant: str, match: str, form: str, data: Path, tmp_path: Path
) -> None:
    user = seeded(Odd(variant), 14)
    if form == "pt2":
        path = export(user, tmp_path / "odd.pt2")
    else:
        path = tmp_path / "odd.pt"
        torch.save(user.state_dict(), path)
    with pytest.raises(CodegenError, match=match) as err:
        build_it(path, 16, data, tmp_path, replace(F10, pooling="last", head_activation="relu"))
    assert "neither" not in str(err.value) and "4H) nor" not in str(err.value)


@pytest.mark.parametrize(
    ("variant", "form", "match"),
    [
        ("layernorm", "pt2", r"mlp.1 \(nn.LayerNorm\).*only nn.ReLU"),
        ("tanh", "pt2", r"mlp.1 \(nn.Tanh\).*only nn.ReLU"),
        ("layernorm", "state_dict", r"mlp.1: a normalisation layer \(nn.LayerNorm"),
    ],
)
def test_unsupported_heads_are_named_at_basis_as_at_build(
    variant: str, form: str, match: str, data: Path, tmp_path: Path
) -> None:
    user = seeded(Odd(variant), 15)
    if form == "pt2":
        path = export(user, tmp_path / "head.pt2")
    else:
        path = tmp_path / "head.pt"
        torch.save(user.state_dict(), path)
    said = replace(F10, pooling="last", head_activation="relu")
    with pytest.raises(CodegenError, match=match):
        basis_from_model(path, data, 30, 2, 0, declared=said)
    with pytest.raises(CodegenError, match=match):
        build_it(path, 16, data, tmp_path, said)


MAIN_SCRIPT = """
import sys
import torch
from torch import nn


class ScriptKws(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(10, 12, batch_first=True)
        self.fc = nn.Linear(12, 12)

    def forward(self, x):
        return self.fc(self.gru(x)[1][-1])


if __name__ == "__main__":
    torch.manual_seed(16)
    m = ScriptKws()
    for p in m.parameters():
        nn.init.uniform_(p, -0.6, 0.6)
    torch.save(m.eval(), sys.argv[1])
"""


def test_module_whose_class_lived_in_main_is_named_with_the_way_out(
    data: Path, tmp_path: Path
) -> None:
    script = tmp_path / "train_kws.py"
    script.write_text(textwrap.dedent(MAIN_SCRIPT))
    path = tmp_path / "whole.pt"
    subprocess.run([sys.executable, str(script), str(path)], check=True, cwd=tmp_path)
    with pytest.raises(CodegenError, match=r"pickled __main__.ScriptKws.*--trust-pickle"):
        build_it(path, 12, data, tmp_path, F10)
    with pytest.raises(
        CodegenError, match=r"class ScriptKws lived in the saving script's __main__.*--model-code"
    ):
        build_it(path, 12, data, tmp_path, F10, trust_pickle=True)
    res = build_it(path, 12, data, tmp_path, replace(F10, model_code=str(script)),
                   trust_pickle=True)  # fmt: skip
    u = res.manifest["float_vs_fixed"]["user_model"]
    assert u["checked"] and u["integer_same_class_clean_test"] >= 0.99


@pytest.mark.parametrize("what", ["empty", "truncated", "text", "numpy"])
def test_unreadable_files_are_called_so(what: str, data: Path, tmp_path: Path) -> None:
    good = tmp_path / "good.pt"
    torch.save(seeded(PooledTagger("last"), 17).state_dict(), good)
    raw = good.read_bytes()
    path = tmp_path / "bad.pt"
    if what == "numpy":
        np.save(tmp_path / "bad.npy", np.zeros(3))
        path = tmp_path / "bad.npy"
    else:
        content = {"empty": b"", "truncated": raw[: len(raw) // 2], "text": b"x = 1\n"}
        path.write_bytes(content[what])
    with pytest.raises(CodegenError, match="truncated or not a PyTorch file") as err:
        build_it(path, 20, data, tmp_path, replace(F10, pooling="last"))
    assert "--trust-pickle" not in str(err.value)


def test_build_refuses_data_of_other_classes(data: Path, tmp_path: Path) -> None:
    from codegen.data import load_split
    from codegen.frontend.model import KwsLstm, save_checkpoint
    from codegen.ir.meta import ModelMeta

    digits = tuple(str(i) for i in range(10))
    meta = ModelMeta(10, 8, 10, 49, digits, MfccParams().to_dict(), (0.0,) * 10, (1.0,) * 10, 0)
    path = tmp_path / "digits.pt"
    save_checkpoint(path, seeded(KwsLstm(10, 8, 10), 18), meta)  # type: ignore[arg-type]
    assert len(load_split(str(data), "train"))
    with pytest.raises(CodegenError, match=r"--data .* has classes .* predicts \['0', '1'"):
        build_it(path, 8, data, tmp_path, Declared())


def test_sigma0_of_another_model_is_warned(data: Path, tmp_path: Path) -> None:
    user = seeded(PooledTagger("mean"), 19)
    path = export(user, tmp_path / "m.pt2")
    cfg = tmp_path / "tuned.toml"
    cfg.write_text(f'[elatta]\nsigma0 = 0.05\nmodel_sha256 = "{"0" * 64}"\n')
    res = build(path, basis_for(path, 20, tmp_path), cfg, tmp_path / "b", data_dir=data,
                compile_elf=False, declared=F10)  # fmt: skip
    assert any("were chosen for model sha256 000000000000" in w for w in
               res.manifest["float_vs_fixed"]["warnings"])  # fmt: skip
    assert "warning: " in res.text
    cfg.write_text(f'[elatta]\nsigma0 = 0.05\nmodel_sha256 = "{file_sha256(path)}"\n')
    res = build(path, basis_for(path, 20, tmp_path), cfg, tmp_path / "b", data_dir=data,
                compile_elf=False, declared=F10)  # fmt: skip
    assert not any("chosen for" in w for w in res.manifest["float_vs_fixed"].get("warnings", []))


def test_run_checks_the_input_kind_before_streaming(data: Path, tmp_path: Path) -> None:
    from elatta_host.plan import RunError, make_plan

    lstm = export(seeded(PooledTagger("last"), 20), tmp_path / "l.pt2")
    audio = tmp_path / "audio.toml"
    audio.write_text('[target]\ninput = "pcm"\n')
    build_it(lstm, 20, data, tmp_path, F10, audio)
    with pytest.raises(RunError, match=r"--input features: .* audio mode only.*use --input pcm"):
        make_plan(tmp_path / "b", data, ("strict",), 4, input_kind="features")
    gru = export(seeded(Odd("relu"), 21), tmp_path / "g.pt2")
    build_it(gru, 16, data, tmp_path, F10)
    with pytest.raises(RunError, match=r"--input pcm: .*GRU.*\); use --input features$"):
        make_plan(tmp_path / "b", data, ("strict",), 4, input_kind="pcm")
