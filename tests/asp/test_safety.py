import pytest
from helpers import attr

from logicval_hf import SolverTimeout, Spec, UnsafeProgramError
from logicval_hf.asp.programs import spec_program
from logicval_hf.asp.safety import check_program, run_program


@pytest.mark.parametrize("text", [
    '#include "/etc/passwd".',
    "# include 'x.lp'.",
    "#INCLUDE \"a.lp\".",
    "p.\n#script (python)\nimport os\n#end.",
    "#script(lua) os.exit() #end.",
    "p(@getenv(1)).",
    "p(X) :- q(X), X = @ f(2).",
])
def test_forbidden_constructs_are_refused(text):
    with pytest.raises(UnsafeProgramError, match=r"not allowed|forbidden"):
        check_program(text)


def test_syntax_errors_are_reported_clearly():
    with pytest.raises(UnsafeProgramError, match=r"does not parse: .*syntax error"):
        check_program("p(X :- q(X).")


def test_non_string_refused():
    with pytest.raises(UnsafeProgramError, match="must be a string"):
        check_program(b"p.")


def test_time_is_bounded():
    with pytest.raises(SolverTimeout):
        run_program("n(1..3000). p(X,Y,Z) :- n(X), n(Y), n(Z).", timeout=0.5)


def test_spec_program_runs_in_the_sandbox_and_agrees_with_the_solver():
    sat = Spec.from_dict({"n": 4, "constraints": [{"template": "C1/1prop", "params": {"A1": attr("color", "red")}}]})
    unsat = Spec.from_dict({"n": 4, "constraints": [{"template": "C8/1prop_atleast",
                                                     "params": {"A1": attr("color", "red"), "K": 6}}]})
    r = run_program(spec_program(sat))
    assert r.satisfiable and any(a.startswith("hasProperty(") and ",color,red)" in a for a in r.model)
    assert not run_program(spec_program(unsat)).satisfiable
