"""Modules and classes renamed to say what they hold keep their former names: the old import paths give the same
objects, ``python -m`` under an old module name still runs, and importing them says nothing (no warning)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest


def test_the_former_module_names_give_the_same_objects():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from logicval_hf.asp import labelling
        from logicval_hf.cli import asp_programs, check, core, demo, import_prompts, imports, solve, verify
        from logicval_hf.repairs import costs, scores

    assert labelling.SpecSolver is labelling.SpecLabeller
    assert (scores.repair_many, scores.mean_costs, scores.sample_fields) == (
        costs.repair_many, costs.mean_costs, costs.sample_fields)
    assert (imports.cmd_import, imports.add_subcommands) == (import_prompts.cmd_import, import_prompts.add_subcommands)
    assert (core.cmd_solve, core.cmd_verify, core.cmd_check, core.cmd_asp, core.cmd_run_asp, core.cmd_demo) == (
        solve.cmd_solve, verify.cmd_verify, check.cmd_check, asp_programs.cmd_asp, asp_programs.cmd_run_asp,
        demo.cmd_demo)
    assert core.scene_of is verify.scene_of and core.EXIT_NO_WITNESS == solve.EXIT_NO_WITNESS == 1


def _subcommands(add_subcommands) -> list[str]:
    from logicval_hf.cli.dispatch import OneLineParser

    parser = OneLineParser(prog="logicval")
    sub = parser.add_subparsers(dest="command")
    add_subcommands(sub)
    return list(sub.choices)


def test_the_core_alias_registers_its_six_commands_in_their_order():
    from logicval_hf.cli import core

    assert _subcommands(core.add_subcommands) == ["solve", "verify", "check", "asp", "run-asp", "demo"]


def test_logicval_lists_the_commands_in_their_order():
    from logicval_hf.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    assert list(sub.choices)[:8] == ["solve", "verify", "check", "asp", "run-asp", "demo", "repair", "templates"]
    assert "import" in sub.choices


@pytest.mark.parametrize("module", ["logicval_hf.cli.imports", "logicval_hf.cli.import_prompts"])
def test_the_import_command_runs_under_either_module_name(module):
    proc = subprocess.run([sys.executable, "-m", module, "import", "geneval", "--help"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "METADATA" in proc.stdout, proc.stderr


def test_a_split_command_runs_as_its_own_module(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"n": 3, "constraints": [{"template": "C1/1prop", "params": {
        "A1": {"prop": "color", "value": "red", "negated": False}}}]}))
    proc = subprocess.run([sys.executable, "-m", "logicval_hf.cli.solve", "solve", str(spec), "--witness"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and len(json.loads(proc.stdout)["objects"]) == 3, proc.stderr
