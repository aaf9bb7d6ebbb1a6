import pytest
from helpers import attr, obj

from logicval_hf import Scene, Spec
from logicval_hf.asp.solver import Solver
from logicval_hf.scoring.scores import Record, aggregate, operators_of

RED = {"template": "C1/1prop", "params": {"A1": attr("color", "red")}}
ALL_CUBES = {"template": "C2/1prop", "params": {"A1": attr("shape", "cube")}}
OVER = {"template": "C8/1prop_atleast", "params": {"A1": attr("color", "red"), "K": 9}}


def record(spec, scene, package):
    s = Solver()
    spec = Spec.from_dict(spec)
    scene = Scene.from_dict(scene)
    label = s.solve(spec).label
    return Record(spec, label, s.verify(spec, scene, label=label), s.verify(spec, scene, "relaxed", label), package)


def scene(*objs):
    return {"image_size": [480, 320], "objects": list(objs)}


def test_aggregate_scores_and_breakdowns():
    good = scene(obj("red", "cube", "metal", 50, 50), obj("blue", "cube", "metal", 150, 50),
                 obj("red", "cube", "rubber", 250, 250))
    two = scene(obj("red", "cube", "metal", 50, 50), obj("blue", "sphere", "metal", 150, 50))
    recs = [
        record({"n": 3, "constraints": [RED]}, good, "1SAT"),             # ok
        record({"n": 3, "constraints": [RED]}, two, "1SAT"),              # count wrong, relaxed ok
        record({"n": 3, "constraints": [ALL_CUBES]}, two, "1SAT"),        # violated
        record({"n": 3, "constraints": [OVER]}, scene(), "1UNSAT"),       # abstained: ok
        record({"n": 3, "constraints": [OVER]}, good, "1UNSAT"),          # did not abstain
    ]
    agg = aggregate(recs)
    assert agg["n_samples"] == 5
    assert agg["logicval_score"] == pytest.approx(2 / 5)
    assert agg["relaxed_score"] == pytest.approx(3 / 5)
    assert agg["abstention_rate"] == pytest.approx(1 / 2)
    assert agg["sat_score"] == pytest.approx(1 / 3)
    assert agg["by_package"]["1SAT"] == {"n": 3, "score": pytest.approx(1 / 3), "relaxed_score": pytest.approx(2 / 3)}
    assert agg["by_class"]["C1"]["score"] == 0.5 and agg["by_class"]["C2"]["score"] == 0.0
    assert agg["by_template"]["C1/1prop"]["relaxed_score"] == 1.0
    assert agg["constraint_success_by_operator"]["forall"] == {"n": 1, "rate": 0.0}
    assert agg["constraint_success_by_operator"]["exists"]["rate"] == 1.0


def test_operators():
    assert operators_of("C1/1prop") == ("exists",)
    assert operators_of("C3/1prop") == ("forall", "implies")
    assert operators_of("C7/1prop_exact") == ("forall", "implies", "count")
    assert operators_of("C9/1prop") == ("count",)


def test_empty_input():
    agg = aggregate([])
    assert agg["logicval_score"] is None and agg["by_package"] == {}
