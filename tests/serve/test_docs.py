"""The reward server's page (docs/reward_server.md) says what the code does: every ``logicval`` command it shows
parses with the flags it gives, the flag table names every flag of ``logicval serve``, the workers rule's cap is the
code's, every reward mode has a row, and the page names no path of a machine."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from logicval_hf.cli.main import build_parser
from logicval_hf.serve.config import MAX_DEFAULT_WORKERS
from logicval_hf.serve.reward_modes import REWARD_MODES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reward_server.md"
TEXT = PAGE.read_text(encoding="utf-8")


def _serve_parser():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["serve"]


def test_every_command_on_the_page_parses():
    commands = re.findall(r"`(logicval serve[^`]*)`", TEXT)
    for block in re.findall(r"```bash\n(.*?)```", TEXT, re.S):
        commands += re.findall(r"(logicval serve[^#&\n]*)", block)
    assert len(commands) >= 5
    for command in commands:
        words = shlex.split(command.replace("[", "").replace("]", ""))[2:]
        _serve_parser().parse_args(_concrete(words))


def _concrete(words: list[str]) -> list[str]:
    """Placeholders (N, G, FILE, ...) given values the parser takes."""
    values = {"N": "2", "G": "0.5", "FILE": "prompts.jsonl", "T": "secret", "MODE": "fraction", "A": "127.0.0.1:6379",
              "KEY=VALUE": "threads=1"}
    return [values.get(w, w) for w in words]


def test_the_flag_table_names_every_flag_of_serve():
    flags = {o for a in _serve_parser()._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
    table = set(re.findall(r"`(--[a-z-]+)", TEXT))
    assert flags <= table, sorted(flags - table)


def test_the_workers_rule_and_the_reward_modes_are_the_codes():
    assert f"at most {MAX_DEFAULT_WORKERS}" in TEXT
    rows = set(re.findall(r"^\| `([a-z-]+)`(?: \(default\))? \|", TEXT, re.M))
    assert set(REWARD_MODES) <= rows


def test_the_page_names_no_path_of_a_machine_and_no_date():
    assert not re.search(r"(?<![\w.:/])/(?:work|root|home|tmp|Users)/", TEXT)
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", TEXT)
