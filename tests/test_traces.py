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
