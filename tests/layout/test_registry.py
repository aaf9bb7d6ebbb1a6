"""`common.registry.Registry` shared by threads: lazy references resolved once, never over a newer entry."""

from __future__ import annotations

import sys
import threading
import types
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from logicval_hf.common.registry import Registry


def _gated_module(tmp_path, monkeypatch, value: str) -> tuple[str, types.SimpleNamespace]:
    """A module whose import waits for ``gate.release`` (after setting ``gate.entered``): a slow import."""
    gate = types.SimpleNamespace(entered=threading.Event(), release=threading.Event())
    gate_name, mod_name = f"lv_gate_{uuid.uuid4().hex}", f"lv_slow_{uuid.uuid4().hex}"
    monkeypatch.setitem(sys.modules, gate_name, gate)
    (tmp_path / f"{mod_name}.py").write_text(
        f"import sys\ngate = sys.modules[{gate_name!r}]\ngate.entered.set()\n"
        f"assert gate.release.wait(10), 'the test never released the import'\nVALUE = {value!r}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return mod_name, gate


def test_a_lazy_entry_resolved_by_many_threads_at_once_is_one_object(tmp_path, monkeypatch):
    mod, gate = _gated_module(tmp_path, monkeypatch, "v")
    adapted = []

    def adapt(name, obj):
        adapted.append(obj)
        return [name, obj]  # a new object per call: threads that each kept their own would differ

    reg = Registry("thing", {"slow": f"{mod}:VALUE"}, adapt=adapt)
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(reg.get, "slow") for _ in range(8)]
        assert gate.entered.wait(10)
        gate.release.set()
        got = [f.result(timeout=10) for f in futures]
    assert got[0] == ["slow", "v"] and all(g is got[0] for g in got)
    assert reg.get("slow") is got[0] and adapted  # later lookups: the stored object, no new resolution
    before = len(adapted)
    reg.get("slow")
    assert len(adapted) == before


def test_a_replacement_registered_during_a_slow_resolution_is_kept(tmp_path, monkeypatch):
    """Before the lock, the resolving thread wrote the old module's object over the replacement."""
    mod, gate = _gated_module(tmp_path, monkeypatch, "old")
    reg = Registry("thing", {"x": f"{mod}:VALUE"})
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(reg.get, "x")
        assert gate.entered.wait(10)
        replacement = ["new"]
        reg.register("x", replacement, replace=True)
        gate.release.set()
        assert slow.result(timeout=10) is replacement  # the entry as it stands when the lookup ends
    assert reg.get("x") is replacement


def test_concurrent_registrations_of_one_name_admit_exactly_one():
    reg: Registry[int] = Registry("thing")
    start = threading.Barrier(8)

    def claim(i: int) -> bool:
        start.wait(10)
        try:
            reg.register("only", i)
        except ValueError:
            return False
        return True

    with ThreadPoolExecutor(8) as pool:
        wins = list(pool.map(claim, range(8)))
    assert sum(wins) == 1 and reg.get("only") == wins.index(True)


def test_a_broken_lazy_reference_is_one_clear_error():
    reg = Registry("thing", {"a": "lv_no_such_module_xyz:thing", "b": "json:no_such_attribute"})
    with pytest.raises(ValueError, match=r"thing 'a': no module 'lv_no_such_module_xyz'"):
        reg.get("a")
    with pytest.raises(ValueError, match=r"thing 'b': module 'json' has no attribute 'no_such_attribute'"):
        reg.get("b")


def test_adapt_checks_registered_objects():
    def adapt(name, obj):
        if not isinstance(obj, int):
            raise ValueError(f"thing {name!r} must be an int, got {type(obj).__name__}")
        return obj

    reg = Registry("thing", {"one": 1, "lazy": "json:dumps"}, adapt=adapt)
    with pytest.raises(ValueError, match="thing 'two' must be an int, got float"):
        reg.register("two", 2.5)
    with pytest.raises(ValueError, match="thing 'lazy' must be an int, got function"):
        reg.get("lazy")
    assert reg.names() == ["lazy", "one"] and reg.get("one") == 1
