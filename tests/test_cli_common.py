"""Helpers shared by the CLI handlers, and the convention every subcommand follows."""

from __future__ import annotations

import argparse
import importlib
import pkgutil

import pytest

from rftheory import commands
from rftheory.cli import build_parser
from rftheory.commands._common import figure_paths, parse_int, parse_int_list, progress_lines
from rftheory.errors import RFTheoryError


def test_figure_paths_accepts_png_pdf_or_no_suffix(tmp_path):
    for name in ("fig.png", "fig.PDF", "fig"):
        assert figure_paths(str(tmp_path / name)) == [tmp_path / "fig.png", tmp_path / "fig.pdf"]
    assert figure_paths(None) is None
    with pytest.raises(RFTheoryError, match=r"\.png or \.pdf"):
        figure_paths(str(tmp_path / "fig.svg"))
    with pytest.raises(RFTheoryError, match="does not exist"):
        figure_paths(str(tmp_path / "missing" / "fig.png"))


def test_number_options():
    assert parse_int(" 12 ", "n", 1) == 12
    assert parse_int_list("400,100, 1600", "p") == [100, 400, 1600]
    for text, message in (("1e3", "integer"), ("0", ">= 1"), ("100,,200", "comma-separated"),
                          ("5,5", "repeated")):
        with pytest.raises(RFTheoryError, match=message):
            parse_int_list(text, "p")


def test_progress_lines_go_to_stderr_unless_json(capsys):
    progress_lines(argparse.Namespace(json=False))("[1/2] done")
    assert capsys.readouterr().err == "[1/2] done\n"
    assert progress_lines(argparse.Namespace(json=True)) is None


def test_every_subcommand_registers_a_handle():
    names = [m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")]
    parser = build_parser()
    for name in names:
        module = importlib.import_module(f"rftheory.commands.{name}")
        assert callable(module.register) and callable(module.handle)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in names:
        assert sub.choices[name].get_default("handler").__name__ == "handle"
