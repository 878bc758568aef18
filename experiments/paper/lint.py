"""The LaTeX linter of ``cbalab paper --check``: no number typed by hand, no number macro left undefined.

Every number the evaluation quotes must be a macro of numbers.tex (generated from the results), so a digit
typed in the evaluation of paper.tex is a finding (:func:`hand_typed_numbers`), and so is a macro of an
experiment whose results exist that numbers.tex does not define (:func:`undefined_macros`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

#: Commands whose arguments are references, labels, paths or lengths, not quoted numbers.
EXEMPT = (
    "ref",
    "eqref",
    "autoref",
    "pageref",
    "label",
    "cite",
    "input",
    "includegraphics",
    "vspace",
    "hspace",
    "url",
    "href",
    "modelsec",
    "setlength",
    "resizebox",
    "graphicspath",
)
_EXEMPT = re.compile(r"\\(?:" + "|".join(EXEMPT) + r")\*?(?:\s*\[[^\]]*\])*(?:\s*\{[^{}]*\})+")
_OPTIONAL = re.compile(r"(\\[A-Za-z]+\*?|\\\\)\s*\[[^\]]*\]")
_COMMENT = re.compile(r"(?<!\\)%.*")
_NUMBER = re.compile(r"(?<![A-Za-z0-9_])\d[\d.,]*")
#: Where the checked text starts and ends in paper.tex: the abstract, the introduction, and the evaluation
#: with the "what reproduces" section.
REGIONS = (
    ("\\begin{abstract}", "\\end{abstract}"),
    ("\\section{Introduction}", "\\section{"),
    ("\\section{Evaluation}", "\\appendix"),
)


def _region(tex: str, first: str, last: str) -> tuple[int, int] | None:
    """Where the text from the line starting ``first`` to the next line starting ``last`` is in ``tex``."""
    a = re.search("^" + re.escape(first), tex, flags=re.M)
    if a is None:
        return None
    b = re.compile("^" + re.escape(last), flags=re.M).search(tex, a.end())
    return (a.start(), b.start()) if b else None


def hand_typed_numbers(tex: str) -> list[str]:
    """The numbers typed by hand in the checked text of ``tex`` ("line N: text"), empty when there is none.

    The checked text is each region of :data:`REGIONS`: the abstract, the introduction (up to the next
    section) and the evaluation (from the line that starts ``\\section{Evaluation}`` to the line that starts
    ``\\appendix``: the evaluation and the "what reproduces" sections).  In it, after removing comments, the
    arguments of :data:`EXEMPT` (references, labels, citations, file inputs, lengths) and the optional arguments
    of every command (placement, widths), a number is a digit that does not continue a word: ``P1``, ``K80`` or
    ``c_1`` are names, ``20.5``, ``3`` or ``10^{-6}`` are numbers and must be macros of numbers.tex.
    """
    found = []
    for first, last in REGIONS:
        span = _region(tex, first, last)
        if span is None:
            found.append(f"paper.tex: the text must have a part from {first} to {last}")
            continue
        start, end = span
        first_line = tex.count("\n", 0, start) + 1
        for offset, line in enumerate(tex[start:end].split("\n")):
            text = _COMMENT.sub("", line)
            text = _EXEMPT.sub(" ", text)
            text = _OPTIONAL.sub(r"\1", text)
            for m in _NUMBER.finditer(text):
                found.append(f"line {first_line + offset}: hand-typed number {m.group(0)!r} in: {line.strip()[:90]}")
    return found


def claim_numbers_outside_sentences(tex: str, measured: Iterable[Any]) -> list[str]:
    """The macros of a claim's numbers that paper.tex uses outside the claim's generated sentence.

    ``measured`` are the claims as measured (claims.py ``Measured``: the macros its rule read, in ``numbers``).
    A number a claim is judged by may be stated only by ``\\Claim<key>Text``, generated from the claims table
    with its conditions, so that no macro can be swapped into a sentence that says something else.
    """
    used = set(re.findall(r"\\([A-Za-z]+)", _COMMENT.sub("", tex)))
    out = []
    for m in measured:
        for macro in sorted(m.numbers & used):
            out.append(
                f"paper.tex uses \\{macro}, a number of the claim {m.claim.key}: "
                f"state it through \\Claim{m.claim.key}Text"
            )
    return out


def undefined_macros(tex: str, numbers: str, prefixes: dict[str, str], missing: dict[str, str]) -> list[str]:
    """Number macros paper.tex uses that numbers.tex does not define, for the experiments whose results exist.

    ``prefixes`` maps each experiment to the prefix of its macros and ``missing`` the experiments without
    results to why.  A block ``\\ifdefined\\X ... \\fi`` whose guard ``X`` is undefined is skipped by LaTeX,
    and here too.
    """
    macro = re.compile(r"\\(" + "|".join(sorted(prefixes.values(), key=len, reverse=True)) + r")([A-Za-z]*)")
    defined = set(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", numbers))
    present = {p for n, p in prefixes.items() if n not in missing}
    for m in re.finditer(r"\\ifdefined\\([A-Za-z]+).*?\\fi", tex, flags=re.S):
        if m.group(1) not in defined:  # an optional number: its block is skipped, so are the macros in it
            tex = tex.replace(m.group(0), "")
    out = []
    for m in sorted(set(macro.findall(tex))):
        prefix, rest = m
        if prefix in present and prefix + rest not in defined:
            out.append(f"paper.tex uses \\{prefix + rest}, which the results do not define")
    return out
