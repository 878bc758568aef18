"""Hostile-but-fair input for the regression tests of bad input and user mistakes, shared by the test files of the
modules they test (test_instance, test_solve, test_certify, test_cli, test_runner).

A valid instance document to break (:func:`doc`, tests/test_fuzz.py's ``BASE``) by field path
(:func:`set_field`), written where a command reads it (:func:`write`); the command line's answer with
argparse's own refusals included (:func:`run_cli`), and the one form a refusal takes (:func:`one_line_naming`).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from test_fuzz import BASE

from cbalab.cli import main


def doc() -> dict:
    """A valid instance with fixed allocations and options (both problems), as a fresh dict."""
    return copy.deepcopy(BASE)


def set_field(d: dict, path: str, value: object) -> None:
    """Set the field at ``path`` (the form an InstanceError names, ``jobs[2].options[0].gpus``) to ``value``."""
    keys = [int(k) if k.isdigit() else k for k in path.replace("]", "").replace("[", ".").split(".")]
    target = d
    for k in keys[:-1]:
        target = target[k]
    target[keys[-1]] = value


def write(tmp_path: Path, document: dict | str, name: str = "instance.json") -> Path:
    """``document`` (a dict as JSON, or text as it is) in the file ``name`` under ``tmp_path``."""
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``cbalab argv`` in-process, argparse's own refusals (SystemExit) included."""
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def one_line_naming(err: str, option: str) -> bool:
    """Whether ``err`` is one line, ``cbalab: error: OPTION: ...``, and no traceback."""
    return err.startswith(f"cbalab: error: {option}: ") and err.count("\n") == 1 and "Traceback" not in err


def refused(capsys: pytest.CaptureFixture[str], option: str, value: str, *argv: str) -> str:
    """Run ``cbalab argv``; assert exit 2 with one line naming ``option`` and showing ``value``; return the line."""
    code, _, err = run_cli(capsys, *argv)
    assert code == 2, err
    assert one_line_naming(err, option), err
    assert value in err, err
    return err
