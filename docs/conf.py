"""Sphinx configuration of the cbalab documentation (MyST markdown, myst-nb notebooks, furo theme).

Build with warnings as errors, as CI does:

    sphinx-build -W --keep-going -b html docs docs/_build/html

The build writes nothing into docs/ outside that build folder: the output folder, its doctree folder (where the API
pages are generated) and myst-nb's jupyter_execute/ beside the output folder; the labs are read in tutorials/
(docs/_ext/outside_pages.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import cbalab

DOCS = Path(__file__).resolve().parent
# A build writes nothing into docs/ outside its build folder: not even the bytecode of docs/_ext's extensions.
sys.dont_write_bytecode = True
sys.path.insert(0, str(DOCS / "_ext"))

from outside_pages import LABS  # noqa: E402  (docs/_ext is on the path from here on)

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
    "outside_pages",
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
# In a temporary folder: the labs are read where they are (tutorials/), and nothing may be written beside them.
nb_execution_in_temp = True

# API reference: one page per module from the docstrings.  autosummary itself would write them into docs/api/;
# docs/_ext/outside_pages.py generates them anew on every build under the build folder instead.
autosummary_generate = False
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


def _tutorial_toctree(app, docname: str, source: list[str]) -> None:
    """Append the table of contents of the labs (the notebooks of tutorials/, read where they are by
    docs/_ext/outside_pages.py) to the tutorials page."""
    if docname != "tutorials/index":
        return
    if LABS:
        labs = [name.removeprefix("tutorials/") for name in LABS]
        source[0] += "\n```{toctree}\n:maxdepth: 1\n\n" + "\n".join(labs) + "\n```\n"
    else:
        source[0] += "\nThe folder `tutorials/` holds no notebook yet.\n"


def setup(app) -> None:
    app.connect("source-read", _tutorial_toctree)


# The facade re-exports a few classes (cbalab.SolveOptions is cbalab.models.types.SolveOptions), so an
# unqualified type name in a signature has two equal targets; Sphinx reports that ambiguity as "ref.python".
# Only that category is silenced: missing references and every other warning still fail the build.
suppress_warnings = ["ref.python"]
