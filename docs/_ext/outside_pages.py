"""Pages whose sources lie outside docs/: a docs build reads docs/ and never writes into it.

Sphinx reads only the documents under its source folder, so autosummary writes the API reference's pages
there (deleting and rewriting docs/api/ on every build), and the labs of tutorials/ used to be copied there:
two builds at once, or a build beside the tests, saw each other's half-written folders.  Instead, the API
pages are generated into the build's own doctree folder, the labs are read where they are, and both are
registered with Sphinx's project under the document names they would have under docs/
(``api/cbalab.models.evaluate``, ``tutorials/lab/01_caching_or_bandwidth``), so links, toctrees and the URLs
of the site are unchanged.

Sphinx has no public hook for documents outside the source folder (sphinx-doc/sphinx#10641): the
registration fills the project's docname-to-path maps, through which every reader and writer finds a source,
with paths relative to docs/ (``../tutorials/01_caching_or_bandwidth.ipynb``).  The HTML builder alone reads a
page's suffix off that path, to name its copy under _sources/, so the pages' copies are named here.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.ext.autosummary.generate import generate_autosummary_docs

ROOT = Path(__file__).resolve().parents[2]
#: The labs, rendered as tutorials/lab/<name> (docs/tutorials/index.md lists them).
LABS = {f"tutorials/lab/{nb.stem}": nb for nb in sorted((ROOT / "tutorials").glob("*.ipynb"))}


def _api_pages(app: Sphinx) -> dict[str, Path]:
    """Write autosummary's pages of docs/api.md (its ``:toctree: api``) under the doctree folder; by docname."""
    folder = Path(app.doctreedir) / "outside-pages" / "api"
    shutil.rmtree(folder, ignore_errors=True)
    generate_autosummary_docs(
        ["api.md"],
        output_dir=folder,
        suffix=".rst",
        base_path=app.srcdir,
        app=app,
        imported_members=app.config.autosummary_imported_members,
        encoding=app.config.source_encoding,
    )
    return {f"api/{page.stem}": page for page in sorted(folder.glob("*.rst"))}


def setup(app: Sphinx) -> dict[str, bool]:
    pages: dict[str, Path] = {}

    def generate(app: Sphinx) -> None:
        pages.update(_api_pages(app))
        pages.update(LABS)

    def register(
        app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
    ) -> list[str]:
        """Add the pages to the documents just found under docs/; all are read again (the API pages follow
        the docstrings, which Sphinx does not watch)."""
        for docname, path in pages.items():
            relative = Path(os.path.relpath(path, env.srcdir))
            env.project.docnames.add(docname)
            env.project._docname_to_path[docname] = relative
            env.project._path_to_docname[relative] = docname
        removed.difference_update(pages)
        return list(pages)

    def name_source(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
        """_sources/api/cbalab.rst.txt, as for a page under docs/ (the "show source" link and its copy)."""
        if pagename in pages and context.get("sourcename"):
            context["sourcename"] = pagename + pages[pagename].suffix + app.config.html_sourcelink_suffix

    app.connect("builder-inited", generate)
    app.connect("env-get-outdated", register)
    app.connect("html-page-context", name_source)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
