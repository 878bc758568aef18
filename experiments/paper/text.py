"""LaTeX text for the paper: numbers formatted the way the text quotes them, escaped words, booktabs tables.

Every macro of numbers.tex and every cell of a generated table goes through these functions, so that a
number is printed the same way wherever it is quoted.
"""

from __future__ import annotations

import math
import re


def tex_escape(text: str) -> str:
    """``text`` with LaTeX's special characters escaped (method names carry ``_``, ``[``, ``+``, ``%``)."""
    out = []
    for ch in str(text):
        if ch in "&%$#_{}":
            out.append("\\" + ch)
        elif ch == "~":
            out.append("\\textasciitilde{}")
        elif ch == "^":
            out.append("\\textasciicircum{}")
        elif ch == "\\":
            out.append("\\textbackslash{}")
        else:
            out.append(ch)
    return "".join(out)


def fixed(x: float, digits: int = 1) -> str:
    """``x`` with ``digits`` decimals and thousands separators (``-0.0`` printed as ``0.0``)."""
    text = f"{x:,.{digits}f}"
    return text[1:] if re.fullmatch(r"-0\.?0*", text) else text


def pct(x: float, digits: int = 1) -> str:
    """A fraction as a percentage number (no sign: the text writes ``\\,\\%``)."""
    return fixed(100.0 * x, digits)


def sci(x: float, digits: int = 1) -> str:
    """``x`` in LaTeX scientific notation (``0`` as ``0``), for gaps and price ratios."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else "\\ensuremath{\\infty}"
    exp = math.floor(math.log10(abs(x)))
    mant = x / 10**exp
    if round(mant, digits) >= 10:
        mant, exp = mant / 10, exp + 1
    if -2 <= exp <= 3:
        return fixed(x, max(0, digits - exp))
    if abs(round(mant, digits) - 1.0) < 10**-digits / 2:
        return f"\\ensuremath{{10^{{{exp}}}}}"
    return f"\\ensuremath{{{mant:.{digits}f}\\times 10^{{{exp}}}}}"


def sig(x: float, digits: int = 2) -> str:
    """``x`` to ``digits`` significant digits, in plain decimals (timings in ms or s)."""
    if x == 0 or not math.isfinite(x):
        return fixed(x, 0)
    return fixed(x, max(0, digits - 1 - math.floor(math.log10(abs(x)))))


def integer(x: float) -> str:
    """A whole number with thousands separators."""
    return f"{round(float(x)):,}"


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` things in words, singular or plural as the count asks: ``1 instance``, ``3 instances``,
    ``no instance``."""
    if n == 0:
        return f"no {noun}"
    return f"{integer(n)} {noun if n == 1 else (plural or noun + 's')}"


def booktabs(columns: list[str], rows: list[list[str]], align: str, caption_note: str = "") -> str:
    """A booktabs tabular (cells already LaTeX), small font, for ``\\input`` inside a table environment."""
    lines = [f"\\begin{{tabular}}{{{align}}}", "\\toprule", " & ".join(columns) + " \\\\", "\\midrule"]
    lines += [" & ".join(r) + " \\\\" for r in rows]
    lines += ["\\bottomrule", "\\end{tabular}"]
    if caption_note:
        lines.append(caption_note)
    return "\n".join(lines) + "\n"
