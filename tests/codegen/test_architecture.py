"""The module graph stays one-way, checked by package (docs/architecture.md §8).

Four import roots, bottom to top (``TOP_ORDER``): the compiler ``codegen``, the serial bench
``elatta_host`` (folder host/), the measurement wing ``elatta_measure`` (folder measure/), and
the scripts of bench/ and tools/, which import anything and which nothing imports. A module
imports its own root and the roots below it; inside ``codegen`` every module lives in a role
package and imports only lower layers (``LAYERS``); the serial bench imports only the torch-free
packages that read and replay a build, and neither it nor the artefact loader needs torch.
Every ``import`` counts, including those inside functions, and so does a dynamic import: a
literal name (``importlib.import_module("x")``, ``__import__("x")``) is an edge like any other,
a computed one is declared in ``DYNAMIC``. The one way up is the CLI's dispatch table
(``codegen.cli.COMMANDS``): strings naming the subcommands' modules, checked on their own."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from repopaths import ROOT
from torchblock import TORCH_BLOCKER

# import root -> folder: the bench's import package is `elatta_host` (folder host/), the
# measurement wing's `elatta_measure` (folder measure/); bench/ and tools/ hold scripts, run by
# path (`python bench/NAME.py`), named here `bench.NAME` and `tools.NAME`
PACKAGES = {
    "codegen": ROOT / "codegen",
    "elatta_host": ROOT / "host",
    "elatta_measure": ROOT / "measure",
    "bench": ROOT / "bench",
    "tools": ROOT / "tools",
}
# The roots bottom to top: a module imports its own root and lower ones, never a higher one.
TOP_ORDER: dict[str, int] = {
    "codegen": 0,
    "elatta_host": 1,
    "elatta_measure": 2,
    "bench": 3,
    "tools": 3,
}
# roots of scripts: importers only, a script's directory is its sys.path[0] (a bare `import NAME`
# of a sibling lands in it), and no module of another root imports one
SCRIPTS = {"bench", "tools"}
# The role packages of codegen, bottom to top: a package may import its own modules and the
# packages of a lower layer, never one of its own layer or above. The pipeline runs upward:
# frontend -> quantize -> emit -> (target builds) -> artefact read back by the references. The
# input stages (stages/) sit below the IR, which names them, and each owns its every part.
LAYERS: dict[str, int] = {
    "base": 0,
    "data": 1,
    "elatta": 1,
    "target": 1,
    "stages": 2,
    "ir": 3,
    "artefact": 4,
    "intref": 5,
    "frontend": 6,
    "quantize": 7,
    "emit": 8,
    "pipeline": 9,
    "train": 9,
}
# codegen's own modules outside a role package: the package, its CLI entry and `python -m`. No
# role package imports them (the package's __init__ re-exports `compile`, above every role); the
# entries are imported by no module but `codegen.__main__`, which runs the CLI.
TOP_LEVEL = {"codegen", "codegen.cli", "codegen.__main__"}
ENTRIES = TOP_LEVEL - {"codegen"}
# what the serial bench may import: reading a build and replaying it, never making one (stages/:
# the input stages' references; their quantizers, arithmetic on settings, the bench never calls)
HOST_MAY_IMPORT = {"base", "data", "elatta", "stages", "ir", "intref", "artefact", "target"}
# the roots a CLI subcommand's module may live in (scripts are not installed)
CLI_ROOTS = {"codegen", "elatta_host", "elatta_measure"}
# Modules whose dynamic import takes a computed name or a file path, and the project modules
# each may load that way: the CLI's by its table (checked by its own test, not as edges), the
# importer's is the user's --model-code file (never a project module), cand_profile loads
# bench/profile.py by path (its name is also the standard library's profiler), generate loads
# the CRC-32 table writer by path (tools/ is scripts, not a package).
DYNAMIC: dict[str, set[str] | None] = {
    "codegen.cli": None,
    "codegen.frontend.importer": set(),
    "bench.cand_profile": {"bench.profile"},
    "tools.generate": {"tools.gen_crc32_tables"},
}
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


# calls that import a module named by their first argument, and calls that load a file by path
NAME_LOADERS = {"import_module", "__import__", "run_module"}
PATH_LOADERS = {"spec_from_file_location", "run_path", "SourceFileLoader"}


def _called(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _imported_names(mod: str, path: Path) -> tuple[list[str], bool]:
    """Every module name ``mod`` imports (statements and literal dynamic imports), and whether
    it also imports a computed name or loads a file by path."""
    is_pkg = path.name == "__init__.py"
    names: list[str] = []
    computed = False
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = mod if is_pkg else mod.rpartition(".")[0]
                for _ in range(node.level - 1):
                    pkg = pkg.rpartition(".")[0]
                base = f"{pkg}.{base}" if base else pkg
            names += [f"{base}.{a.name}" for a in node.names] or [base]
        elif isinstance(node, ast.Call) and _called(node) in NAME_LOADERS | PATH_LOADERS:
            arg = node.args[0] if node.args else None
            if (
                _called(node) in NAME_LOADERS
                and isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and not arg.value.startswith(".")
            ):
                names.append(arg.value)
            else:
                computed = True
    return names, computed


def _edges(mods: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        root = _root(mod)
        names, _ = _imported_names(mod, path)
        for n in names:
            target = _resolve(n, mods)
            if target is None and root in SCRIPTS:
                target = _resolve(f"{root}.{n}", mods)
            # A package's own submodules import the package's __init__ only through Python's
            # parent-first loading, not as a use: skip edges into an ancestor package, except a
            # root's __init__ (`from codegen import __version__` in a role package is a use).
            ancestor = mod.startswith(f"{target}.") and "." in (target or "")
            if target and target != mod and not ancestor:
                graph[mod].add(target)
        for loaded in DYNAMIC.get(mod) or ():
            graph[mod].add(loaded)
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
    """The role package of a codegen module (None for another root and the top level)."""
    parts = mod.split(".")
    return parts[1] if parts[0] == "codegen" and len(parts) > 1 else None


def _root(mod: str) -> str:
    return mod.split(".")[0]


def _root_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges into a higher root, into a script from another root, or into codegen's entry
    modules (only `python -m codegen` imports the CLI)."""
    bad = []
    for mod, targets in graph.items():
        src = _root(mod)
        for t in targets:
            dst = _root(t)
            up = TOP_ORDER[dst] > TOP_ORDER[src]
            script = dst in SCRIPTS and dst != src
            entry = t in ENTRIES and (mod, t) != ("codegen.__main__", "codegen.cli")
            if up or script or entry:
                bad.append((mod, t))
    return sorted(bad)


def _layer_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges from a role package of codegen to its own layer or above, or to the top level
    (the package's __init__ and the CLI sit above every role package)."""
    bad = []
    for mod, targets in graph.items():
        src = _package(mod)
        if src is None or src not in LAYERS:
            continue
        for t in targets:
            dst = _package(t)
            upward = dst is not None and dst != src and LAYERS.get(dst, 99) >= LAYERS[src]
            if t in TOP_LEVEL or upward:
                bad.append((mod, t))
    return sorted(bad)


def _host_violations(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Edges from the serial bench to a codegen package that makes a build or measures one."""
    return sorted(
        (m, t)
        for m, targets in graph.items()
        if _root(m) == "elatta_host"
        for t in targets
        if _root(t) == "codegen" and _package(t) not in HOST_MAY_IMPORT
    )


def _defines(path: Path) -> set[str]:
    """The names a module binds at its top level."""
    out: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def _dispatch_errors(commands: Iterable[tuple[str, str, str]], mods: dict[str, Path]) -> list[str]:
    """What is wrong with the CLI's table: every entry names a module of a role package of
    codegen, of elatta_host or of elatta_measure (never a script, the CLI itself or a missing
    module) that defines the subcommand interface `codegen.cli` calls."""
    errors = []
    for name, module, _ in commands:
        path = mods.get(module)
        if path is None:
            errors.append(f"{name}: {module} is no module of the project")
            continue
        if _root(module) not in CLI_ROOTS or module in TOP_LEVEL:
            errors.append(f"{name}: {module} is outside {sorted(CLI_ROOTS)} or is the CLI")
        missing = {"HELP", "add_arguments", "run"} - _defines(path)
        if missing:
            errors.append(f"{name}: {module} does not define {sorted(missing)}")
    return errors


def _computed_dynamic(mods: dict[str, Path]) -> set[str]:
    """Modules that import a computed name or load a file by path."""
    return {m for m, path in mods.items() if _imported_names(m, path)[1]}


def test_import_roots_are_found_under_their_own_names() -> None:
    import elatta_host.run
    import elatta_measure.bench

    assert Path(elatta_host.run.__file__).parent == ROOT / "host"
    assert Path(elatta_measure.bench.__file__).parent == ROOT / "measure"
    mods = _modules()
    assert set(TOP_ORDER) == set(PACKAGES)
    empty = [r for r in PACKAGES if not any(m.startswith(r + ".") for m in mods)]
    assert not empty, f"roots with no module: {empty}"


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


def test_roots_import_only_lower_roots() -> None:
    bad = _root_violations(_edges(_modules()))
    assert not bad, "imports up the roots, into a script or into the CLI: " + ", ".join(
        f"{m} -> {t}" for m, t in bad
    )


def test_packages_import_only_lower_layers() -> None:
    bad = _layer_violations(_edges(_modules()))
    assert not bad, "imports that point up or across the layers: " + ", ".join(
        f"{m} -> {t}" for m, t in bad
    )


def test_bench_imports_only_what_reads_a_build() -> None:
    bad = _host_violations(_edges(_modules()))
    assert not bad, f"host/ imports a compiler stage, a driver or an evaluator: {bad}"


def test_cli_dispatch_names_subcommand_modules() -> None:
    """The CLI is the one way up: its table names the subcommands' modules as strings, imported
    only when chosen, each a module of a root the CLI may dispatch to."""
    from codegen.cli import COMMANDS

    mods = _modules()
    assert not _dispatch_errors(COMMANDS, mods), _dispatch_errors(COMMANDS, mods)
    assert {_root(m) for _, m, _ in COMMANDS} == CLI_ROOTS


def test_dynamic_imports_are_declared() -> None:
    """A computed import name or a file loaded by path is declared in DYNAMIC with what it may
    load; a declaration whose module no longer does it fails too, so the table stays exact."""
    found = _computed_dynamic(_modules())
    assert found == set(DYNAMIC), (
        f"undeclared: {sorted(found - set(DYNAMIC))}, stale: {sorted(set(DYNAMIC) - found)}"
    )


def test_build_directory_readers_load_without_torch() -> None:
    """torch made unimportable (a meta-path finder refuses it), the artefact loader and the
    serial bench still import: reading and running a build needs no torch."""
    code = TORCH_BLOCKER + "".join(f"import {m}\n" for m in TORCH_FREE)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_rules_find_a_wrong_edge_added_to_the_real_graph() -> None:
    """Not vacuous: the real graph passes every rule, and each rule reports exactly the one
    wrong edge added to a copy of it."""
    real = _edges(_modules())
    cases = [
        (_layer_violations, "codegen.base.errors", "codegen.emit.c"),  # a role package upward
        (_layer_violations, "codegen.emit.c", "codegen"),  # a role package to codegen's __init__
        (_root_violations, "codegen.ir.nodes", "elatta_host.plan"),  # the compiler to the bench
        (_root_violations, "codegen.ir.nodes", "elatta_measure.evaluate"),
        (_root_violations, "elatta_host.plan", "elatta_measure.bench"),  # the bench to its user
        (_root_violations, "elatta_measure.bench", "bench.profile"),  # a library to a script
        (_root_violations, "elatta_measure.evaluate", "codegen.cli"),  # anything to the CLI
        (_host_violations, "elatta_host.plan", "codegen.quantize.model"),
    ]
    for rule, src, dst in cases:
        assert src in real and dst in real, (src, dst)
        assert rule(real) == [], rule.__name__
        graph = {m: set(t) for m, t in real.items()}
        graph[src].add(dst)
        assert rule(graph) == [(src, dst)], (rule.__name__, src, dst)
    graph = {m: set(t) for m, t in real.items()}
    graph["codegen.ir.nodes"].add("elatta_measure.evaluate")
    graph["elatta_measure.evaluate"].add("codegen.ir.nodes")
    (cycle,) = _cycles(graph)
    assert {"codegen.ir.nodes", "elatta_measure.evaluate"} <= set(cycle)


def test_edge_scanner_sees_what_the_rules_judge(tmp_path: Path) -> None:
    """A literal dynamic import is an edge the rules judge, and so is a use of the root's
    __init__ from a role package; a computed import is found for DYNAMIC; a bad CLI table is
    reported entry by entry."""
    literal = tmp_path / "literal.py"
    literal.write_text('import importlib\nimportlib.import_module("elatta_measure.bench")\n')
    computed = tmp_path / "computed.py"
    computed.write_text('name = "codegen.ir"\n__import__(name)\n')
    version = tmp_path / "version.py"
    version.write_text("from codegen import __version__\n")
    mods = _modules() | {
        "codegen.ir.literal": literal,
        "codegen.ir.computed": computed,
        "codegen.ir.version": version,
    }
    graph = _edges(mods)
    assert graph["codegen.ir.literal"] == {"elatta_measure.bench"}
    assert ("codegen.ir.literal", "elatta_measure.bench") in _root_violations(graph)
    assert graph["codegen.ir.version"] == {"codegen"}
    assert _layer_violations(graph) == [("codegen.ir.version", "codegen")]
    assert _computed_dynamic(mods) == set(DYNAMIC) | {"codegen.ir.computed"}
    bad = (
        ("a", "bench.profile", ""),  # a script
        ("b", "elatta_measure.missing", ""),  # no such module
        ("c", "codegen.base.errors", ""),  # no subcommand interface
        ("d", "codegen.cli", ""),  # the CLI itself
    )
    errors = _dispatch_errors(bad, _modules())
    assert {e.split(":")[0] for e in errors} == {"a", "b", "c", "d"}, errors


def test_cycle_detector_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_architecture_doc_lists_every_module_and_firmware_file() -> None:
    """docs/architecture.md §8 names every root at its order, every module of every role package
    (as `pkg/module.py`) and of the measurement wing (as `measure/module.py`), and §5 every
    firmware .c file: a module or a source added without its row fails here."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    folders = [ROOT / "codegen" / pkg for pkg in LAYERS] + [PACKAGES["elatta_measure"]]
    missing = [
        f"{p.parent.name}/{p.name}"
        for folder in folders
        for p in sorted(folder.glob("*.py"))
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
    for root, folder in PACKAGES.items():
        row = f"| {TOP_ORDER[root]} | `{root}` | `{folder.name}/` |"
        assert row in doc, f"§8 has no row for the root {root}: {row}"


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
