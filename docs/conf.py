"""Sphinx configuration of the cbalab documentation (MyST markdown, myst-nb notebooks, furo theme).

Build with warnings as errors, as CI does:

    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import cbalab

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
# autosummary's pages are generated anew on every build: stale pages of removed modules would be orphans.
shutil.rmtree(DOCS / "api", ignore_errors=True)

project = "cbalab"
author = "the cbalab developers"
copyright = "the cbalab developers"
release = cbalab.__version__
version = release

# Math renders offline: sphinx-mathjax-offline (a dev dependency) ships MathJax 3.2.2 and copies it into the
# site's _static/mathjax/, so no page loads anything from a CDN (tests/test_docs.py holds every page to that).
extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "cli_help",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints"]
# ".rst" first: autosummary writes its generated pages with the first suffix, and they are reST.
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

# MyST: $...$ and $$...$$ math (equations carry \tag{N.M} so the numbers match the citations
# "docs/model.md (4.2)"), (label)= targets, and ``` {directive} ``` fences.  A "$" followed by a space or a
# digit is a price ("1 $/h" in the proofs), not the start of math.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_dmath_allow_space = False
myst_dmath_allow_digits = False
myst_heading_anchors = 3

# Notebooks: render stored outputs; a notebook committed without outputs is executed at build time,
# and an error in it fails the build.  The test suite executes every notebook itself (nbclient).
nb_execution_mode = "auto"
nb_execution_timeout = 180
nb_execution_raise_on_error = True

# API reference: autosummary writes one page per module from the docstrings.
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_preserve_defaults = True

templates_path = ["_templates"]

html_theme = "furo"
html_title = f"cbalab {release}"
html_static_path = ["_static"]
# Long lines of code (the labs' cells, their outputs, the CLI reference) scroll sideways instead of being cut.
html_css_files = ["code.css"]


def _copy_tutorials() -> list[str]:
    """Copy the notebooks of tutorials/ (the repository's labs) into the source tree; return their doc names.

    The labs live at the repository root so that students find them without the docs; Sphinx only reads
    files under docs/, hence the copy (docs/tutorials/lab/ is generated and ignored by git).
    """
    target = DOCS / "tutorials" / "lab"
    shutil.rmtree(target, ignore_errors=True)
    notebooks = sorted((ROOT / "tutorials").glob("*.ipynb"))
    if notebooks:
        target.mkdir(parents=True)
    for nb in notebooks:
        shutil.copy2(nb, target / nb.name)
    return [f"lab/{nb.stem}" for nb in notebooks]


_TUTORIALS = _copy_tutorials()


def _tutorial_toctree(app, docname: str, source: list[str]) -> None:
    """Append the table of contents of the copied notebooks to the tutorials page."""
    if docname != "tutorials/index":
        return
    if _TUTORIALS:
        source[0] += "\n```{toctree}\n:maxdepth: 1\n\n" + "\n".join(_TUTORIALS) + "\n```\n"
    else:
        source[0] += "\nThe folder `tutorials/` holds no notebook yet.\n"


def setup(app) -> None:
    app.connect("source-read", _tutorial_toctree)


# The facade re-exports a few classes (cbalab.SolveOptions is cbalab.models.types.SolveOptions), so an
# unqualified type name in a signature has two equal targets; Sphinx reports that ambiguity as "ref.python".
# Only that category is silenced: missing references and every other warning still fail the build.
suppress_warnings = ["ref.python"]
