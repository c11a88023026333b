"""benchmarks/commit_pair.py: an old commit's package beside the new one in one process, sharing nothing.

HEAD itself is exported as the old package: the two arms run the same code, so the same seeds must release the same
values (a real check of the export and of the workloads' construction by configuration names), and the isolation
checks must hold. Timing is not asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dpstream
from dpstream.counters import COUNTERS

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "commit_pair.py"
NAME = "dpstream_pair_test"
SIZES = argparse.Namespace(cells=256, length=5000, hh_length=4000, qr_n=300, trace_packets=3000,
                           watch_packets=1 << 18, repeats=5, clock="cpu", keep_gc=False, layout_seed=None, rotation=0)
ROWS = ("binary derived push", "binary derived release", "binary stored push", "honaker stored release",
        "LazyCMS derived multiply-shift (w 55) extend")
"""Rows whose kernels the exported package compiles in about 12 s of CPU (exact discrete noise alone takes 18 s)."""


def load_module():
    spec = importlib.util.spec_from_file_location("commit_pair", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(the tool, HEAD exported and imported as NAME); the package and its path are removed afterwards."""
    tool = load_module()
    root = tool.export("HEAD", tmp_path_factory.mktemp("old"), NAME)
    old = tool.import_old(root)
    yield tool, old
    sys.path.remove(str(root.parent))
    for key in list(tool.modules_of(NAME)):
        del sys.modules[key]


def test_the_export_renames_every_module_path(pair):
    tool, old = pair
    root = tool.package_root(old)
    texts = [p.read_text() for p in root.rglob("*") if p.is_file() and p.suffix in tool.TEXT_SUFFIXES]
    assert len(texts) > 100
    assert not any(tool.WORD.search(t) for t in texts)
    assert f"from {NAME}.counters" in (root / "counters" / "__init__.py").read_text()
    assert "dpstream_sources.digest" in (root / "_numba_cache.py").read_text()  # a file name, not the package
    assert 'person=b"dpstream-epoch"' in (root / "heavy_hitters" / "epochs.py").read_text()  # a hash's, kept
    copy = tool.renamed(root, root.parent / "copy" / f"{NAME}_copy")  # a renamed package renamed again
    text = (copy / "counters" / "__init__.py").read_text()
    assert f"from {NAME}_copy.counters" in text and f"from {NAME}.counters" not in text


def released_by_both(tool, workload, old) -> list[np.ndarray]:
    """The outputs of ``workload`` built and run once in the old and the new package, asserted non-empty and equal."""
    arms = [workload.build(pkg, SIZES) for pkg in (old, dpstream)]
    for arm in arms:
        arm.run()
    outputs = [arm.output() for arm in arms]
    assert outputs[0].size > 0 and tool.same_output(*outputs), workload.name
    return outputs


def test_both_arms_release_the_same_values_and_share_no_module_or_kernel_cache(pair):
    tool, old = pair
    work = {w.name: w for w in tool.workloads(COUNTERS)}
    assert ("binary", "discrete_secure") in COUNTERS
    for name in ROWS:
        outputs = released_by_both(tool, work[name], old)
        if outputs[0].dtype.kind == "f" and not np.array_equal(outputs[0], np.round(outputs[0])):
            # the comparison can fail: one noise value moved by 1e-6 of itself is a different release
            moved = outputs[1].copy()
            moved[0] *= 1 + 1e-6
            assert not tool.same_output(outputs[0], moved), name
    counts = tool.check_isolation(old, dpstream)
    assert counts[f"{NAME}_modules"] > 20 and counts[f"{NAME}_cached_kernels"] > 10
    old_root = tool.package_root(old)
    assert all(Path(m.__file__).resolve().is_relative_to(old_root) for m in tool.modules_of(NAME).values())
    assert not any(m is n for m in tool.modules_of(NAME).values() for n in tool.modules_of("dpstream").values())
    old_caches = tool.numba_cache_paths(tool.modules_of(NAME).values())
    assert all(p.is_relative_to(old_root) for p in old_caches)  # beside the exported sources, not the new ones
    assert any(old_root.rglob("*.nbi"))
    assert not set(old_caches) & set(tool.numba_cache_paths(tool.modules_of("dpstream").values()))


@pytest.mark.long
def test_the_speed_pages_other_sections_release_the_same_values_in_both_arms(pair):
    """The query-release game, the trace readers, the sparse vector and ``dpstream watch`` rows, old = new."""
    tool, old = pair
    names = ("Alg 3 game (d 12, n --qr-n) play", "trace pcapng read (--trace-packets)",
             "trace pcap read (--trace-packets)", "trace csv read (--trace-packets)", "SVT Sparse continuous run",
             "SVT ThresholdMonitor discrete_secure run", "watch end to end derived modp (--watch-packets)")
    work = {w.name: w for w in tool.workloads([])}
    for name in names:
        released_by_both(tool, work[name], old)
    traces = [work[f"trace {kind} read (--trace-packets)"].build(dpstream, SIZES) for kind in ("pcapng", "pcap")]
    for arm in traces:
        arm.run()
    assert np.array_equal(*(arm.output() for arm in traces))  # one set of sources in both files
    assert traces[0].output().size == SIZES.trace_packets


def test_the_speed_pages_own_settings_release_the_same_values_in_both_arms(pair):
    """Rows at the page's own settings: a per-draw row, the exact Laplace draw, watch with a host cap in JSON lines."""
    tool, old = pair
    work = {w.name: w for w in tool.page_rows()}
    for name in ("binary derived draw (50,000 counters at step 1)", "SVT discrete_secure Laplace draw (200,000)"):
        released_by_both(tool, work[name], old)
    capped = "watch end to end derived modp, flush every 64, host cap 8, JSON lines (--watch-packets)"
    lines = released_by_both(tool, work[capped], old)[0]
    second = 3 + 2 * int(lines[2])  # two lines: step, epoch, items, then 2 numbers an item
    assert (lines[0], lines[1], lines[second]) == (1 << 17, 0, 1 << 18)
    assert lines.size == second + 3 + 2 * int(lines[second + 2])


def test_a_row_with_its_own_clock_is_timed_on_it_whatever_clock_the_run_has(pair, monkeypatch):
    """The page's wall-clock game row: ``Workload.clock`` overrides ``--clock`` (here cpu) for that row only."""
    tool, old = pair
    read: list[str] = []
    monkeypatch.setitem(tool.CLOCKS, "wall", lambda: read.append("wall") or time.perf_counter())
    monkeypatch.setitem(tool.CLOCKS, "cpu", lambda: read.append("cpu") or time.process_time())
    asleep = tool.Workload("asleep", lambda pkg, sizes: tool.Arm(lambda: time.sleep(0.025), lambda: np.ones(1)),
                           clock="wall")
    (row,) = tool.measure([asleep], {"old": old, "new": dpstream}, SIZES)
    assert set(read) == {"wall"} and row["ratio"] == pytest.approx(1.0, rel=0.5)  # a sleep takes no CPU time
    assert [w.clock for w in tool.page_rows() if "game" in w.name] == [None, "wall"]


def test_a_row_has_the_speed_page_shape_and_the_issues_verdict(pair):
    tool, old = pair
    work = [w for w in tool.workloads(COUNTERS) if w.name == "binary derived push"]
    (row,) = tool.measure(work, {"old": old, "new": dpstream}, SIZES)
    assert row["name"] == "binary derived push, new" and row["reference"] == "binary derived push, old"
    assert row["repeats"] == 5 and row["low"] <= row["ratio"] <= row["high"] and row["same_output"]
    assert row["note"] == "" and 1 <= row["calls_per_repetition"] <= (tool.HORIZON // tool.PUSH_STEPS - 2) // 5
    assert row["verdict"] == tool.verdict(row["low"], row["high"]) and row["met"] == (row["verdict"] != "worse")
    assert [tool.verdict(*i) for i in ((0.5, 0.99), (0.9, 1.1), (1.01, 2.0))] == ["worse", "same within noise",
                                                                                 "better"]
    control = {"low": 0.97, "high": 1.01}
    assert [tool.beyond({"low": lo, "high": hi}, control) for lo, hi in ((0.8, 0.96), (0.9, 0.98), (1.02, 1.1))] == [
        "worse", "same within noise", "better"]


def test_a_layout_builds_the_arms_in_a_rotated_order_and_releases_the_same_values(pair):
    tool, old = pair
    (work,) = [w for w in tool.workloads(COUNTERS) if w.name == "binary derived release"]
    order = []

    def build(pkg, sizes):
        order.append(pkg.__name__)
        return work.build(pkg, sizes)

    packages = {"old": old, "new": dpstream}
    for seed in (0, 1, 2):
        sizes = argparse.Namespace(**{**vars(SIZES), "layout_seed": seed, "rotation": seed})
        order.clear()
        arms = tool.built_arms(tool.Workload(work.name, build), packages, sizes, np.random.default_rng(seed))
        assert list(arms) == ["old", "new"]  # the caller's order, whatever the build order
        assert order == [[NAME, "dpstream"], ["dpstream", NAME]][seed % 2]
        for arm in arms.values():
            arm.run()
        assert tool.same_output(*(arm.output() for arm in arms.values()))
    pads = [tool.layout_pad(np.random.default_rng(s)).size for s in range(20)]
    assert all(16 <= n <= 65536 and n % 16 == 0 for n in pads) and len(set(pads)) > 10


def fake_run(ratios, controls, name="binary derived push"):
    return {"rows": [{"name": f"{name}, new", "reference": f"{name}, old", "target": "t", "ratio": r, "low": r * 0.99,
                      "high": r * 1.01, "repeats": 21, "candidate_seconds": 1.0, "reference_seconds": r,
                      "same_output": True, "calls_per_repetition": 3, "control": {"ratio": c, "low": c, "high": c}}
                     for r, c in zip(ratios, controls, strict=True)]}


def test_pooled_rows_take_the_median_and_range_over_processes_and_are_worse_only_if_every_process_is():
    tool = load_module()
    runs = [fake_run([0.97, 0.95], [1.0, 0.99]), fake_run([0.99, 1.01], [1.01, 0.97]),
            fake_run([0.98, 0.96], [0.98, 1.02])]
    first, second = tool.pooled(runs)
    assert (first["ratio"], first["low"], first["high"]) == (0.98, 0.97, 0.99)
    assert first["coverage"] == 0.75 and first["repeats"] == 3 and first["repeats_per_process"] == 21
    assert len(first["processes"]) == 3
    assert first["verdict"] == "worse" and not first["met"]  # below 1 in every process
    assert first["control"] == {"ratio": 1.0, "low": 0.98, "high": 1.01}
    assert first["control_verdict"] == "same within noise" and first["beyond_control"] == "same within noise"
    assert second["verdict"] == "same within noise" and second["met"]  # one process of three at 1.01
    renamed = fake_run([0.98, 0.96], [0.98, 1.02], name="other")
    with pytest.raises(ValueError, match="other rows"):
        tool.pooled([runs[0], renamed])


def test_a_process_of_a_pooled_run_gets_every_setting_and_the_resolved_commits():
    tool = load_module()
    args = tool.parse(["--old", "main", "--processes", "6", "--repeats", "7", "--cells", "64", "--only=--weird",
                       "--only", "binary", "24 KB", "--no-control", "--keep-gc", "--layout-entropy", "40",
                       "--qr-n", "77", "--trace-packets", "78", "--watch-packets", "79"])
    child = tool.child_command(args, "a" * 40, None, 4, Path("/tmp/x.json"), "c" * 40)
    parsed = tool.parse(child[2:])
    assert parsed.head == "c" * 40  # rows named by the commit the parent read, whatever is committed meanwhile
    assert (parsed.old, parsed.new, parsed.repeats, parsed.cells, parsed.only) == (
        "a" * 40, None, 7, 64, ["--weird", "binary", "24 KB"])
    assert (parsed.layout_seed, parsed.rotation, parsed.processes, parsed.out) == (44, 4, 1, Path("/tmp/x.json"))
    assert not parsed.control and parsed.keep_gc
    assert (parsed.qr_n, parsed.trace_packets, parsed.watch_packets, parsed.only_skipped) == (77, 78, 79, None)
    assert tool.parse(tool.child_command(args, "a" * 40, "b" * 40, 0, Path("/tmp/y.json"))[2:]).new == "b" * 40
    with pytest.raises(SystemExit):
        tool.parse(["--old", "main", "--proc", "6"])  # an abbreviation would reach the processes unfiltered
    with pytest.raises(SystemExit):
        tool.parse(["--old", "main", "--processes", "6", "--layout-seed", "1"])
    assert tool.parse(["--old", "main"]).layout_entropy != tool.parse(["--old", "main"]).layout_entropy


def test_a_row_the_old_commit_cannot_build_is_skipped_with_its_error_and_the_others_kept(pair):
    tool, old = pair
    work = [w for w in tool.workloads([("binary", "derived"), ("binary", "no_such_noise")])
            if w.name in ("binary derived push", "binary no_such_noise push", "LazyCMS discrete_secure 24 KB extend")]

    def refuse_when_called(pkg, sizes):  # as a sketch row: the sketch is made in the call, not when the arm is built
        def run():
            raise TypeError("from_memory() got an unexpected keyword argument 'model'")

        return tool.Arm(run, lambda: None)

    work[2] = tool.Workload(work[2].name, refuse_when_called)
    kept, skipped = tool.buildable(work, old, SIZES)
    assert [w.name for w in kept] == ["binary derived push"]
    assert [row["name"] for row in skipped] == ["binary no_such_noise push", "LazyCMS discrete_secure 24 KB extend"]
    assert skipped[0]["old_error"].startswith("ValueError: ") and "no_such_noise" in skipped[0]["old_error"]
    assert skipped[1]["old_error"] == "TypeError: from_memory() got an unexpected keyword argument 'model'"


def test_only_skipped_keeps_the_rows_an_earlier_run_skipped_and_reaches_every_process(tmp_path):
    tool = load_module()
    record = tmp_path / "earlier.json"
    record.write_text('{"skipped": [{"name": "watch end to end derived modp (--watch-packets)", "old_error": "x"}]}')
    args = tool.parse(["--old", "main", "--processes", "2", "--only-skipped", str(record)])
    assert args.only_skipped == {"watch end to end derived modp (--watch-packets)"}
    assert [w.name for w in tool.workloads([("binary", "derived")]) if tool.selected(w.name, args)] == [
        "watch end to end derived modp (--watch-packets)"]
    assert tool.parse(tool.child_command(args, "a" * 40, None, 1, tmp_path / "x.json")[2:]).only_skipped == (
        args.only_skipped)
    record.write_text("{}")
    with pytest.raises(SystemExit):
        tool.parse(["--old", "main", "--only-skipped", str(record)])
