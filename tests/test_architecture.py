"""The module graph stays one-way: no import cycles among the project's Python modules, and the
serial bench (``host/``) reads programs and runs references but never the compiler stages or
the evaluators. Every ``import`` counts, including those inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the bench's import package is `elatta_host` (folder host/); the compiler's is `codegen`
PACKAGES = {"codegen": ROOT / "codegen", "elatta_host": ROOT / "host"}
# the stages that make the program (they never run the integer reference)
QUANTIZE_AND_EMIT = (
    "codegen.frontend",
    "codegen.importer",
    "codegen.quantize",
    "codegen.quantize_gru",
    "codegen.quantize_adapt",
    "codegen.emit",
    "codegen.emit_adapt",
    "codegen.emit_f32",
    "codegen.manifest",
)
# everything the serial bench must not import: the stages, the build, training, evaluators
COMPILER_STAGES = (
    *QUANTIZE_AND_EMIT,
    "codegen.build",
    "codegen.firmware_build",
    "codegen.evaluate",
    "codegen.fixed_eval",
    "codegen.train",
    "codegen.basis",
    "codegen.bench",
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


def test_bench_package_is_found_under_its_own_name() -> None:
    import elatta_host.run

    assert Path(elatta_host.run.__file__).parent == ROOT / "host"
    assert any(m.startswith("elatta_host.") for m in _modules())


def test_no_import_cycles() -> None:
    cycles = _cycles(_edges(_modules()))
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_bench_does_not_import_compiler_stages() -> None:
    graph = _edges(_modules())
    bad = sorted(
        (m, t)
        for m, targets in graph.items()
        if m == "elatta_host" or m.startswith("elatta_host.")
        for t in targets
        if t in COMPILER_STAGES
    )
    assert not bad, f"host/ imports compiler stages or evaluators: {bad}"


def test_compiler_stages_do_not_run_the_reference() -> None:
    """The quantizer decides, the emitter formats, the reference replays: the stages that make
    the program never import the integer reference (it reads their output, not the reverse)."""
    graph = _edges(_modules())
    bad = sorted(
        (m, t)
        for m in (*QUANTIZE_AND_EMIT, "codegen.program", "codegen.ir")
        for t in graph[m]
        if t == "codegen.intref" or t.startswith("codegen.intref.")
    )
    assert not bad, f"compiler stages import the integer reference: {bad}"


def test_cycle_detector_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
