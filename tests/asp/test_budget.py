"""Time budgets: a label within its budget or `SolverTimeout` within about a second of it, at every entry point;
never a label the solver has not proved, never a cached timeout."""

from __future__ import annotations

import time

import clingo
import pytest

import logicval_hf.asp.solver as solver_module
from logicval_hf import SolverTimeout
from logicval_hf.asp.budget import DEFAULT_TIMEOUT, Deadline, check_timeout
from logicval_hf.asp.solver import Solver, solve, verify
from logicval_hf.cli.main import main

#: 13 pigeons in 12 holes: clasp needs far longer than any budget below to refute it
PIGEONS = """
pigeon(1..13). hole(1..12).
1 { in(P,H) : hole(H) } 1 :- pigeon(P).
:- in(P,H), in(Q,H), P < Q.
"""


def count(cls, theta, k):
    return {"template": "X1/count_cmp", "params": {"A1": {"prop": "class", "value": cls, "negated": False}, "T": theta,
                                                   "K": k}}


SPEC = {"domain": "coco", "constraints": [count("dog", ">=", 3), count("cat", "=", 2)]}


def test_a_long_search_is_interrupted_at_the_budget():
    ctl = clingo.Control(["--warn=none"])
    ctl.add("base", [], PIGEONS)
    ctl.ground([("base", [])])
    deadline = Deadline(0.5)
    t = time.monotonic()
    with pytest.raises(SolverTimeout, match=r"time budget of 0\.5 s \(during solving\)") as e:
        deadline.solve(ctl, [], lambda m: False, lambda core: None)
    assert time.monotonic() - t < 0.5 + 1.0 and e.value.budget == 0.5
    assert isinstance(e.value, ValueError) and isinstance(e.value, RuntimeError)


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), "5", True])
def test_a_budget_is_a_positive_number_of_seconds(bad):
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        check_timeout(bad)
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
        Solver(timeout=bad)


def test_past_its_budget_a_label_is_an_error_and_is_not_cached():
    s = Solver()
    with pytest.raises(SolverTimeout, match="exceeded its time budget of 1e-09 s"):
        s.solve(SPEC, timeout=1e-9)
    assert s.solve(SPEC, timeout=5).label == "SAT"  # the timeout was not remembered as an answer
    assert s.solve(SPEC, timeout=1e-9).label == "SAT"  # a cached label needs no budget


def test_the_solvers_budget_is_the_default_and_a_call_overrides_it():
    empty = {"domain": "coco", "image_size": [512, 512], "objects": []}
    s = Solver(timeout=1e-9)
    with pytest.raises(SolverTimeout):
        s.solve(SPEC)
    with pytest.raises(SolverTimeout):  # verify labels a spec given without its label, under the same budget
        s.verify(SPEC, empty)
    with pytest.raises(SolverTimeout):
        s.verify_many([(SPEC, empty)])
    assert s.verify(SPEC, empty, label="SAT").ok is False  # a given label needs no solving
    assert s.solve(SPEC, timeout=None).label == "SAT"  # the call's budget (None: none) overrides the solver's


def test_module_level_entry_points_take_a_budget():
    with pytest.raises(SolverTimeout):
        solve({"domain": "coco", "constraints": [count("bird", ">=", 5)]}, timeout=1e-9)
    with pytest.raises(SolverTimeout):
        verify({"domain": "coco", "constraints": [count("bird", ">=", 6)]},
               {"domain": "coco", "image_size": [512, 512], "objects": []}, timeout=1e-9)


def test_a_spec_with_a_large_grounding_is_labelled_in_a_child_process(monkeypatch):
    """Grounding cannot be interrupted: above the estimate threshold the label comes from a child process, the
    same label as in-process, and a child past its budget is killed within about a second of it."""
    spec = {"domain": "coco", "constraints": [count("dog", "=", 9), count("cat", "=", 9)]}
    here = Solver().solve(spec)
    monkeypatch.setattr(solver_module, "ISOLATE_ABOVE", 0)
    there = Solver().solve(spec, timeout=30)
    assert there.to_dict() == here.to_dict()
    t = time.monotonic()
    with pytest.raises(SolverTimeout, match=r"time budget of 0\.05 s"):
        Solver().solve({"domain": "coco", "constraints": [count("dog", "=", 8)]}, timeout=0.05)
    assert time.monotonic() - t < 0.05 + 1.0


def test_cli_solve_has_a_budget_and_exits_2_past_it(tmp_path, capsys):
    import json

    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    assert main(["solve", str(path), "--timeout", "1e-9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("logicval: error: labelling the spec exceeded its time budget of 1e-09 s")
    assert len(err.strip().splitlines()) == 1
    assert main(["solve", str(path)]) == 0 and json.loads(capsys.readouterr().out)["label"] == "SAT"
    try:  # refused when the arguments are read (argparse exits 2) or when the budget is checked (main returns 2)
        status = main(["solve", str(path), "--timeout", "0"])
    except SystemExit as e:
        status = e.code
    assert status == 2 and "positive number" in capsys.readouterr().err


def test_the_default_budget_is_documented_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["solve", "--help"])
    assert f"default {DEFAULT_TIMEOUT:g}" in capsys.readouterr().out


def test_the_metric_and_the_space_have_the_default_budget():
    """Every entry point that labels for someone waiting: the metric's engine, the Space's Compose and Check."""
    import inspect

    from logicval_hf.scoring.evaluation import compute
    from logicval_hf.space.check import evaluate_scene
    from logicval_hf.space.compose import solve_spec

    for fn in (compute, evaluate_scene, solve_spec):
        assert inspect.signature(fn).parameters["timeout"].default == DEFAULT_TIMEOUT, fn.__name__
    spec = {"domain": "coco", "constraints": [count("horse", ">=", 4)]}
    empty = {"domain": "coco", "image_size": [512, 512], "objects": []}
    with pytest.raises(SolverTimeout, match=r"^references\[1\]: labelling the spec exceeded its time budget"):
        compute([empty, empty], [{"spec_json": json_text(spec), "label": "SAT"}, spec], backend="given",
                timeout=1e-9)
    from logicval_hf.contract.spec import Spec

    t = time.monotonic()
    with pytest.raises(SolverTimeout):
        solve_spec(Spec.from_dict({"domain": "coco", "constraints": [count("horse", ">=", 5)]}), timeout=1e-9)
    assert time.monotonic() - t < 1.0


def json_text(obj):
    import json

    return json.dumps(obj)


DATA = __import__("pathlib").Path(__file__).resolve().parents[1] / "data" / "solver"


def _hard(name):
    import json

    return json.loads((DATA / name).read_text())


def _within(budget, fn, *args, **kwargs):
    """Run ``fn``; it must raise SolverTimeout within the budget plus one second."""
    t = time.monotonic()
    with pytest.raises(SolverTimeout):
        fn(*args, **kwargs)
    took = time.monotonic() - t
    assert took < budget + 1.0, f"{fn.__name__} took {took:.2f} s with a budget of {budget} s"


@pytest.mark.parametrize("name", ["hard_in_process.json",
                                  pytest.param("hard_isolated.json", marks=pytest.mark.slow)])
def test_a_hard_spec_answers_with_the_timeout_within_a_second_of_the_budget(name):
    _within(1.0, Solver().solve, _hard(name), timeout=1.0)


@pytest.mark.slow
def test_no_entry_point_holds_its_caller_past_the_budget(tmp_path, capsys):
    """solve/verify (library and CLI), the metric's engine, the Space's Compose and Check, an import."""
    import json

    from logicval_hf.benchmark.imported import import_rows
    from logicval_hf.contract.spec import Spec
    from logicval_hf.scoring.evaluation import compute
    from logicval_hf.space.check import evaluate_scene
    from logicval_hf.space.compose import solve_spec

    spec = _hard("hard_isolated.json")
    empty = {"domain": "coco", "image_size": [512, 512], "objects": []}
    _within(1.0, verify, spec, empty, timeout=1.0)
    _within(1.0, compute, [empty], [spec], backend="given", timeout=1.0)
    _within(1.0, solve_spec, Spec.from_dict(spec), timeout=1.0)
    _within(1.0, evaluate_scene, Spec.from_dict(spec), __import__("logicval_hf").Scene.from_dict(empty), timeout=1.0)
    _within(1.0, import_rows, [(Spec.from_dict(spec), "hard", {})], "x", timeout=1.0)
    path, scene = tmp_path / "spec.json", tmp_path / "scene.json"
    path.write_text(json.dumps(spec))
    scene.write_text(json.dumps(empty))
    for argv in (["solve", str(path)], ["verify", str(path), str(scene)]):
        t = time.monotonic()
        assert main([*argv, "--timeout", "1"]) == 2
        assert time.monotonic() - t < 2.0 and "time budget of 1 s" in capsys.readouterr().err
