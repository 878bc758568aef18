"""The documentation site builds with warnings as errors, and its pages say what they must.

The build is the one of the docs/conf.py docstring (Sphinx + myst-nb + furo); a broken docstring, a dead
cross-reference or a notebook that fails to execute breaks it.  The other tests pin what the build alone
cannot: the section numbers and equation tags that docstrings cite as ``docs/model.md §N`` and
``docs/model.md (N.M)``, one page per file of proofs/, that the proofs and their tests name each other, that the
build writes nothing into docs/, and that every page's formulas render offline in a browser (a MathJax error is
drawn in red on the page, where -W cannot see it).
"""

from __future__ import annotations

import ast
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MODEL = DOCS / "model.md"

SECTIONS = ["1", "2", "3", "4", "5", "6", "6b", "7", "8"]


def _sources() -> set[str]:
    """Every path under docs/ but its default build folder, docs/_build/ (another build may be writing there)."""
    return {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*") if p.relative_to(DOCS).parts[0] != "_build"}


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, set[str]]:
    """Build the site once for this module, warnings as errors: the HTML folder, and the paths under docs/ (but
    docs/_build/) that the build created or removed."""
    out = tmp_path_factory.mktemp("site")
    before = _sources()
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html"]
    proc = subprocess.run(
        [*cmd, "-d", str(out / "doctrees"), str(DOCS), str(out / "html")], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, f"sphinx-build failed:\n{proc.stdout}\n{proc.stderr}"
    return out / "html", before ^ _sources()


@pytest.fixture(scope="module")
def site(build: tuple[Path, set[str]]) -> Path:
    """The HTML folder of the module's build."""
    return build[0]


@pytest.mark.slow
def test_docs_build_with_warnings_as_errors(site: Path) -> None:
    pages = [p for p in site.rglob("*.html") if "_static" not in p.parts and "_modules" not in p.parts]
    names = {p.relative_to(site).as_posix() for p in pages}
    for needed in ("index.html", "getting-started.html", "model.html", "cli.html", "reproduce.html"):
        assert needed in names
    assert "tutorials/index.html" in names
    assert any(n.startswith("api/cbalab.models.evaluate") for n in names)
    assert {f"proofs/{p.stem}.html" for p in (ROOT / "proofs").glob("*.md")} <= names


@pytest.mark.slow
def test_regression_docs_build_writes_nothing_into_docs(build: tuple[Path, set[str]]) -> None:
    """sphinx-build deleted and rewrote docs/api/ (and copied the labs into docs/tutorials/lab/),
    so a build beside pytest made tests error: now the API pages are generated under the build folder and the
    labs are read in tutorials/ (docs/_ext/outside_pages.py), and a build adds or removes no path under docs/."""
    pages, changed = build
    assert changed == set()
    assert (pages / "api" / "cbalab.models.evaluate.html").is_file()
    assert (pages / "tutorials" / "lab" / "01_caching_or_bandwidth.html").is_file()


@pytest.mark.slow
def test_cli_page_is_the_live_parser(site: Path) -> None:
    """Every sub-command of cbalab.cli.parser has its --help on the CLI page (an option left out of the help, such as
    ``--quiet``, the undocumented spelling of ``--no-progress``, is left out of the page too)."""
    import argparse

    from cbalab.cli import parser

    html = (site / "cli.html").read_text()
    subs = next(a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    assert subs.choices
    for name, sub in subs.choices.items():
        assert f'id="cbalab-{name}"' in html
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:
                assert not any(f"{option} " in html or f"{option}]" in html for option in action.option_strings)
                continue
            for option in action.option_strings:
                assert option in html, (name, option)


def test_model_keeps_the_spec_section_numbers() -> None:
    """docs/model.md §N is the §N that existing citations mean: every section, in order."""
    heads = re.findall(r"^## §(\w+) ", MODEL.read_text(), flags=re.M)
    assert heads == SECTIONS


def test_model_equations_are_numbered_and_labelled() -> None:
    """Every display equation carries a \\tag{N.M} under a matching (eq-N-M)= target, numbered within its section."""
    text = MODEL.read_text()
    tags = re.findall(r"\\tag\{([0-9]+)\.([0-9]+)\}", text)
    labels = re.findall(r"^\s*\(eq-([0-9]+)-([0-9]+)\)=$", text, flags=re.M)
    assert len(tags) >= 25
    assert tags == labels
    assert text.count("$$") == 2 * len(tags)
    by_section: dict[str, list[int]] = {}
    for sec, num in tags:
        by_section.setdefault(sec, []).append(int(num))
    for nums in by_section.values():
        assert nums == list(range(1, len(nums) + 1))


def test_every_equation_cited_in_the_docs_exists() -> None:
    """Links such as model.md#eq-4-7 point at a label that model.md defines."""
    defined = set(re.findall(r"^\s*\((eq-[0-9]+-[0-9]+|sec-\w+)\)=$", MODEL.read_text(), flags=re.M))
    cited = set()
    for page in DOCS.rglob("*.md"):
        if "_build" in page.parts:
            continue
        cited |= set(re.findall(r"model\.md#((?:eq|sec)-[\w-]+)", page.read_text()))
    assert cited
    assert cited <= defined, sorted(cited - defined)


def test_every_proof_has_a_page() -> None:
    """Each file of proofs/ is included verbatim by a page of docs/proofs/ (so a new proof cannot be left off)."""
    for proof in (ROOT / "proofs").glob("*.md"):
        page = DOCS / "proofs" / proof.name
        assert page.exists(), page
        assert f"{{include}} ../../proofs/{proof.name}" in page.read_text()


def _tests() -> dict[str, tuple[str, str]]:
    """Every test function under tests/: its name, its docstring and its module's docstring."""
    found: dict[str, tuple[str, str]] = {}
    for path in (ROOT / "tests").rglob("*.py"):
        module = ast.parse(path.read_text())
        for node in ast.walk(module):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                found[node.name] = (ast.get_docstring(node) or "", ast.get_docstring(module) or "")
    return found


def test_proofs_and_their_tests_name_each_other() -> None:
    """Every theorem in proofs/ names the test that checks it, and that test names its theorem, both ways.

    Per file of proofs/: it names at least one test; every test it names exists and cites the file (its
    docstring or its module's, by its path under proofs/); a name ending in ``_`` (``test_regression_*``) is a
    pointer to the tests it begins, at least one.  And every test whose own docstring cites a proof file is
    named in that file (or begins with a pointer of it).
    """
    tests = _tests()
    named: dict[str, set[str]] = {}
    for proof in sorted((ROOT / "proofs").glob("*.md")):
        text = proof.read_text()
        names = set(re.findall(r"\b(test_\w+)", text)) - set(re.findall(r"\b(test_\w+)\.py", text))
        assert names, f"{proof.name} names no test"
        named[proof.name] = names
        cite = f"proofs/{proof.name}"
        for name in sorted(names):
            if name.endswith("_"):
                assert any(t.startswith(name) for t in tests), f"{proof.name} names {name}*, which no test begins"
                continue
            assert name in tests, f"{proof.name} names {name}, which is no test"
            assert cite in tests[name][0] or cite in tests[name][1], f"{name} is named by {proof.name}, not citing it"
    for t, (doc, _module) in sorted(tests.items()):
        for cited in set(re.findall(r"proofs/(\w+\.md)", doc)):
            names = named.get(cited, set())
            listed = t in names or any(n.endswith("_") and t.startswith(n) for n in names)
            assert listed, f"{t} cites proofs/{cited}, which does not name it"


@pytest.mark.slow
def test_regression_math_and_scripts_are_served_locally(site: Path) -> None:
    """No page loads a script from the network; MathJax is the site's own copy
    (sphinx-mathjax-offline), so formulas render offline."""
    pages = [p for p in site.rglob("*.html") if "_static" not in p.parts]
    for page in pages:
        sources = re.findall(r'<script[^>]*\bsrc="([^"]+)"', page.read_text())
        remote = [s for s in sources if s.startswith(("http:", "https:", "//"))]
        assert remote == [], (page, remote)
    model = (site / "model.html").read_text()
    mathjax = [s for s in re.findall(r'<script[^>]*\bsrc="([^"]+)"', model) if "mathjax" in s]
    assert mathjax and (site / mathjax[0].split("?")[0]).is_file()


@pytest.mark.slow
def test_regression_lab_code_wraps_or_scrolls(site: Path) -> None:
    """The labs' code cells and outputs wrap, other code blocks scroll; every lab page has it."""
    css = (site / "_static" / "code.css").read_text()
    assert re.search(r"div\.cell div\.cell_input pre,\s*div\.cell div\.cell_output pre \{\s*white-space: pre-wrap", css)
    assert re.search(r"div\.highlight,[^{]*\{[^}]*overflow-x: auto", css)
    for lab in (site / "tutorials" / "lab").glob("*.html"):
        assert "_static/code.css" in lab.read_text(), lab


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


# Opens each page in turn in one frame (one browser for the whole site), waits for MathJax's first typesetting,
# and reports per page: its formulas, those left untypeset, MathJax's errors (merror) and the macros it did not
# know (which MathJax shows as red text, not as an error).
_HARNESS = """<!doctype html>
<meta charset="utf-8">
<pre id="report">[]</pre>
<iframe id="page"></iframe>
<script>
const pages = PAGES;
const frame = document.getElementById("page");
async function check(url) {
  await new Promise((resolve) => { frame.onload = resolve; frame.src = url; });
  const win = frame.contentWindow;
  if (win.MathJax && win.MathJax.startup) await win.MathJax.startup.promise;
  const doc = frame.contentDocument;
  const math = [...doc.querySelectorAll(".math")];
  return {
    url,
    math: math.length,
    raw: math.filter((m) => !m.querySelector("mjx-container")).map((m) => m.textContent),
    errors: [...doc.querySelectorAll("mjx-merror")].map((e) => e.getAttribute("data-mjx-error") || e.textContent),
    undefined: [...doc.querySelectorAll('mjx-assistive-mml mtext[mathcolor="red"]')].map((e) => e.textContent),
  };
}
(async () => {
  const report = [];
  for (const url of pages) {
    report.push(await check(url));
    document.getElementById("report").textContent = JSON.stringify(report);
  }
})();
</script>
"""

# A page that must fail every check: the test proves its detectors on it before trusting them on the site.
_CANARY = """<!doctype html>
<meta charset="utf-8">
CONFIG
<script defer src="MATHJAX"></script>
<img src="https://canary.invalid/blocked.png">
<div class="math notranslate nohighlight">\\[\\begin{split}a \\\\ b \\tag{1}\\end{split}\\]</div>
<span class="math notranslate nohighlight">\\(\\notamacro\\)</span>
<span class="math notranslate nohighlight">\\(x^{2\\)</span>
"""


def _page_requests(net_log: Path) -> set[str]:
    """The URLs that pages asked the network for, from Chromium's net log: the requests with an initiating
    origin (Chromium's own update, clock and account checks have none)."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    params = [e.get("params", {}) for e in log["events"] if e["type"] == start]
    return {p["url"] for p in params if "url" in p and p.get("initiator", "not an origin") != "not an origin"}


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_regression_every_page_renders_its_math_in_chromium_without_network(site: Path, tmp_path: Path) -> None:
    """Every page of the site opened in headless Chromium with the network blocked (every
    request goes to a closed local port, no host name resolves): every formula is typeset by the site's own
    MathJax, none is a MathJax error (model.md (5.9) was, "\\tag not allowed in split environment", which -W
    cannot see) or holds an unknown macro, and no page asks the network for anything.  A canary page with each
    fault shows that each check can fail."""
    browser = _chromium()
    assert browser is not None
    pages = sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)
    model = (site / "model.html").read_text()
    config = re.search(r"<script>window\.MathJax = .*?</script>", model)
    assert config is not None
    canary = tmp_path / "canary.html"
    mathjax = (site / "_static" / "mathjax" / "tex-chtml.js").as_uri()
    canary.write_text(_CANARY.replace("CONFIG", config.group(0)).replace("MATHJAX", mathjax))
    urls = [canary.as_uri(), *(p.as_uri() for p in pages)]
    harness = tmp_path / "harness.html"
    harness.write_text(_HARNESS.replace("PAGES", json.dumps(urls)))
    net_log = tmp_path / "net-log.json"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'profile'}"]
    cmd += ["--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    cmd += ["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", f"--log-net-log={net_log}"]
    cmd += ["--allow-file-access-from-files", "--virtual-time-budget=600000", "--dump-dom", harness.as_uri()]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    found = re.search(r'<pre id="report">(.*?)</pre>', proc.stdout, flags=re.S)
    assert found is not None, proc.stdout[-2000:]
    report = json.loads(html.unescape(found.group(1)))
    assert [r["url"] for r in report] == urls[: len(report)]
    assert len(report) == len(urls), f"stopped at {urls[len(report)]}"

    bad, *checked = report
    assert bad["errors"] == ["\\tag not allowed in split environment"]
    assert bad["undefined"] == ["\\notamacro"]
    assert bad["raw"] == ["\\(x^{2\\)"]
    assert _page_requests(net_log) == {"https://canary.invalid/blocked.png"}

    for page in checked:
        assert (page["errors"], page["undefined"], page["raw"]) == ([], [], []), page
    model_math = next(r["math"] for r in checked if r["url"] == (site / "model.html").as_uri())
    assert model_math >= MODEL.read_text().count("$$") // 2 + 25
