"""The module graph stays one-way, checked by package: every module of ``codegen`` lives in a role
package (docs/architecture.md §8), a package imports only packages below it in ``LAYERS``, the
serial bench (``host/``, imported as ``elatta_host``) imports only the torch-free packages that
read and replay a build, and neither it nor the artefact loader needs torch. Every ``import``
counts, including those inside functions."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from torchblock import TORCH_BLOCKER

ROOT = Path(__file__).resolve().parents[1]
# the bench's import package is `elatta_host` (folder host/); the compiler's is `codegen`
PACKAGES = {"codegen": ROOT / "codegen", "elatta_host": ROOT / "host"}
# The role packages of codegen, bottom to top: a package may import its own modules and the
# packages of a lower layer, never one of its own layer or above. The pipeline runs upward:
# frontend -> quantize -> emit -> (target builds) -> artefact read back by the references.
LAYERS: dict[str, int] = {
    "base": 0,
    "data": 1,
    "elatta": 1,
    "target": 1,
    "ir": 2,
    "artefact": 3,
    "intref": 4,
    "frontend": 5,
    "quantize": 6,
    "emit": 7,
    "pipeline": 8,
    "train": 8,
    "measure": 9,
}
# codegen's own modules outside a role package: the package, its CLI entry and `python -m`
TOP_LEVEL = {"codegen", "codegen.cli", "codegen.__main__"}
# what the serial bench may import: reading a build and replaying it, never making one
HOST_MAY_IMPORT = {"base", "data", "elatta", "ir", "intref", "artefact", "target"}
# packages that must load with torch unimportable (a build directory is read without torch)
TORCH_FREE = (
    "codegen.artefact.program",
    "codegen.artefact.inspect",
    "elatta_host.run",
    "elatta_host.plan",
    "elatta_host.cli_device",
    "codegen.intref.model",
)


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg, base in PACKAGES.items():
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("")
            parts = [pkg, *rel.parts]
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _resolve(name: str, mods: dict[str, Path]) -> str | None:
    """The project module an imported name lands in (``a.b.c`` may be a function of ``a.b``)."""
    while name:
        if name in mods:
            return name
        name = name.rpartition(".")[0]
    return None


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = mod if is_pkg else mod.rpartition(".")[0]
                    for _ in range(node.level - 1):
                        pkg = pkg.rpartition(".")[0]
                    base = f"{pkg}.{base}" if base else pkg
                names = [f"{base}.{a.name}" for a in node.names] or [base]
            for n in names:
                target = _resolve(n, mods)
                # a package's own submodules import the package's __init__ only through Python's
                # parent-first loading, not as a use: skip edges into an ancestor package
                if target and target != mod and not mod.startswith(target + "."):
                    graph[mod].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _package(mod: str) -> str | None:
    """The role package of a codegen module (None for elatta_host and the top level)."""
    parts = mod.split(".")
    return parts[1] if parts[0] == "codegen" and len(parts) > 1 else None


def test_bench_package_is_found_under_its_own_name() -> None:
    import elatta_host.run

    assert Path(elatta_host.run.__file__).parent == ROOT / "host"
    assert any(m.startswith("elatta_host.") for m in _modules())


def test_every_module_is_in_a_role_package() -> None:
    stray = sorted(
        m
        for m in _modules()
        if m.startswith("codegen") and m not in TOP_LEVEL and _package(m) not in LAYERS
    )
    assert not stray, f"modules outside a role package (LAYERS): {stray}"
    missing = sorted(p for p in LAYERS if not (ROOT / "codegen" / p / "__init__.py").is_file())
    assert not missing, f"LAYERS names packages that do not exist: {missing}"


def test_no_import_cycles() -> None:
    cycles = _cycles(_edges(_modules()))
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_packages_import_only_lower_layers() -> None:
    graph = _edges(_modules())
    bad = []
    for mod, targets in graph.items():
        src = _package(mod)
        if src is None or src not in LAYERS:
            continue
        for t in targets:
            dst = _package(t)
            if t in TOP_LEVEL and t != "codegen":
                bad.append((mod, t))
            elif dst is not None and dst != src and LAYERS.get(dst, 99) >= LAYERS[src]:
                bad.append((mod, t))
    assert not bad, "imports that point up or across the layers: " + ", ".join(
        f"{m} -> {t}" for m, t in sorted(bad)
    )


def test_bench_imports_only_what_reads_a_build() -> None:
    graph = _edges(_modules())
    bad = sorted(
        (m, t)
        for m, targets in graph.items()
        if m.split(".")[0] == "elatta_host"
        for t in targets
        if t.startswith("codegen") and _package(t) not in HOST_MAY_IMPORT and t != "codegen"
    )
    assert not bad, f"host/ imports a compiler stage, a driver or an evaluator: {bad}"


def test_build_directory_readers_load_without_torch() -> None:
    """torch made unimportable (a meta-path finder refuses it), the artefact loader and the
    serial bench still import: reading and running a build needs no torch."""
    code = TORCH_BLOCKER + "".join(f"import {m}\n" for m in TORCH_FREE)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_layer_rule_finds_an_upward_import(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    fake = {"codegen.base.x": {"codegen.emit.c"}, "codegen.emit.c": set()}
    monkeypatch.setattr(sys.modules[__name__], "_edges", lambda mods: fake)
    try:
        test_packages_import_only_lower_layers()
    except AssertionError as exc:
        assert "codegen.base.x -> codegen.emit.c" in str(exc)
    else:
        raise AssertionError("an upward import was not reported")


def test_cycle_detector_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_architecture_doc_lists_every_module_and_firmware_file() -> None:
    """docs/architecture.md §8 names every module of every role package (as `pkg/module.py`) and
    §5 every firmware .c file: a module or a source added without its row fails here."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    missing = [
        f"{p.parent.name}/{p.name}"
        for pkg in LAYERS
        for p in sorted((ROOT / "codegen" / pkg).glob("*.py"))
        if p.name != "__init__.py" and f"`{p.parent.name}/{p.name}`" not in doc
    ]
    fw = ROOT / "firmware"
    missing += [
        str(c.relative_to(fw))
        for c in sorted(fw.rglob("*.c"))
        if f"`{c.relative_to(fw)}`" not in doc
    ]
    assert not missing, f"docs/architecture.md does not list: {missing}"
    for pkg in LAYERS:
        assert f"| {LAYERS[pkg]} | `{pkg}` |" in doc, f"§8 has no row for {pkg} at its layer"


def test_test_files_share_helpers_through_helper_modules() -> None:
    """Tests share code through helper modules (tests/*kit.py, devmodel, faultproxy, ...), never
    by importing another test file or conftest."""
    bad = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for n in names:
                last = n.rpartition(".")[2]
                if last.startswith("test_") or last == "conftest":
                    bad.append(f"{path.relative_to(ROOT)} imports {n}")
    assert not bad, bad
