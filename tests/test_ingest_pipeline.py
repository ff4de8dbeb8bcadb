"""h5ml.ingest.parallel: ordered_map, the decoding pool every converter uses (issue 5)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import h5ml
from h5ml.errors import IngestError
from h5ml.ingest.parallel import ordered_map


@pytest.mark.parametrize("workers,processes", [(1, False), (3, False), (2, True)], ids=["inline", "threads", "procs"])
def test_results_come_in_task_order_and_failures_are_values(workers: int, processes: bool) -> None:
    """Each task's result (or the exception it raised) comes back with it, in the order of the tasks."""
    tasks = ["7", "-3", "x", "12", "", "5"] * 7
    out = list(ordered_map(int, tasks, workers, processes=processes))
    assert [task for task, _ in out] == tasks
    for task, result in out:
        if task.lstrip("-").isdigit():
            assert result == int(task)
        else:
            assert isinstance(result, ValueError) and "invalid literal" in str(result)


def test_a_worker_process_that_dies_stops_the_conversion() -> None:
    """A worker killed (here: it exits at once) is not one bad file to skip: an IngestError names where it was."""
    with pytest.raises(IngestError, match=r"a worker process ended abruptly .* fewer --workers or without --processes"):
        list(ordered_map(os._exit, [0, 0, 0, 0], 2, processes=True))


def test_a_shuffled_split_with_skipped_samples_records_no_seed(tmp_path: Path) -> None:
    """§7.6: shuffle_seed s means the split is stored in the order write_order(n, s) of its n samples. A streamed
    conversion orders the source samples before decoding; when on_error='skip' leaves one out, the stored order
    is not that of the seed any more, so the split records none (the others still do)."""
    from PIL import Image

    from h5ml.ingest import convert_image_folder
    from h5ml.sampling.seeds import write_order

    for split, count in (("train", 5), ("test", 4)):
        (tmp_path / "src" / split / "cat").mkdir(parents=True)
        for i in range(count):
            Image.new("L", (4, 4), color=i * 40).save(tmp_path / "src" / split / "cat" / f"{i}.png")
    (tmp_path / "src" / "train" / "cat" / "2.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    out = convert_image_folder(
        tmp_path / "src", tmp_path / "o.h5", size=(4, 4), color="L", shuffle=True, seed=7, on_error="skip"
    ).output
    with h5ml.open(out) as ds:
        assert ds["train"].num_samples == 4 and ds["train"].shuffle_seed is None
        test = ds["test"]
        assert test.shuffle_seed == 7
        order = write_order(4, 7).tolist()
        assert test["id"][:].tolist() == [f"test/cat/{i}.png" for i in order]  # the order the seed gives
        assert [int(image[0, 0, 0]) for image in test["image"][:]] == [i * 40 for i in order]
