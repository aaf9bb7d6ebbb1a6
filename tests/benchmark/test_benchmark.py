"""The benchmark dataset: sampler invariants, solver labels, the Hub folder, the builder, push and stats.

The benchmark is built once per test run (in-process, shared with `LogicValBuilder` through
`cached_benchmark`); one more build runs in a fresh process to check that the files are byte-identical.
"""

from __future__ import annotations

import collections
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a hub-looking name must not wait for retries (no hub is reachable)

datasets = pytest.importorskip("datasets")
pq = pytest.importorskip("pyarrow.parquet")
yaml = pytest.importorskip("yaml")

from logicval_hf import Scene, Spec, load_catalog  # noqa: E402
from logicval_hf.asp.solver import Solver  # noqa: E402
from logicval_hf.benchmark.dataset import (  # noqa: E402
    COLUMNS,
    SPLIT,
    LogicValBuilder,
    card_metadata,
    features,
    push_dataset,
    read_rows,
    write_dataset,
)
from logicval_hf.benchmark.sampler import (  # noqa: E402
    CHANCE_SCENES,
    DEFAULT_SEED,
    PACKAGE_NAMES,
    PACKAGES,
    cached_benchmark,
    dedup_key,
    prompt_body,
    unsat_causes,
)
from logicval_hf.contract.spec import AttrLit  # noqa: E402
from logicval_hf.contract.verbalise import check_expect, parse_expect  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CATALOG = load_catalog()
SIZES = {p.name: p.size for p in PACKAGES}
LABELS = {p.name: p.label for p in PACKAGES}
TEXT_COLUMNS = ("prompt_short", "prompt_long", "full_prompt_short", "full_prompt_long",
                "full_prompt_white_short", "full_prompt_white_long")


@pytest.fixture(scope="session")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hub") / "logicval"
    write_dataset(out, benchmark=cached_benchmark(DEFAULT_SEED))
    return out


@pytest.fixture(scope="session")
def rows(folder) -> dict[str, list[dict]]:
    return {name: read_rows(folder, name) for name in PACKAGE_NAMES}


@pytest.fixture(scope="session")
def all_rows(rows) -> list[dict]:
    return [r for name in PACKAGE_NAMES for r in rows[name]]


@pytest.fixture(scope="module")
def solver() -> Solver:
    return Solver()


# ---------------------------------------------------------------------------------------------
# Loading with datasets
# ---------------------------------------------------------------------------------------------
def test_every_config_loads_from_the_folder(folder, tmp_path):
    names = list(features())
    for p in PACKAGES:
        ds = datasets.load_dataset(str(folder), p.name, cache_dir=str(tmp_path / "cache"))
        assert list(ds) == [SPLIT]
        split = ds[SPLIT]
        assert split.num_rows == p.size
        assert split.column_names == names
        assert split.features == features()
        assert set(split["label"]) == {p.label}
        assert set(split["m"]) == {p.m}
        assert set(split["package"]) == {p.name}
        assert split["id"] == [f"{p.name}-{i:04d}" for i in range(1, p.size + 1)]


def test_bare_name_resolves_to_the_local_folder(folder, tmp_path, monkeypatch):
    monkeypatch.chdir(folder.parent)
    ds = datasets.load_dataset("logicval", "3SAT", split=SPLIT, cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 25


@pytest.mark.slow  # the first `datasets` streaming load costs ~2 s
def test_streaming(folder):
    it = datasets.load_dataset(str(folder), "6SAT", split=SPLIT, streaming=True)
    got = list(it)
    assert len(got) == 25
    assert set(got[0]) == set(features())
    assert got[0]["witness"]["objects"] and got[0]["core"] is None
    size = got[0]["witness"]["image_size"]
    assert size == [480, 320] and all(type(v) is int for v in size)  # pixels: integers, in the parquet too


# ---------------------------------------------------------------------------------------------
# Sampler invariants and solver labels
# ---------------------------------------------------------------------------------------------
def test_package_sizes_and_row_shape(rows):
    assert {k: len(v) for k, v in rows.items()} == SIZES
    for name, rs in rows.items():
        for r in rs:
            spec = Spec.from_dict(json.loads(r["spec_json"]))  # validates against the contract
            assert r["n"] == spec.n and 3 <= r["n"] <= 9
            assert r["m"] == spec.m == len(r["constraints"]) == len(r["classes"]) == len(r["templates"])
            assert r["label"] == LABELS[name]
            assert r["templates"] == [c.template_id for c in spec.constraints]
            assert r["classes"] == [c.cls for c in spec.constraints]
            for c, col in zip(spec.constraints, r["constraints"], strict=True):
                assert col["template"] == c.template_id and col["class"] == c.cls
                assert json.loads(col["params_json"]) == c.to_dict()["params"]
            assert (r["witness"] is None) == (r["label"] == "UNSAT")
            assert (r["core"] is None) == (r["label"] == "SAT")


def test_1sat_covers_every_template_five_times(rows):
    counts = collections.Counter(r["templates"][0] for r in rows["1SAT"])
    assert counts == dict.fromkeys(CATALOG.templates, 5)


def test_classes_distinct_and_no_duplicate_specs(all_rows):
    keys, canon = set(), set()
    for r in all_rows:
        assert len(set(r["classes"])) == len(r["classes"])
        spec = Spec.from_dict(json.loads(r["spec_json"]))
        keys.add(spec.key())
        canon.add(dedup_key(spec))
    assert len(keys) == len(canon) == len(all_rows) == 509
    assert len({r["id"] for r in all_rows}) == 509


def test_sat_witnesses_verify(rows, solver):
    pairs = [(r["spec_json"], Scene.from_dict(r["witness"])) for name in PACKAGE_NAMES for r in rows[name]
             if r["label"] == "SAT"]
    assert len(pairs) == 405
    for (spec, scene), v in zip(pairs, solver.verify_many(pairs, labels=["SAT"] * len(pairs)), strict=True):
        assert v.ok and v.count_ok and not v.violated, spec
        assert len(scene) == json.loads(spec)["n"]


def test_unsat_cores_are_unsatisfiable_and_minimal(rows, solver):
    n_unsat = 0
    for name in PACKAGE_NAMES:
        for r in rows[name]:
            if r["label"] != "UNSAT":
                continue
            n_unsat += 1
            spec = Spec.from_dict(json.loads(r["spec_json"]))
            core = list(r["core"])
            assert core and core == sorted(set(core)) and all(0 <= i < spec.m for i in core)
            assert not solver.is_satisfiable(spec, core)
            for i in core:
                assert solver.is_satisfiable(spec, [j for j in core if j != i]), (r["id"], core, i)
    assert n_unsat == 104


def test_1unsat_rows(rows):
    causes = collections.Counter()
    for r in rows["1UNSAT"]:
        spec = Spec.from_dict(json.loads(r["spec_json"]))
        assert r["core"] == [0]
        causes.update(unsat_causes(spec))
    assert set(causes) <= {"count_overflow", ""}  # "" = parity, e.g. #metal = #rubber with n odd
    # nothing steers 1UNSAT to count templates, yet overflows are by far the most common cause
    assert causes["count_overflow"] >= 20


def test_asp_program_agrees_with_the_label(all_rows):
    import clingo

    for r in all_rows[::9] + [r for r in all_rows if r["m"] > 1][::5]:
        ctl = clingo.Control(["--warn=none"], logger=lambda code, msg: None)
        ctl.add("base", [], r["asp_program"])
        ctl.ground([("base", [])])
        assert ctl.solve().satisfiable == (r["label"] == "SAT"), r["id"]


def test_chance_rates(all_rows):
    for r in all_rows:
        rates = r["chance_rates"]
        assert len(rates) == r["m"]
        for x in [*rates, r["chance_rate"]]:
            assert 0.0 <= x <= 1.0 and (x * CHANCE_SCENES) == int(x * CHANCE_SCENES)
        assert r["chance_rate"] <= min(rates)
        if r["label"] == "UNSAT":
            # a random admissible scene satisfying every constraint would be a model
            assert r["chance_rate"] == 0.0
            assert min(rates[i] for i in r["core"]) < 1.0
    assert any(r["chance_rate"] > 0 for r in all_rows if r["package"] == "1SAT")


# ---------------------------------------------------------------------------------------------
# Prompts and sub-questions
# ---------------------------------------------------------------------------------------------
def test_prompts_are_well_formed(all_rows):
    for r in all_rows:
        for col in (*TEXT_COLUMNS, "asp_program"):
            assert r[col].strip(), (r["id"], col)
        for col in TEXT_COLUMNS:
            assert "{" not in r[col] and "}" not in r[col], (r["id"], col)
        for c in r["constraints"]:
            for t in (c["text_short"], c["text_long"]):
                assert t and "{" not in t and "}" not in t
        for reg in ("short", "long"):
            body = r[f"prompt_{reg}"]
            if r["m"] == 1:
                assert "Constraint 1:" not in body
                assert body == r["constraints"][0][f"text_{reg}"]
            else:
                lines = body.split("\n")
                assert len(lines) == r["m"]
                for i, (line, c) in enumerate(zip(lines, r["constraints"], strict=True), 1):
                    assert line == f"Constraint {i}: {c[f'text_{reg}']}"
            for full in (r[f"full_prompt_{reg}"], r[f"full_prompt_white_{reg}"]):
                assert body in full
                assert f"exactly {r['n']} objects" in full
            assert "white" not in r[f"full_prompt_{reg}"].split(body)[-1]
            assert "white" in r[f"full_prompt_white_{reg}"].split(body)[-1]
        spec = Spec.from_dict(json.loads(r["spec_json"]))
        assert prompt_body(spec, "short") == r["prompt_short"]


_PLAIN = re.compile(r"^How many \{(nps|posnps):([A-Za-z0-9_, ]+)\} are there\?$")


def _holds(scene: Scene, i: int, lit: AttrLit) -> bool:
    return (scene.attribute(i, lit.prop) == lit.value) != lit.negated


def test_plain_count_subquestions_hold_on_witnesses(rows):
    """docs/verbaliser.md §6: "How many objects are there?" / "How many <np> are there?" expectations hold on
    witnesses."""
    checked = 0
    for name in PACKAGE_NAMES:
        for r in rows[name]:
            spec = Spec.from_dict(json.loads(r["spec_json"]))
            for ci, c in enumerate(spec.constraints):
                rendered = [sq for sq in r["subquestions"] if sq["constraint"] == ci]
                assert len(rendered) == len(c.template.subquestions)
                for sq in rendered:
                    assert sq["type"] in ("yes_no", "count", "value") and sq["candidates"]
                if r["label"] != "SAT":
                    continue
                scene = Scene.from_dict(r["witness"])
                bindings: dict[str, int] = {}
                for raw, sq in zip(c.template.subquestions, rendered, strict=True):
                    m = _PLAIN.match(raw["q"])
                    if raw["q"] == "How many objects are there?":
                        count = len(scene)
                    elif m:
                        lits = [c.params[s.strip()] for s in m.group(2).split(",")]
                        if m.group(1) == "posnps":
                            lits = [AttrLit(lit.prop, lit.value, False) for lit in lits]
                        count = sum(all(_holds(scene, i, lit) for lit in lits) for i in range(len(scene)))
                    else:
                        continue
                    _, rhs = parse_expect(sq["expect"])
                    if set(re.findall(r"[A-Za-z_]\w*", rhs)) - set(bindings):
                        continue  # refers to a count bound by a question we do not evaluate
                    assert check_expect(sq["expect"], count, bindings), (r["id"], sq)
                    checked += 1
                    if sq["bind"]:
                        bindings[sq["bind"]] = count
    assert checked > 400


# ---------------------------------------------------------------------------------------------
# Dataset card
# ---------------------------------------------------------------------------------------------
def _front_matter(folder: Path) -> tuple[dict, str, str]:
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    head, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body, head


def test_dataset_card(folder):
    meta, body, head = _front_matter(folder)
    assert "&id" not in head and "*id" not in head
    assert meta["license"] == "cc-by-4.0"
    assert meta["task_categories"] == ["text-to-image"]
    assert meta["pretty_name"]
    assert [c["config_name"] for c in meta["configs"]] == list(PACKAGE_NAMES)
    assert sum(bool(c.get("default")) for c in meta["configs"]) == 1
    for c in meta["configs"]:
        assert c["data_files"] == [{"split": SPLIT, "path": f"data/{c['config_name']}.parquet"}]
        assert (folder / c["data_files"][0]["path"]).is_file()
    yaml_features = features()._to_yaml_list()
    for info in meta["dataset_info"]:
        assert info["features"] == yaml_features
        assert info["splits"][0]["num_examples"] == SIZES[info["config_name"]]
    assert card_metadata()["configs"] == meta["configs"]
    for section in ("## Dataset structure", "## How it was made", "## Prompt template", "## Limitations",
                    "## Licence and attribution", "## Citation", "CLEVR", "@misc{logicval2026", "CC BY 4.0"):
        assert section in body, section
    for col in COLUMNS:
        assert f"| `{col}` |" in body, col
    for name, _f in features().items():
        assert name in COLUMNS


# ---------------------------------------------------------------------------------------------
# Determinism, builder, push, stats
# ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_second_build_in_a_fresh_process_is_byte_identical(folder, tmp_path):
    second = tmp_path / "second"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "dataset_builder" / "build.py"), "--out", str(second), "--no-progress"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == ["README.md", *(f"data/{n}.parquet" for n in sorted(PACKAGE_NAMES))]
    assert sorted(p.relative_to(second).as_posix() for p in second.rglob("*") if p.is_file()) == files
    for f in files:
        assert (folder / f).read_bytes() == (second / f).read_bytes(), f


def test_the_deprecated_generator_based_builder_still_builds(folder, rows, tmp_path):
    """One way builds the dataset (write_dataset); the old builder says so, and still gives the same rows."""
    with pytest.warns(FutureWarning, match="LogicValBuilder is deprecated.*logicval build-dataset"):
        b = LogicValBuilder(config_name="3SAT", cache_dir=str(tmp_path / "gen"))
    b.download_and_prepare()
    ds = b.as_dataset(split=SPLIT)
    assert ds.num_rows == 25 and ds.features == features()
    assert ds["spec_json"] == [r["spec_json"] for r in rows["3SAT"]]
    with pytest.warns(FutureWarning):
        b2 = LogicValBuilder(config_name="1UNSAT", data_dir=str(folder), cache_dir=str(tmp_path / "dir"))
    b2.download_and_prepare()
    ds2 = b2.as_dataset(split=SPLIT)
    assert ds2["id"] == [r["id"] for r in rows["1UNSAT"]]
    assert [c.name for c in LogicValBuilder.BUILDER_CONFIGS] == list(PACKAGE_NAMES)


def _no_network(monkeypatch):
    import huggingface_hub

    def boom(*a, **k):
        raise AssertionError("network call")

    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", boom)
    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", boom)


def _shell(name: str):
    """``main`` of dataset_builder/<name>.py (the shell runs the command of the same name)."""
    sys.path.insert(0, str(REPO))
    try:
        return importlib.import_module(f"dataset_builder.{name}").main
    finally:
        sys.path.remove(str(REPO))


@pytest.mark.parametrize("shell,command", [("build", "build-dataset"), ("push", "push-dataset")])
def test_the_shells_are_the_commands(shell, command, capsys):
    """Dataset_builder/ runs the CLI's own commands (no second argparse to drift)."""
    from logicval_hf.cli.dataset import main as cli

    for main in (_shell(shell), lambda argv: cli([command, *argv])):
        with pytest.raises(SystemExit) as e:
            main(["--help"])
        assert e.value.code == 0
    shell_help, cli_help = capsys.readouterr().out.split("usage: ")[1:]
    assert shell_help == cli_help
    assert "--private" in shell_help or shell == "build"  # the old push shell had drifted without it


def test_push_dry_run_lists_files(folder, monkeypatch, capsys):
    pytest.importorskip("huggingface_hub")
    _no_network(monkeypatch)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert _shell("push")([str(folder), "--repo-id", "someone/logicval", "--dry-run"]) == 0
    files = ["README.md", *(f"data/{n}.parquet" for n in sorted(PACKAGE_NAMES))]
    out = capsys.readouterr().out
    assert "someone/logicval" in out and all(f"  {f}\n" in out for f in files)


def test_push_without_token_is_a_clear_error(folder, monkeypatch, capsys):
    pytest.importorskip("huggingface_hub")
    _no_network(monkeypatch)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert _shell("push")([str(folder), "--repo-id", "someone/logicval"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("logicval: error: no Hugging Face token") and "HF_TOKEN" in err
    with pytest.raises(ValueError, match="owner/name"):
        push_dataset(folder, repo_id="no-slash", token="t")


def test_push_uploads_the_folder(folder, monkeypatch):
    huggingface_hub = pytest.importorskip("huggingface_hub")
    calls = []
    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo",
                        lambda self, repo_id, **kw: calls.append(("create_repo", repo_id, kw)))
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder",
                        lambda self, **kw: calls.append(("upload_folder", self.token, kw)))
    monkeypatch.setenv("HF_TOKEN", "hf_from_env")
    assert _shell("push")([str(folder), "--repo-id", "someone/logicval", "--private"]) == 0
    assert calls[0] == ("create_repo", "someone/logicval", {"repo_type": "dataset", "exist_ok": True,
                                                            "private": True})
    name, token, kw = calls[1]
    assert name == "upload_folder" and token == "hf_from_env"
    assert kw["repo_id"] == "someone/logicval" and kw["repo_type"] == "dataset"
    assert Path(kw["folder_path"]) == folder


def test_the_card_and_the_push_follow_the_hub_namespace(folder, tmp_path, monkeypatch, capsys):
    """No placeholder namespace; one setting (LOGICVAL_HUB_NAMESPACE) with one default."""
    from logicval_hf.cli.dataset import main as cli
    from logicval_hf.common.hub import DEFAULT_NAMESPACE

    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "owner/" not in card and f'load_dataset("{DEFAULT_NAMESPACE}/logicval", "3SAT"' in card
    _no_network(monkeypatch)
    monkeypatch.delenv("LOGICVAL_HUB_NAMESPACE", raising=False)
    assert cli(["push-dataset", str(folder), "--dry-run"]) == 0
    assert f"huggingface.co/datasets/{DEFAULT_NAMESPACE}/logicval" in capsys.readouterr().out
    monkeypatch.setenv("LOGICVAL_HUB_NAMESPACE", "me")
    assert cli(["push-dataset", str(folder), "--dry-run"]) == 0
    assert "huggingface.co/datasets/me/logicval" in capsys.readouterr().out
    copy = tmp_path / "copy"
    write_dataset(copy, benchmark=cached_benchmark(DEFAULT_SEED))
    assert 'load_dataset("me/logicval", "3SAT"' in (copy / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_stats_command_prints_tables_and_writes_png(folder, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from logicval_hf.cli.dataset import main

    png = tmp_path / "plots" / "stats.png"
    assert main(["stats", str(folder), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    for title in ("per package and label", "per package and class", "per package and scene size n",
                  "per package and template"):
        assert title in out
    assert re.search(r"^SAT\s+355\s+0\s+25\s+0\s+25\s+0\s+405$", out, re.M)
    assert re.search(r"^C1/1prop\s+5\s", out, re.M)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["stats", str(tmp_path / "missing")]) == 2


def test_subcommands_register_and_dispatch(folder, monkeypatch, tmp_path, capsys):
    import argparse

    from logicval_hf.benchmark import dataset as hub_builder
    from logicval_hf.cli import dataset as dataset_cli

    parser = argparse.ArgumentParser(prog="logicval")
    dataset_cli.add_subcommands(parser.add_subparsers(dest="command", required=True))
    a = parser.parse_args(["build-dataset", "--out", "x"])
    assert a.func is dataset_cli.cmd_build_dataset and a.seed is None
    a = parser.parse_args(["push-dataset", "d", "--repo-id", "o/n", "--dry-run"])
    assert a.func is dataset_cli.cmd_push_dataset and a.dry_run and a.repo_id == "o/n"
    a = parser.parse_args(["stats", "d", "--plot", "p.png"])
    assert a.func is dataset_cli.cmd_stats and a.plot == "p.png"

    seen = {}

    def fake_write(out, seed, progress):
        seen.update(out=out, seed=seed)
        return {"folder": str(out), "files": ["README.md"], "rows": {"1SAT": 355}, "seconds": {}}

    monkeypatch.setattr(hub_builder, "write_dataset", fake_write)
    assert dataset_cli.main(["build-dataset", "--out", str(tmp_path / "o"), "--seed", "7", "--no-progress"]) == 0
    assert seen == {"out": str(tmp_path / "o"), "seed": 7}
    assert dataset_cli.main(["build-dataset", "--out", str(tmp_path / "o"), "--no-progress"]) == 0
    assert seen["seed"] == DEFAULT_SEED
    assert dataset_cli.main(["push-dataset", str(folder), "--repo-id", "o/n", "--dry-run"]) == 0
    assert "data/6UNSAT.parquet" in capsys.readouterr().out
