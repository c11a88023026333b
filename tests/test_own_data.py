"""data=items (a stream from the user's own file) and data=wordfreq (real frequencies, synthetic order)."""

import socket

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import CONF_DIR

from dpstream.data.items import items_stream
from dpstream.data.stream import load_stream
from dpstream.data.words import exact_counts, word_counts, wordfreq_stream
from dpstream.hashing import canonical_key, draw_item_key, keyed_key
from dpstream.trials.heavy_hitters import load_trace
from dpstream.trials.sketch import run_trial

SKETCH_USES = ["width", "depth", "memory_kb"]  # as conf/mechanism/cms.yaml declares
INTS = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, -7]
WORDS = ["the", "cat", "the", "dög", "10.0.0.1", "the", "7"]
SEED = 5
KEY = draw_item_key(SEED)  # the secret of the item hash that seed draws


def _keyed(values):
    return [keyed_key(v, KEY) for v in values]


def _write(tmp_path, fmt, values):
    """``values`` as a file of format ``fmt`` (csv and parquet: in the column 'item' between two others)."""
    if fmt == "txt":
        path = tmp_path / "items.txt"
        path.write_text("\n".join(map(str, values)) + "\n", encoding="utf-8")
    elif fmt == "npy":
        path = tmp_path / "items.npy"
        np.save(path, np.array(values))
    else:
        frame = pd.DataFrame({"time": range(len(values)), "item": values, "size": 60})
        path = tmp_path / f"items.{fmt}"
        frame.to_csv(path, index=False) if fmt == "csv" else frame.to_parquet(path, index=False)
    return path


FORMATS = [("txt", None), ("csv", "item"), ("csv", 1), ("npy", None), ("parquet", "item"), ("parquet", 1)]


@pytest.mark.parametrize(("fmt", "column"), FORMATS)
def test_integer_items_round_trip_in_every_format(tmp_path, fmt, column):
    read = items_stream(str(_write(tmp_path, fmt, INTS)), column=column, seed=SEED)
    assert read.items.dtype == np.int64 and read.items.tolist() == INTS[:-1] + [keyed_key(-7, KEY)]
    assert read.labels == {keyed_key(-7, KEY): "-7"}  # outside [0, 2^61 - 1): keyed, and labelled by its text
    assert read.row() == {"rows_read": len(INTS), "rows_skipped": 0}
    in_range = items_stream(str(_write(tmp_path, fmt, INTS[:-1])), column=column)  # any seed: itself
    assert in_range.items.tolist() == INTS[:-1] and in_range.labels is None and in_range.label_delta == 0


@pytest.mark.parametrize(("fmt", "column"), FORMATS)
def test_string_items_are_hashed_stably_and_map_back(tmp_path, fmt, column):
    path = str(_write(tmp_path, fmt, WORDS))
    read = items_stream(path, column=column, cache_dir=tmp_path / "cache", seed=SEED)
    assert read.items.dtype == np.int64 and read.items.tolist() == _keyed(WORDS)
    assert [read.labels[i] for i in read.items.tolist()] == WORDS
    cached = items_stream(path, column=column, cache_dir=tmp_path / "cache", seed=SEED)  # from the .npz cache
    assert cached.items.tolist() == read.items.tolist() and cached.labels == read.labels
    assert keyed_key("7", KEY) != 7  # a mixed column hashes "7" too: it is not the integer 7
    other = items_stream(path, column=column, cache_dir=tmp_path / "cache", seed=SEED + 1)  # another secret key
    assert set(other.items.tolist()).isdisjoint(read.items.tolist()) and sorted(other.labels.values()) == sorted(
        set(WORDS))


def test_the_same_string_is_the_same_item_in_every_file_under_one_seed(tmp_path):
    a = items_stream(str(_write(tmp_path, "txt", ["x", "the", "y"])), seed=SEED)
    b = items_stream(str(_write(tmp_path, "csv", ["the", "z"])), column="item", seed=SEED)
    assert a.items[1] == b.items[0] == keyed_key("the", KEY) and a.items[0] != b.items[0]


def test_empty_values_are_skipped_and_counted_and_limit_keeps_the_first_items(tmp_path):
    txt = tmp_path / "gaps.txt"
    txt.write_text("a\n\n  b  \n \na\nc\n")
    read = items_stream(str(txt), limit=2, seed=SEED)
    assert read.items.tolist() == _keyed(["a", "b"])  # stripped; blank lines skipped
    assert read.row() == {"rows_read": 6, "rows_skipped": 2}
    floats = tmp_path / "holes.parquet"
    pd.DataFrame({"item": [1.0, np.nan, 3.0, 4.0]}).to_parquet(floats)  # an integer column with a null
    read = items_stream(str(floats))
    assert read.items.tolist() == [1, 3, 4] and read.row() == {"rows_read": 4, "rows_skipped": 1}


def test_keeping_under_half_of_the_rows_warns_with_the_counts(tmp_path, recwarn):
    csv = tmp_path / "sparse.csv"
    csv.write_text("id,item\n1,a\n2,\n3,\n4,b\n")
    assert items_stream(str(csv), column="item").row() == {"rows_read": 4, "rows_skipped": 2}  # half: no warning
    assert not [w for w in recwarn if "under half" in str(w.message)]
    csv.write_text("id,item\n1,a\n2,\n3,\n4,\n")
    with pytest.warns(UserWarning, match=r"sparse.csv, column 'item': kept 1 of 4 rows \(skipped 3: empty"):
        items_stream(str(csv), column="item")


@pytest.mark.parametrize(("fmt", "column", "match"), [
    ("csv", "src", r"items.csv: no column 'src'; its columns: \['time', 'item', 'size'\]"),
    ("csv", 3, r"items.csv: no column 3 \(0-based\): the file has 3 column"),
    ("parquet", "src", r"items.parquet: no column 'src'; its columns: \['time', 'item', 'size'\]"),
    ("parquet", 7, r"items.parquet: no column 7 \(0-based\)"),
    ("txt", 1, r"items.txt: a .txt file has one item per line, so no column 1"),
    ("npy", 1, r"items.npy: an array of shape \(3,\) has no item column 1"),
])
def test_missing_column_names_the_file_and_the_column(tmp_path, fmt, column, match):
    with pytest.raises(ValueError, match=match):
        items_stream(str(_write(tmp_path, fmt, [1, 2, 3])), column=column)


def test_missing_or_empty_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt' does not exist"):
        items_stream(str(tmp_path / "nope.txt"))
    with pytest.raises(ValueError, match="no items file given"):
        items_stream(None)
    for name, write in [("e.txt", lambda p: p.write_text("")), ("e.csv", lambda p: p.write_text("")),
                        ("e.npy", lambda p: np.save(p, np.array([], dtype=np.int64))),
                        ("e.parquet", lambda p: pd.DataFrame({"item": pd.Series([], dtype="int64")}).to_parquet(p))]:
        write(tmp_path / name)
        with pytest.raises(ValueError, match=f"{name}.*(empty|no rows)"):
            items_stream(str(tmp_path / name))
    only_header = tmp_path / "h.csv"
    only_header.write_text("id,item\n")
    with pytest.raises(ValueError, match=r"h.csv, column 'item': the file is empty \(no rows"):
        items_stream(str(only_header), column="item")
    blank = tmp_path / "blank.txt"
    blank.write_text("\n \n\n")
    with pytest.raises(ValueError, match=r"blank.txt: no items \(3 rows, all empty"):
        items_stream(str(blank))
    unknown = tmp_path / "items.dat"
    unknown.write_text("1\n")
    with pytest.raises(ValueError, match=r"cannot tell the format of .*items.dat"):
        items_stream(str(unknown))


def test_items_config_runs_the_sketch_trial_and_the_heavy_hitter_loader(tmp_path):
    path = _write(tmp_path, "txt", ["a"] * 600 + ["b"] * 300 + [f"w{i}" for i in range(100)] + [""] * 10)
    data = yaml.safe_load((CONF_DIR / "data" / "items.yaml").read_text()) | {"path": str(path), "path_xxh3": "x"}
    params = {"mechanism": {"name": "cms", "_target_": "dpstream.sketches.CMS", "uses": SKETCH_USES},
              "data": data, "epsilon": 1.0,
              "delta": 0.01, "width": 512, "depth": 3, "memory_kb": None, "data_dir": str(tmp_path)}
    row = run_trial(params, np.random.SeedSequence(0, spawn_key=(0,)))
    assert (row["length"], row["rows_read"], row["rows_skipped"]) == (1000, 1010, 10)
    stream, read = load_trace(data, str(tmp_path), np.random.SeedSequence(SEED))
    assert stream.dtype == np.int64 and (stream == keyed_key("a", KEY)).sum() == 600 and read["rows_skipped"] == 10


# -- wordfreq ---------------------------------------------------------------------------------------------------

SMALL = {"language": "en", "length": 50_000, "n_words": 2000}


def test_exact_counts_sum_to_the_length_and_round_each_share():
    p = np.array([0.5, 0.25, 0.125, 0.0625, 0.0625])
    np.testing.assert_array_equal(exact_counts(p, 16), [8, 4, 2, 1, 1])
    p = np.random.default_rng(0).dirichlet(np.ones(300))
    counts = exact_counts(p, 10_007)
    assert counts.sum() == 10_007 and np.all(np.abs(counts - p * 10_007) < 1)


def test_wordfreq_stream_holds_exactly_the_rounded_real_counts():
    words, items, counts = word_counts(**SMALL)
    assert words[0] == "the" and items[0] == canonical_key("the") and counts.sum() == SMALL["length"]
    stream = wordfreq_stream(**SMALL, seed=1)
    seen, n = np.unique(stream, return_counts=True)
    present = counts > 0
    order = np.argsort(items[present])
    np.testing.assert_array_equal(seen, items[present][order])
    np.testing.assert_array_equal(n, counts[present][order])


def test_wordfreq_order_is_seeded(tmp_path):
    a = wordfreq_stream(**SMALL, seed=np.random.SeedSequence(5), cache_dir=tmp_path)
    again = wordfreq_stream(**SMALL, seed=np.random.SeedSequence(5))
    other = wordfreq_stream(**SMALL, seed=np.random.SeedSequence(6), cache_dir=tmp_path)
    np.testing.assert_array_equal(a, again)
    assert not np.array_equal(a, other) and np.array_equal(np.sort(a), np.sort(other))
    assert len(list((tmp_path / "wordfreq").glob("*.npy"))) == 2


def test_wordfreq_needs_no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("data=wordfreq tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert wordfreq_stream(language="de", length=1000, n_words=500, seed=0).size == 1000


def test_wordfreq_rejects_bad_parameters():
    with pytest.raises(ValueError, match="unknown wordfreq language .* 'xx'; allowed: .*en"):
        wordfreq_stream(language="xx", length=10)
    with pytest.raises(ValueError, match="n_words must be <= "):
        word_counts(n_words=10**9)
    with pytest.raises(ValueError, match="length must be an integer >= 1, got 0"):
        wordfreq_stream(length=0)


def test_wordfreq_config_loads_through_the_shared_call(tmp_path):
    data = yaml.safe_load((CONF_DIR / "data" / "wordfreq.yaml").read_text()) | {"length": 4096, "n_words": 300}
    stream, read = load_stream(data, np.random.SeedSequence(2), str(tmp_path))
    assert stream.size == 4096 and read == {} and data["synthetic"] is True
    assert "real word frequencies" in data["description"] and "synthetic order" in data["description"]


def test_a_data_key_the_source_does_not_take_is_a_clear_error(tmp_path):
    """E.g. ``experiment=fig3b data=items``: fig3b's fixed data.skew stays in the data config."""
    data = yaml.safe_load((CONF_DIR / "data" / "items.yaml").read_text()) | {"path": "x.txt", "skew": 1.3}
    with pytest.raises(ValueError, match=r"data='items' has no parameter\(s\) skew \(set to 1.3\); its parameters: "
                                         r"path, format, column, header, limit"):
        load_stream(data, np.random.SeedSequence(0), str(tmp_path))


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_the_key_column_of_a_several_column_file_is_required(tmp_path, fmt):
    with pytest.raises(ValueError, match=rf"items.{fmt}: which column holds the items\? Set column .*"
                                         r"its columns: \['time', 'item', 'size'\]"):
        items_stream(str(_write(tmp_path, fmt, INTS)))
    single = tmp_path / f"single.{fmt}"
    frame = pd.DataFrame({"item": INTS})
    frame.to_csv(single, index=False) if fmt == "csv" else frame.to_parquet(single, index=False)
    assert items_stream(str(single), seed=SEED).items.tolist() == INTS[:-1] + [keyed_key(-7, KEY)]
