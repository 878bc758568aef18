"""Sphinx directive ``cli-help``: the ``--help`` text of every ``cbalab`` command, from the live parser.

The page is rebuilt from :func:`cbalab.cli.parser` on every build, so it cannot drift from
what ``cbalab <command> --help`` prints.  One section per sub-command, with its one-line summary and its
help text as a literal block; the width is fixed (88 columns) so that the build does not depend on the
terminal it runs in.
"""

from __future__ import annotations

import argparse
import os
from contextlib import contextmanager

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

WIDTH = "88"


@contextmanager
def _columns(width: str):
    """argparse wraps to $COLUMNS: pin it while formatting."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = width
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every sub-command, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, summaries.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


class CliHelp(SphinxDirective):
    """Render ``cbalab --help`` and ``cbalab <command> --help`` for every command."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from cbalab.cli import parser

        top = parser()
        with _columns(WIDTH):
            out: list[nodes.Node] = [nodes.literal_block(text=top.format_help(), language="text")]
            for name, summary, sub in _subcommands(top):
                section = nodes.section(ids=[f"cbalab-{name}"], names=[f"cbalab {name}"])
                section += nodes.title(text=f"cbalab {name}")
                if summary:
                    section += nodes.paragraph(text=summary[0].upper() + summary[1:] + ".")
                section += nodes.literal_block(text=sub.format_help(), language="text")
                out.append(section)
        return out


def setup(app) -> dict:
    app.add_directive("cli-help", CliHelp)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
