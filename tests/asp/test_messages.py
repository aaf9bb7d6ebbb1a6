"""clingo's logger is safe for any bytes: a lexer error inside a multi-byte character is a syntax error, never the
"PANIC: exception in nothrow scope" that ended the process (logicval_hf.asp.messages)."""

import subprocess
import sys
import textwrap

import pytest

from logicval_hf import UnsafeProgramError
from logicval_hf.asp import messages
from logicval_hf.asp.safety import check_program, run_program

NON_ASCII = ["p(\u00e9).", "p(a).\nq(X) :- p(X), \u00e9.", "\u4e2d(1).", "p(a) :- \U0001f600."]


def test_the_tolerant_callback_is_installed():
    assert messages.install() is True


@pytest.mark.parametrize("text", NON_ASCII)
def test_a_control_reports_a_lexer_error_inside_a_character_as_messages(text):
    got = messages.Messages()
    ctl = messages.control(["--warn=none"], got)
    with pytest.raises(RuntimeError):
        ctl.add("base", [], text)
    assert got and all("lexer error" in m or "syntax error" in m for m in got)
    assert all("\n" not in m for m in got)


@pytest.mark.parametrize("text", NON_ASCII)
def test_untrusted_programs_with_non_ascii_names_are_refused_in_one_line(text):
    with pytest.raises(UnsafeProgramError, match=r"does not parse: <string>:\d+:\d+-\d+: error: lexer error") as e:
        check_program(text)
    assert "\n" not in str(e.value)


def test_non_ascii_in_strings_and_comments_is_fine():
    assert run_program('p("caf\u00e9"). % \u00e9t\u00e9\n').model == ('p("caf\u00e9")',)


def test_a_process_that_checks_untrusted_programs_survives_them():
    # in a child: a PANIC would end it with status 1 before it prints "alive"
    code = textwrap.dedent("""
        from logicval_hf.asp.safety import check_program
        from logicval_hf.errors import UnsafeProgramError
        for text in ["p(\\u00e9).", "\\u00e9 :- \\u00e8.", "p(a). q :- p(\\u00c3)."]:
            try:
                check_program(text)
            except UnsafeProgramError:
                pass
        print("alive")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "alive", proc.stderr
    assert "PANIC" not in proc.stderr


def test_run_asp_on_a_non_ascii_program_is_one_line_and_exit_2(tmp_path):
    program = tmp_path / "x.lp"
    program.write_bytes(b"p(\xc3\xa9).\n")
    proc = subprocess.run([sys.executable, "-m", "logicval_hf.cli.main", "run-asp", str(program)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("logicval: error: ASP program does not parse"), proc.stderr
