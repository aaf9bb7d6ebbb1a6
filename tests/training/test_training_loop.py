"""The loop both scene-parser scripts train with (`logicval_hf.training.loop`): batches prepared by worker
processes, the device the network trains on, and the schedule run by the clock."""

from __future__ import annotations

import pytest
from helpers import render_folder

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
pytest.importorskip("cv2")

from logicval_hf.training import loop  # noqa: E402


def _weights(path):
    return torch.load(path, map_location="cpu", weights_only=False)["model"]


def _same(a, b) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.allclose(a[k].float(), b[k].float(), atol=1e-5), k


@pytest.fixture(scope="module")
def renders(tmp_path_factory):
    return render_folder(tmp_path_factory.mktemp("renders"), 4, masks=True)


def _classifier(renders, out, *extra):
    from logicval_hf.training import train_attribute_classifier as A

    return A.main(["--data", str(renders), "--out", str(out), "--steps", "3", "--batch-size", "6",
                   "--export-every", "100", "--no-progress", "--threads", "1", *extra])


def _detector(renders, out, *extra):
    from logicval_hf.training import train_scene_parser as T

    return T.main(["--data", str(renders), "--out", str(out), "--steps", "2", "--batch-size", "2",
                   "--canvas", "160", "128", "--numpy-val", "1", "--export-every", "100",
                   "--no-progress", "--threads", "1", *extra])


def test_worker_processes_train_the_classifier_the_training_process_would(renders, tmp_path):
    assert _classifier(renders, tmp_path / "inline") == 0
    assert _classifier(renders, tmp_path / "workers", "--workers", "2") == 0
    _same(_weights(tmp_path / "inline" / "last.pt"), _weights(tmp_path / "workers" / "last.pt"))


def test_worker_processes_train_the_detector_the_training_process_would(renders, tmp_path):
    assert _detector(renders, tmp_path / "inline") == 0
    assert _detector(renders, tmp_path / "workers", "--workers", "2") == 0
    _same(_weights(tmp_path / "inline" / "last.pt"), _weights(tmp_path / "workers" / "last.pt"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_run_on_cuda_resumes_on_the_cpu(renders, tmp_path):
    out = tmp_path / "cuda"
    assert _classifier(renders, out, "--device", "cuda", "--workers", "2",
                       "--export", str(tmp_path / "attrs.onnx")) == 0
    weights = _weights(out / "last.pt")
    assert all(v.device.type == "cpu" for v in weights.values())  # the network is back on the CPU at the end
    assert (tmp_path / "attrs.onnx").is_file()
    from logicval_hf.training import train_attribute_classifier as A

    argv = ["--data", str(renders), "--out", str(out), "--steps", "4", "--batch-size", "6",
            "--no-progress", "--threads", "1"]
    assert A.main(argv) == 0  # the CUDA run's optimiser state resumes on the CPU
    assert torch.load(out / "last.pt", map_location="cpu", weights_only=False)["step"] == 4
    assert _detector(renders, tmp_path / "det", "--device", "cuda") == 0


def test_an_unknown_device_is_one_clear_error(renders, tmp_path):
    with pytest.raises(SystemExit, match="--device warp9: not usable here"):
        _classifier(renders, tmp_path / "o", "--device", "warp9")


def test_time_annealing_needs_a_time_limit(renders, tmp_path):
    with pytest.raises(SystemExit, match="--anneal-by-time needs --max-minutes"):
        _detector(renders, tmp_path / "o", "--anneal-by-time")


def test_negative_workers_are_refused(renders, tmp_path):
    with pytest.raises(SystemExit, match="--workers must be >= 0"):
        _classifier(renders, tmp_path / "o", "--workers", "-1")


@pytest.mark.parametrize(("step", "minutes", "limit", "expected"), [
    (10, 5.0, 0, 10),       # no clock: the step count alone
    (10, 5.0, 10.0, 500),   # half the time gone: half the schedule
    (700, 5.0, 10.0, 700),  # the step count ahead of the clock
    (10, 30.0, 10.0, 1000),  # past the limit: the schedule's end, not beyond
])
def test_the_schedule_follows_the_further_of_steps_and_clock(step, minutes, limit, expected):
    assert loop.scheduled_step(step, 1000, minutes, limit) == expected


def test_annealing_by_time_ends_at_the_schedules_floor():
    last = loop.lr_at(loop.scheduled_step(0, 1000, 12.0, 10.0), 1000, 1e-3, 50)
    assert last == pytest.approx(0.02e-3)


def test_batches_arrive_in_step_order_from_workers():
    got = list(loop.batches(lambda step: torch.tensor([step]), 5, 12, workers=2))
    assert [int(b) for b in got] == list(range(5, 12))


def test_resuming_another_network_is_one_clear_error(renders, tmp_path):
    assert _classifier(renders, tmp_path / "o") == 0
    with pytest.raises(SystemExit, match=r"holds a checkpoint of another network .*give a new --out"):
        _detector(renders, tmp_path / "o")  # a detector run into the folder of a classifier run


def test_a_flag_the_recipe_does_not_take_is_one_line_listing_the_supported(renders, tmp_path, capsys):
    for flag in ("--width", "--hard-mining", "--balance-crops"):
        with pytest.raises(SystemExit) as e:
            _classifier(renders, tmp_path / "o", flag, "1")
        assert e.value.code == 2
        line = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"unsupported argument {flag} 1 (supported: " in line and "--white-balance" in line
    for flag in ("--hidden-weight", "--flip-default", "--visible-peaks", "--width"):
        with pytest.raises(SystemExit):
            _detector(renders, tmp_path / "o", flag)
        assert f"unsupported argument {flag}" in capsys.readouterr().err
