"""A small scanner of the hand-written C (firmware/, templates/) for
tests/firmware/test_firmware_style.py: the function definitions of a source with their body's
first and last line, and the preprocessor conditionals inside each body. Not a C parser:
comments, string and character literals and Jinja tags are blanked (newlines kept, so line
numbers hold), braces are matched, and every preprocessor conditional is read once per branch
choice (the first branch of every conditional, then the last), so both sides of `#if X ... {` /
`#else ... {` / `#endif` are seen balanced; a choice that leaves the braces unbalanced raises
ScanError."""

from __future__ import annotations

import re
from dataclasses import dataclass

# C keywords that take a parenthesised operand before a brace; never a function's name
_NOT_A_NAME = {"if", "for", "while", "switch", "return", "sizeof", "__attribute__", "_Pragma"}
_IDENT = re.compile(r"[A-Za-z_]\w*$")
_COND_OPEN = re.compile(r"#\s*(if|ifdef|ifndef)\b")
_COND_MID = re.compile(r"#\s*(elif|else)\b")
_COND_END = re.compile(r"#\s*endif\b")


class ScanError(ValueError):
    """The source's braces do not balance for one branch choice."""


@dataclass(frozen=True)
class Directive:
    line: int  # 1-based
    text: str  # the directive, continuation lines joined, comments blanked


@dataclass(frozen=True)
class Function:
    name: str
    open_line: int  # the line of the body's opening brace (1-based)
    close_line: int  # the line of its closing brace

    @property
    def body_lines(self) -> int:
        """Lines from the opening brace to the closing brace, both included."""
        return self.close_line - self.open_line + 1


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def strip_jinja(src: str) -> str:
    """Jinja comments and statements blanked; each expression `{{ … }}` becomes an identifier
    of the same length (a generated name or value stands there in the C)."""
    src = re.sub(r"\{#.*?#\}", lambda m: _blank(m.group(0)), src, flags=re.S)
    src = re.sub(r"\{%.*?%\}", lambda m: _blank(m.group(0)), src, flags=re.S)
    return re.sub(
        r"\{\{.*?\}\}", lambda m: "J" + _blank(m.group(0))[1:].replace(" ", "_"), src, flags=re.S
    )


def strip_comments_and_literals(src: str) -> str:
    """Comments, string and character literals blanked (a literal keeps its quotes)."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(_blank(src[i:j]))
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(_blank(src[i:j]))
        elif src[i] in "\"'":
            q = src[i]
            j = i + 1
            while j < n and src[j] != q and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j, n - 1)
            out.append(q + _blank(src[i + 1 : j]) + src[j])
            j += 1
        else:
            j = i + 1
            out.append(src[i])
        i = j
    return "".join(out)


def _logical_lines(clean: str) -> list[tuple[int, int, str]]:
    """(first line, last line, text) of every line, backslash continuations joined."""
    lines = clean.split("\n")
    out: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        start, text = i, lines[i]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i]
        out.append((start, i, text))
        i += 1
    return out


def directives(clean: str) -> list[Directive]:
    """Every preprocessor directive of a comment-free source."""
    return [
        Directive(a + 1, " ".join(text.split()))
        for a, _, text in _logical_lines(clean)
        if text.lstrip().startswith("#")
    ]


def _choose(clean: str, take_last: bool) -> str:
    """The source with every directive blanked and, of each conditional, only its first
    (take_last False) or its last branch kept: one reading by the preprocessor."""
    logical = _logical_lines(clean)
    # the number of branches of every conditional, in the order their #if appears
    branches: list[int] = []
    open_conds: list[int] = []
    for _, _, text in logical:
        t = text.lstrip()
        if _COND_OPEN.match(t):
            open_conds.append(len(branches))
            branches.append(1)
        elif _COND_MID.match(t) and open_conds:
            branches[open_conds[-1]] += 1
        elif _COND_END.match(t) and open_conds:
            open_conds.pop()
    lines = clean.split("\n")
    stack: list[tuple[bool, int, int]] = []  # (enclosing text kept, branches, this branch)
    keep = True
    seen = 0
    for a, b, text in logical:
        t = text.lstrip()
        if t.startswith("#"):
            if _COND_OPEN.match(t):
                stack.append((keep, branches[seen], 1))
                seen += 1
            elif _COND_MID.match(t) and stack:
                outer, total, nth = stack.pop()
                stack.append((outer, total, nth + 1))
            elif _COND_END.match(t) and stack:
                keep = stack.pop()[0]
            if stack and not _COND_END.match(t):
                outer, total, nth = stack[-1]
                keep = outer and nth == (total if take_last else 1)
        if t.startswith("#") or not keep:
            for k in range(a, b + 1):
                lines[k] = _blank(lines[k])
    return "\n".join(lines)


def _name_before(code: str, close: int) -> str | None:
    """The declared name of a definition whose parameter list ends at code[close] == ')':
    the identifier before the matching '(' (attributes after the list skipped)."""
    while True:
        depth = 0
        i = close
        while i >= 0:
            if code[i] == ")":
                depth += 1
            elif code[i] == "(":
                depth -= 1
                if depth == 0:
                    break
            i -= 1
        if i < 0:
            return None
        m = _IDENT.search(code[:i].rstrip())
        if m is None:
            return None
        name = m.group(0)
        if name == "__attribute__":
            j = len(code[: m.start()].rstrip()) - 1
            if j < 0 or code[j] != ")":
                return None
            close = j
            continue
        if name in _NOT_A_NAME:
            return None
        before = code[: m.start()].rstrip()
        if before.endswith("="):
            return None
        return name


def _functions_of(code: str, what: str) -> list[Function]:
    found: list[Function] = []
    depth = 0
    start: tuple[int, str | None] | None = None
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                j = len(code[:i].rstrip()) - 1
                name = _name_before(code, j) if j >= 0 and code[j] == ")" else None
                start = (i, name)
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise ScanError(f"{what}: unbalanced '}}' at line {code.count(chr(10), 0, i) + 1}")
            if depth == 0 and start is not None:
                pos, name = start
                if name is not None:
                    found.append(
                        Function(name, code.count("\n", 0, pos) + 1, code.count("\n", 0, i) + 1)
                    )
                start = None
    if depth != 0:
        raise ScanError(f"{what}: {depth} unclosed '{{'")
    return found


def scan(
    src: str, *, jinja: bool = False, what: str = "source"
) -> tuple[list[Function], list[Directive]]:
    """The function definitions of a C source (or of the hand-written text of a Jinja template)
    under both branch choices, each once, in line order, and its directives."""
    clean = strip_comments_and_literals(strip_jinja(src) if jinja else src)
    funcs: dict[tuple[str, int], Function] = {}
    for take_last in (False, True):
        for f in _functions_of(_choose(clean, take_last), what):
            funcs.setdefault((f.name, f.open_line), f)
    return sorted(funcs.values(), key=lambda f: f.open_line), directives(clean)
