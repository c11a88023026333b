"""Trace readers (pcap, pcapng, CSV, raw 4- and 13-byte records) and the synthetic caida_like trace."""

import socket
import struct

import dpkt
import numpy as np
import pytest
import yaml
from conftest import CONF_DIR

from dpstream.data.caida_like import (
    PAPER_DISTINCT_SOURCES,
    PAPER_PACKETS,
    calibrate_sources,
    expected_distinct,
    synthetic_caida_like,
)
from dpstream.data.traces import TruncatedTraceError, caida_trace, read_trace

MAC_A, MAC_B = b"\x00\x11\x22\x33\x44\x55", b"\x66\x77\x88\x99\xaa\xbb"
SOURCES = ["10.0.0.1", "192.168.1.7", "10.0.0.1", "8.8.8.8", "172.16.0.9", "10.0.0.1", "1.2.3.4"]


def _ipv4(src: str, dst: str = "10.9.9.9", sport: int = 1234, dport: int = 80) -> dpkt.ip.IP:
    tcp = dpkt.tcp.TCP(sport=sport, dport=dport)
    return dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=dpkt.ip.IP_PROTO_TCP, data=tcp)


def _frames() -> list[tuple[bytes, str]]:
    """Ethernet frames and what the CSV export shows as their source: IPv4 (one VLAN-tagged), IPv6, ARP."""
    out = []
    for i, src in enumerate(SOURCES):
        ip = _ipv4(src, sport=1000 + i)
        if i == 3:  # 802.1Q tag in front of IPv4
            tag = struct.pack(">HH", 5, dpkt.ethernet.ETH_TYPE_IP)
            frame = MAC_A + MAC_B + struct.pack(">H", dpkt.ethernet.ETH_TYPE_8021Q) + tag + bytes(ip)
        else:
            frame = bytes(dpkt.ethernet.Ethernet(src=MAC_B, dst=MAC_A, type=dpkt.ethernet.ETH_TYPE_IP, data=ip))
        out.append((frame, src))
        if i == 1:
            ip6 = dpkt.ip6.IP6(src=b"\xfe\x80" + b"\x00" * 13 + b"\x01", dst=b"\xff\x02" + b"\x00" * 13 + b"\x01",
                               nxt=59, hlim=1, data=b"")
            out.append((bytes(dpkt.ethernet.Ethernet(src=MAC_B, dst=MAC_A, type=dpkt.ethernet.ETH_TYPE_IP6,
                                                     data=ip6)), "fe80::1"))
        if i == 4:
            out.append((bytes(dpkt.ethernet.Ethernet(src=MAC_B, dst=b"\xff" * 6, type=dpkt.ethernet.ETH_TYPE_ARP,
                                                     data=dpkt.arp.ARP())), "66:77:88:99:aa:bb"))
    return out


EXPECTED = np.array([int.from_bytes(socket.inet_aton(s), "big") for s in SOURCES], dtype=np.uint32)
NON_IPV4 = 2


@pytest.fixture
def captures(tmp_path):
    """The same capture written as pcap, pcapng, CSV (Wireshark-like export), raw4 and raw13."""
    frames = _frames()
    paths = {}
    for fmt, writer in (("pcap", dpkt.pcap.Writer), ("pcapng", dpkt.pcapng.Writer)):
        paths[fmt] = tmp_path / f"trace.{fmt}"
        with open(paths[fmt], "wb") as fh:
            w = writer(fh)
            for i, (frame, _) in enumerate(frames):
                w.writepkt(frame, ts=1.0 + i)
    paths["csv"] = tmp_path / "trace.csv"
    lines = ['"No.","Time","Source","Destination","Protocol","Length"']
    lines += [f'{i + 1},{i}.0,{src},10.9.9.9,TCP,60' for i, (_, src) in enumerate(frames)]
    paths["csv"].write_text("\n".join(lines) + "\n")
    paths["raw4"] = tmp_path / "trace.raw4"
    paths["raw4"].write_bytes(EXPECTED.astype(">u4").tobytes())
    paths["raw13"] = tmp_path / "trace.raw13"
    paths["raw13"].write_bytes(b"".join(struct.pack(">IIHHB", int(a), 0x0A090909, 1000 + i, 80, 6)
                                        for i, a in enumerate(EXPECTED)))
    return paths


@pytest.mark.parametrize("fmt", ["pcap", "pcapng", "csv", "raw4", "raw13"])
def test_readers_agree_on_the_same_capture(captures, fmt):
    items, stats = read_trace(captures[fmt], fmt)
    np.testing.assert_array_equal(items, EXPECTED)
    assert stats.items == len(SOURCES)
    assert stats.non_ipv4 == (NON_IPV4 if fmt in ("pcap", "pcapng", "csv") else 0)
    assert stats.truncated == 0


def test_auto_format_detects_every_format(captures):
    for fmt in ("pcap", "pcapng", "csv", "raw4", "raw13"):
        np.testing.assert_array_equal(read_trace(captures[fmt], "auto")[0], EXPECTED)


def test_raw_ip_pcap_link_type(tmp_path):
    path = tmp_path / "raw.pcap"
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=101)
        for src in SOURCES:
            w.writepkt(bytes(_ipv4(src)), ts=1.0)
    np.testing.assert_array_equal(read_trace(path)[0], EXPECTED)


def _cut(path, nbytes):
    data = path.read_bytes()
    path.write_bytes(data[:-nbytes])


@pytest.mark.parametrize(("fmt", "cut"), [("pcap", 5), ("pcap", 60), ("pcapng", 7), ("csv", 4),
                                          ("raw4", 2), ("raw13", 6)])
def test_truncated_final_record_is_an_error_by_default(captures, fmt, cut):
    _cut(captures[fmt], cut)
    with pytest.raises(TruncatedTraceError, match="truncated"):
        read_trace(captures[fmt], fmt)


@pytest.mark.parametrize(("fmt", "cut"), [("pcap", 5), ("pcapng", 7), ("csv", 4), ("raw4", 2), ("raw13", 6)])
def test_truncated_final_record_skipped_and_counted_on_request(captures, fmt, cut):
    _cut(captures[fmt], cut)
    with pytest.warns(UserWarning, match="truncated"):
        items, stats = read_trace(captures[fmt], fmt, on_truncated="skip")
    np.testing.assert_array_equal(items, EXPECTED[:-1])  # the last packet is IPv4: exactly it is lost
    assert stats.truncated == 1


def test_missing_trace_says_how_to_obtain_caida(tmp_path):
    with pytest.raises(FileNotFoundError, match="caida.org"):
        read_trace(tmp_path / "nope.pcap")
    with pytest.raises(ValueError, match="caida.org"):
        caida_trace(None)


def test_unreadable_trace_is_a_clear_error(tmp_path):
    bogus = tmp_path / "bogus.pcap"
    bogus.write_bytes(b"this is not a capture file at all")
    with pytest.raises(ValueError, match="not a readable pcap"):
        read_trace(bogus, "pcap")
    with pytest.raises(ValueError, match="cannot tell the format"):
        read_trace(bogus.rename(tmp_path / "bogus.bin"))
    with pytest.raises(FileNotFoundError, match="not a file"):
        read_trace(tmp_path)


def test_empty_trace_is_a_clear_error(tmp_path):
    empty = tmp_path / "empty.raw4"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="no IPv4 packets"):
        read_trace(empty, "raw4")
    only_v6 = tmp_path / "v6.pcap"
    with open(only_v6, "wb") as fh:
        dpkt.pcap.Writer(fh).writepkt(_frames()[2][0], ts=1.0)
    with pytest.raises(ValueError, match="no IPv4 packets"):
        read_trace(only_v6)


def test_malformed_csv_address_before_the_end_is_an_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("No.,Time,Source\n1,0.0,10.0.0.1\n2,0.1,10.0.300.1\n3,0.2,10.0.0.2\n")
    with pytest.raises(ValueError, match="line 3 .*malformed"):
        read_trace(path)


def test_caida_trace_is_cached_and_cut_to_length(captures, tmp_path, monkeypatch):
    first = caida_trace(str(captures["pcap"]), cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(first.items, EXPECTED)
    monkeypatch.setattr("dpstream.data.traces.read_trace", lambda *a, **k: pytest.fail("cache not used"))
    again = caida_trace(str(captures["pcap"]), length=3, cache_dir=tmp_path / "cache")
    np.testing.assert_array_equal(again.items, EXPECTED[:3])
    assert (again.rows_read, again.rows_skipped) == (first.rows_read, first.rows_skipped) == (9, NON_IPV4)


def test_caida_like_is_calibrated_to_the_papers_distinct_sources():
    n = calibrate_sources(1.0, PAPER_PACKETS, PAPER_DISTINCT_SOURCES)
    assert abs(expected_distinct(n, 1.0, PAPER_PACKETS) - PAPER_DISTINCT_SOURCES) <= 0.001 * PAPER_DISTINCT_SOURCES


def test_caida_like_is_fixed_cached_and_marked_synthetic(tmp_path):
    a = synthetic_caida_like(length=50_000, cache_dir=tmp_path)
    b = synthetic_caida_like(length=50_000, cache_dir=None)
    np.testing.assert_array_equal(a, b)
    assert a.dtype == np.uint32 and list((tmp_path / "caida_like").glob("*.npy"))
    assert not np.array_equal(a, synthetic_caida_like(length=50_000, trace_seed=7))
    conf = yaml.safe_load((CONF_DIR / "data" / "caida_like.yaml").read_text())
    assert conf["synthetic"] is True and "synthetic" in conf["name"] and "SYNTHETIC" in conf["description"]


# -- traces through the trials: the shared data call, rows read / skipped --------------------------------------

def _write_pcap(path, frames):
    with open(path, "wb") as fh:
        writer = dpkt.pcap.Writer(fh)
        for i, frame in enumerate(frames):
            writer.writepkt(frame, ts=1.0 + i)
    return path


def _skewed_pcap(path, n_ipv4, n_other):
    """``n_ipv4`` Ethernet/IPv4 packets, then ``n_other`` non-IPv4 frames: (path, expected sources).

    The sources follow a Zipf(1.5) law over 40 addresses (seeded); the non-IPv4 frames are IPv6 and ARP, as in
    ``_frames``.
    """
    sources = [f"10.0.{i // 250}.{i % 250 + 1}" for i in range(40)]
    frames = [bytes(dpkt.ethernet.Ethernet(src=MAC_B, dst=MAC_A, type=dpkt.ethernet.ETH_TYPE_IP, data=_ipv4(s)))
              for s in sources]
    ranks = np.minimum(np.random.default_rng(7).zipf(1.5, n_ipv4) - 1, len(sources) - 1)
    other = [frame for frame, src in _frames() if ":" in src]
    _write_pcap(path, [frames[r] for r in ranks] + [other[i % len(other)] for i in range(n_other)])
    addresses = np.array([int.from_bytes(socket.inet_aton(s), "big") for s in sources], dtype=np.uint32)
    return path, addresses[ranks]


def test_caida_trace_counts_skipped_records_and_warns_when_it_keeps_under_half(tmp_path):
    path, expected = _skewed_pcap(tmp_path / "t.pcap", 30, 10)
    kept = caida_trace(str(path), seed=123)  # the seed of the shared call is accepted and ignored
    np.testing.assert_array_equal(kept.items, expected)
    assert kept.row() == {"rows_read": 40, "rows_skipped": 10}
    path, expected = _skewed_pcap(tmp_path / "mostly_v6.pcap", 3, 7)
    with pytest.warns(UserWarning, match=r"mostly_v6.pcap: kept 3 of 10 rows \(skipped 7: non-IPv4 7, too short 0"):
        assert caida_trace(str(path)).row() == {"rows_read": 10, "rows_skipped": 7}


def test_half_kept_does_not_warn(tmp_path, recwarn):
    path, _ = _skewed_pcap(tmp_path / "half.pcap", 5, 5)
    assert caida_trace(str(path)).row() == {"rows_read": 10, "rows_skipped": 5}
    assert not [w for w in recwarn if "under half" in str(w.message)]


def test_csv_trace_empty_file_or_missing_column_names_file_and_column(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty.csv is empty: no line to find column 2"):
        read_trace(empty, column=2)
    header_only = tmp_path / "header.csv"
    header_only.write_text("No.,Time,Source\n")
    with pytest.raises(ValueError, match=r"header.csv \(column 'Source'\) holds no IPv4 packets"):
        read_trace(header_only, column="Source")
    trace = tmp_path / "t.csv"
    trace.write_text("No.,Time,Source\n1,0.0,10.0.0.1\n")
    with pytest.raises(ValueError, match=r"t.csv: no column 'src'; its columns: \['No.', 'Time', 'Source'\]"):
        read_trace(trace, column="src")
    with pytest.raises(ValueError, match=r"t.csv: no column 5 \(0-based\): the file has 3 column"):
        read_trace(trace, column=5)
    np.testing.assert_array_equal(read_trace(trace, column="Source")[0], [0x0A000001])


def test_lazycms_runs_on_a_pcap_from_the_command_line_config(tmp_path, compose_cfg):
    """``mechanism=lazycms data=caida data.path=t.pcap`` (once a TypeError: caida_trace got 'seed').

    The trial streams the trace's IPv4 sources and records what it read and skipped.
    """
    from conftest import CONF_DIR

    from dpstream.harness.runner import run

    path, expected = _skewed_pcap(tmp_path / "t.pcap", 3000, 40)
    cfg = compose_cfg(["mechanism=lazycms", "data=caida", f"data.path={path}", "trials=2", "memory_kb=8",
                       f"results_dir={tmp_path / 'results'}", f"data_dir={tmp_path / 'data'}"])
    df = run(cfg, CONF_DIR)[0]
    assert df["length"].tolist() == [3000, 3000] and df["rows_read"].tolist() == [3040, 3040]
    assert df["rows_skipped"].tolist() == [40, 40] and df["data.path_xxh3"].nunique() == 1
    assert np.isfinite(df["are_top15"]).all() and df["are_top15"].nunique() == 2  # same trace, fresh noise


def test_lazyhh_trial_on_a_pcap_scores_against_the_traces_sources(tmp_path):
    from dpstream.trials.heavy_hitters import run_trial

    path, expected = _skewed_pcap(tmp_path / "t.pcap", 4000, 40)
    data = yaml.safe_load((CONF_DIR / "data" / "caida.yaml").read_text()) | {"path": str(path),
                                                                              "path_xxh3": "ignored by the loader"}
    mech = {"name": "lazyhh", "_target_": "dpstream.heavy_hitters.LazyHH", "trial": "x", "private": True, "k": 4,
            "k_tilde": 16, "beta": 5e-4, "metrics_every_output": False, "uses": ["epsilon", "delta"]}
    params = {"epsilon": 6.0, "delta": 1e-3, "width": 55, "depth": 3, "memory_kb": None, "seed": 0, "trial": 0,
              "mechanism": mech, "data": data, "data_dir": str(tmp_path), "profile": {"name": "smoke"}}
    row = run_trial(params, np.random.SeedSequence(0, spawn_key=(0,)))
    assert (row["length"], row["rows_read"], row["rows_skipped"]) == (4000, 4040, 40)
    t = row["output_time"]
    assert t == 4000 // row["output_period"] * row["output_period"] > 0
    _, counts = np.unique(expected[:t], return_counts=True)
    assert row["n_true"] == (counts >= t / 4).sum() >= 1  # Zipf(1.5): the top source holds ~38% > 1/k


def test_csv_source_column_by_header_name_or_found_by_its_tshark_name(tmp_path):
    trace = tmp_path / "export.csv"
    trace.write_text("frame.number,frame.time_relative,ip.src\n1,0.0,10.0.0.1\n2,0.1,\n3,0.2,1.2.3.4\n")
    for column in (None, "ip.src", 2):
        items, stats = read_trace(trace, column=column)
        assert items.tolist() == [0x0A000001, 0x01020304] and stats.non_ipv4 == 1
    ambiguous = tmp_path / "two.csv"
    ambiguous.write_text("a,b\n10.0.0.1,10.0.0.2\n")
    with pytest.raises(ValueError, match=r"two.csv: which column holds the source address.*\['a', 'b'\]"):
        read_trace(ambiguous)


def test_csv_quads_parse_like_the_address_rules(tmp_path):
    values = ["1.2.3.4", " 255.255.255.255 ", "0.0.0.0", "fe80::1", "", "00:11:22:33:44:55", "host", "010.1.1.1"]
    trace = tmp_path / "q.csv"
    trace.write_text("ip.src\n" + "\n".join(f'"{v}"' for v in values) + "\n")
    items, stats = read_trace(trace)
    assert items.tolist() == [0x01020304, 0xFFFFFFFF, 0, 0x0A010101] and stats.non_ipv4 == 4
    for bad in ("1.2.3", "1.2.3.4.5", "256.1.1.1", "1..2.3", "1234.1.1.1"):
        trace.write_text(f"ip.src\n1.1.1.1\n{bad}\n2.2.2.2\n")
        with pytest.raises(ValueError, match=f"line 3 holds a malformed IPv4 address '{bad}'"):
            read_trace(trace)
