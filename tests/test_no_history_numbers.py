"""The repository speaks of itself: no tracked text file points at an issue, a stop or a session by its number.

A number such as "issue N" means something only to whoever kept the tracker; to a reader of the code, the docs
or the paper it points at nothing. Code, tests, docs, proofs and the paper say what a change does or checks
instead; the dated history is CHANGELOG.md's (the one file not scanned) and git log's.

Scanned: every file ``git ls-files`` lists whose name ends in one of :data:`TEXT_SUFFIXES`, or whose name is in
:data:`TEXT_NAMES` (the extensionless scripts of .ci/, the licences), line by line. Data and logs (``.csv``,
``.csv.gz``, ``.log``, figures) are not: their cells are measurements, not sentences.

A line fails on

* a *word reference*: "issue", "stop" or "session" (any case, plural too) followed by a number N, with blanks,
  ``_``, ``-``, ``#`` or ``no.`` between: "issue N", "Issue #N", "Issue-N", "stop N", "sessions N";
* a *bare reference*: ``#`` and a number N after the start of the line, a blank or an opening bracket,
  followed by no letter or digit ("(#N)", "see #N").

(The examples say N because this file is scanned too; its tests build their lines with the number apart.)

It passes on

* a reference to an upstream project's tracker that a reader can follow: the same number in a URL of the line
  (``.../issues/N``, ``.../pull/N``) or written ``OWNER/REPO#N`` ("sphinx-doc/sphinx#10641");
* ``#1``, ``#2`` in LaTeX and CSS files (:data:`NO_BARE_CHECK`), where they are macro parameters and colours;
  elsewhere a colour such as ``"#000"`` is not bare (a quote stands before it).

Exempt (:data:`ALLOWED`, :data:`DERIVED`), each for one reason:

* experiments/paper/rules.py: frozen, its sha256 pinned by the confirmation's meta.json (tests/test_confirm.py).
* paper/claims.md: generated from rules.py's text and checked byte for byte by ``cbalab paper --check``; a hit
  there passes only when rules.py holds the same words.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: The file name endings that mark a text file a person writes or reads as prose or code.
TEXT_SUFFIXES = (
    ".py", ".pyi", ".md", ".rst", ".txt", ".tex", ".bib", ".sty", ".cls", ".toml", ".cfg", ".ini", ".yaml",
    ".yml", ".json", ".ipynb", ".css", ".js", ".html", ".sh", ".gitignore",
)  # fmt: skip
#: Extensionless text files, by name.
TEXT_NAMES = frozenset({"run", "typecheck", "LICENSE", "Makefile"})
#: Files where ``#N`` is syntax (LaTeX macro parameters, CSS colours): only word references are checked.
NO_BARE_CHECK = (".tex", ".sty", ".cls", ".css")

#: The dated history, where "what happened when" belongs.
HISTORY = "CHANGELOG.md"
#: Files exempt as a whole (the module docstring gives each one's reason).
ALLOWED = frozenset({"experiments/paper/rules.py"})
#: Files generated from another: a hit passes only when the source file holds the same words.
DERIVED = {"paper/claims.md": "experiments/paper/rules.py"}

WORD = re.compile(r"\b(?:issue|stop|session)s?(?![a-z])[\s_#-]*(?:no\.\s*)?(\d+)(?![\d.,]*\d)(?!\w)", re.IGNORECASE)
BARE = re.compile(r"(?<![^\s(\[])#(\d+)(?![\w])")


def _upstream(line: str, number: str) -> bool:
    """Whether ``line`` points at an upstream tracker's entry ``number`` in a form a reader can follow."""
    url = rf"https?://\S*/(?:issues|pull|pulls)/{number}\b"
    owner_repo = rf"\b[\w.-]+/[\w.-]+#{number}\b"
    return re.search(url, line) is not None or re.search(owner_repo, line) is not None


def findings(path: str, text: str) -> list[str]:
    """``path:line: words`` for every reference to an issue, a stop or a session by number in ``text``."""
    bare = not path.endswith(NO_BARE_CHECK)
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        hits = [(m.group(0), m.group(1)) for m in WORD.finditer(line)]
        if bare:
            hits += [(m.group(0), m.group(1)) for m in BARE.finditer(line)]
        found += [f"{path}:{number}: {words.strip()}" for words, n in hits if not _upstream(line, n)]
    return found


def _scanned(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return path != HISTORY and path not in ALLOWED and (name.endswith(TEXT_SUFFIXES) or name in TEXT_NAMES)


def tracked_text_files() -> list[str]:
    """The tracked files the rule reads, as paths relative to the repository root."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return sorted(p for p in out.stdout.split("\0") if p and _scanned(p) and (ROOT / p).is_file())


def test_no_tracked_text_file_names_an_issue_a_stop_or_a_session() -> None:
    """Every tracked text file but the changelog and the exempt ones, line by line: no reference by number."""
    files = tracked_text_files()
    assert "README.md" in files and "docs/index.md" in files
    bad = []
    for path in files:
        found = findings(path, (ROOT / path).read_text(encoding="utf-8"))
        if path in DERIVED:
            source = (ROOT / DERIVED[path]).read_text(encoding="utf-8").lower()
            found = [f for f in found if f.split(": ", 1)[1].lower() not in source]
        bad += found
    assert bad == [], "name what changed instead of its number:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "line",
    [
        f"fixed in issue {41}",
        f"Issue #{41}'s goal",
        f"see Issue-{41}",
        f"issue_{41}",
        f"the hard class of issue{12}",
        f"before stop {57} the module",
        f"Sessions {12} and 13",
        f"session no. {3}",
        f"(#{41})",
        f"as #{41} said",
        f"#{41} first",
    ],
)
def test_each_form_of_a_reference_is_found(line: str) -> None:
    assert findings("a.md", line) != [], line


@pytest.mark.parametrize(
    "line",
    [
        "Sphinx has no public hook for it (sphinx-doc/sphinx#10641)",
        "upstream bug, https://github.com/ERGO-Code/HiGHS/issues/1234, issue 1234 there",
        'STYLE = {"milp": {"color": "#000000"}}',
        "x = a#1",
        "the run stops 2.5 s later",
        "a stopwatch 3",
        "sessions[0] of meta.json",
        "the tissue 4",
        "## 2026-12-07",
        "reissue 5 later",
    ],
)
def test_what_is_no_reference_passes(line: str) -> None:
    assert findings("a.py", line) == [], line


def test_latex_parameters_are_not_bare_references() -> None:
    """``#1`` is a macro parameter in LaTeX; a word reference is still found there."""
    assert findings("paper.tex", r"\newcommand{\cmd}[1]{\texttt{#1}} absent (#" + "2)") == []
    assert findings("paper.tex", f"as issue {44} asked") != []


def test_each_exemption_is_still_needed() -> None:
    """An exempt file exists and still holds a reference, or its entry must go."""
    for path in sorted(ALLOWED | set(DERIVED)):
        assert findings(path, (ROOT / path).read_text(encoding="utf-8")), f"{path} no longer needs its exemption"
    for source in DERIVED.values():
        assert (ROOT / source).is_file(), source
