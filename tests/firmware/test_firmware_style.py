"""The hand-written C stays readable and keeps its kernel variants apart (docs/architecture.md §5):

- no function body longer than MAX_BODY_LINES lines, in firmware/ and in the hand-written text of
  the templates that produce C;
- no NEON switch (ELT_NEON, ELT_SCALAR, __ARM_NEON) tested by a preprocessor conditional inside a
  function body in firmware/: what differs between NEON and plain C lives in
  firmware/kernels/neon_a32 and firmware/kernels/ref, chosen by the build
  (codegen/target/sources.py);
- both variant folders hold the same files with the same functions.

tests/cscan.py reads the sources (comments, strings and Jinja tags blanked, both branches of every
conditional); the synthetic sources below show that each rule fails when broken."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cscan import Directive, Function, ScanError, scan
from repopaths import ROOT

from codegen.target import sources

FIRMWARE = ROOT / "firmware"
TEMPLATES = ROOT / "templates"
MAX_BODY_LINES = 80
# The macros that switch between NEON and plain C (firmware/elt_neon.h).
NEON_SWITCHES = ("ELT_NEON", "ELT_SCALAR", "__ARM_NEON", "__ARM_NEON__")
# Every hand-written file is checked; none is exempt.
EXCEPTIONS: frozenset[str] = frozenset()
_COND = re.compile(r"#\s*(if|ifdef|ifndef|elif)\b")


def neon_conditionals_in_bodies(
    funcs: list[Function], directives: list[Directive]
) -> list[tuple[str, int, str]]:
    """(function, line, directive) of every conditional on a NEON switch inside a body."""
    out = []
    for d in directives:
        if not _COND.match(d.text) or not any(
            re.search(rf"\b{re.escape(m)}\b", d.text) for m in NEON_SWITCHES
        ):
            continue
        for f in funcs:
            if f.open_line < d.line < f.close_line:
                out.append((f.name, d.line, d.text))
    return out


def problems(text: str, *, jinja: bool = False, what: str = "source") -> list[str]:
    """Every broken rule of one source, one line each."""
    funcs, directives = scan(text, jinja=jinja, what=what)
    out = [
        f"{what}:{f.open_line}: {f.name}: body of {f.body_lines} lines (> {MAX_BODY_LINES})"
        for f in funcs
        if f.body_lines > MAX_BODY_LINES
    ]
    if not jinja:
        out += [
            f"{what}:{line}: {name}: {text} inside a function body"
            for name, line, text in neon_conditionals_in_bodies(funcs, directives)
        ]
    return out


def c_sources() -> list[Path]:
    return sorted(p for p in FIRMWARE.rglob("*") if p.suffix in (".c", ".h"))


def test_firmware_functions_are_short_and_free_of_neon_switches() -> None:
    found = []
    for path in c_sources():
        rel = path.relative_to(FIRMWARE).as_posix()
        if rel in EXCEPTIONS:
            continue
        found += problems(path.read_text(), what=f"firmware/{rel}")
    assert not found, "\n".join(found)


def test_template_functions_are_short() -> None:
    found = []
    for path in sorted(TEMPLATES.glob("*.[ch].j2")):
        found += problems(path.read_text(), jinja=True, what=f"templates/{path.name}")
    assert not found, "\n".join(found)


def test_exceptions_are_files_of_the_firmware() -> None:
    """The exception set names files that exist (a renamed file does not slip through)."""
    assert all((FIRMWARE / rel).is_file() for rel in EXCEPTIONS), sorted(
        rel for rel in EXCEPTIONS if not (FIRMWARE / rel).is_file()
    )


def test_variant_folders_hold_the_same_operations() -> None:
    """Every operations header exists in both variants with the same functions; the NEON
    folder's own helpers (elt_neon_a32.h) are the only extra file. The variants are the ones
    the build knows."""
    assert set(sources.VARIANTS) == {
        p.name for p in (FIRMWARE / sources.KERNELS_DIR).iterdir() if p.is_dir()
    }
    ref = FIRMWARE / sources.REF.folder
    neon = FIRMWARE / sources.NEON_A32.folder
    ref_files = {p.name for p in ref.iterdir()}
    assert {p.name for p in neon.iterdir()} == ref_files | {"elt_neon_a32.h"}
    for name in sorted(ref_files):
        ref_fns = {f.name for f in scan((ref / name).read_text(), what=name)[0]}
        neon_fns = {f.name for f in scan((neon / name).read_text(), what=name)[0]}
        assert ref_fns <= neon_fns, (name, sorted(ref_fns - neon_fns))
        # every kernel includes its operations header, and the header is the variant's
        kernel = including(name)
        assert f'#include "{name}"' in kernel.read_text(), kernel


def including(ops: str) -> Path:
    """The one source of the firmware that includes an operations header (a kernel, the frame
    codec, a UART driver): X_ops.h belongs to a file named X.c, and only one of the files of
    that name (each board folder has its own fw_uart.c) includes it."""
    name = ops.replace("_ops.h", ".c")
    found = [
        p
        for p in FIRMWARE.rglob(name)
        if sources.KERNELS_DIR not in p.parts and f'#include "{ops}"' in p.read_text()
    ]
    assert len(found) == 1, (ops, found)
    return found[0]


def test_kernels_do_not_test_the_neon_switch() -> None:
    """The kernels with variants, and the reference folder, never test ELT_NEON at all; only the
    NEON folder's guard does (it refuses a build without NEON)."""
    kernels = [including(p.name) for p in (FIRMWARE / "kernels/ref").iterdir()]
    for path in [*kernels, *(FIRMWARE / "kernels/ref").iterdir()]:
        _, directives = scan(path.read_text(), what=path.name)
        assert not [d for d in directives if re.search(r"\bELT_NEON\b", d.text)], path
    guard = [
        d.text
        for p in (FIRMWARE / "kernels/neon_a32").iterdir()
        for d in scan(p.read_text(), what=p.name)[1]
        if re.search(r"\bELT_NEON\b", d.text) and _COND.match(d.text)
    ]
    assert guard == ["#if !ELT_NEON"]


# --- the checks fail when a rule is broken (synthetic sources) -------------------------------


def long_source(statements: int) -> str:
    """A function of `statements` + 4 body lines, braces in a comment, a string and a character
    literal around it."""
    return "\n".join(
        [
            "/* a { in a comment } */",
            "static int f(int x)",
            "{",
            '    const char *s = "}{ \\" }";',
            *[f"    x += {i}; // {{" for i in range(statements)],
            "    return x + (s[0] == '}');",
            "}",
        ]
    )


def test_a_long_function_is_found(tmp_path: Path) -> None:
    src = tmp_path / "long.c"
    src.write_text(long_source(MAX_BODY_LINES - 3))
    assert problems(src.read_text(), what="long.c") == [
        f"long.c:3: f: body of {MAX_BODY_LINES + 1} lines (> {MAX_BODY_LINES})"
    ]
    src.write_text(long_source(MAX_BODY_LINES - 4))  # exactly the limit, both braces counted
    assert problems(src.read_text(), what="long.c") == []


def test_a_neon_switch_in_a_body_is_found(tmp_path: Path) -> None:
    body = [
        "#include <stdint.h>",
        "#if ELT_NEON /* at file level: allowed */",
        "static int g(int x) { return x; }",
        "#endif",
        "int f(int x)",
        "{",
        "    int y = 0;",
        "#if ELT_NEON",
        "    for (y = 0; y < x; y++) {",
        "#else",
        "    for (y = 1; y < x; y++) {",
        "#endif",
        "        x--;",
        "    }",
        "#ifndef ELT_SCALAR",
        "    y++;",
        "#endif",
        "#ifdef ELT_TRACE /* another switch: allowed */",
        "    y--;",
        "#endif",
        "    return x + y;",
        "}",
    ]
    src = tmp_path / "neon.c"
    src.write_text("\n".join(body))
    assert problems(src.read_text(), what="neon.c") == [
        "neon.c:8: f: #if ELT_NEON inside a function body",
        "neon.c:15: f: #ifndef ELT_SCALAR inside a function body",
    ]


def test_unbalanced_braces_are_an_error() -> None:
    with pytest.raises(ScanError):
        scan("int f(void)\n{\n#if ELT_NEON\n    {\n#endif\n}\n")


def test_a_long_template_function_is_found(tmp_path: Path) -> None:
    tpl = "\n".join(
        [
            "{# a Jinja comment { #}",
            "void {{ prefix }}run(const {{ t }} *p)",
            "{",
            "{% for x in xs %}",
            *[f"    p->a[{i}] = {{{{ x }}}};" for i in range(80)],
            "{% endfor %}",
            "}",
        ]
    )
    src = tmp_path / "t.c.j2"
    src.write_text(tpl)
    (found,) = problems(src.read_text(), jinja=True, what="t.c.j2")
    assert found.startswith("t.c.j2:3: J") and found.endswith("run: body of 84 lines (> 80)")
