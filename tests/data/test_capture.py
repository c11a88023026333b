"""The compiled pcap / pcapng scan: keys equal tshark's on crafted valid files, clear errors on malformed ones, fuzz."""

import mmap
import socket
import struct

import dpkt
import numpy as np
import pytest
from capture_files import FIXTURES, MALFORMED, VALID, epb, eth, idb, ipv4, ipv6, pcap, shb, write_valid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpstream.data.capture import MalformedCaptureError, ScanCounts, scan_capture
from dpstream.data.traces import TruncatedTraceError, read_trace


def _keys(path, **kw):
    counts = ScanCounts()
    parts = list(scan_capture(path, counts=counts, **kw))
    return (np.concatenate(parts) if parts else np.empty(0, np.uint32)), counts


def _tshark(name):
    lines = (FIXTURES / f"{name}.txt").read_text().splitlines()
    return np.array([int.from_bytes(socket.inet_aton(s), "big") for s in lines if s], dtype=np.uint32)


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    return write_valid(tmp_path_factory.mktemp("valid"))


def test_fixtures_name_the_tshark_version_and_cover_every_valid_file():
    assert (FIXTURES / "VERSION").read_text().startswith("TShark")
    assert sorted(p.name[:-4] for p in FIXTURES.glob("*.txt")) == sorted(VALID)


@pytest.mark.parametrize("name", sorted(VALID))
def test_keys_equal_tsharks_on_every_valid_file(valid, name):
    keys, counts = _keys(valid[name])
    assert keys.dtype == np.uint32
    np.testing.assert_array_equal(keys, _tshark(name))
    assert counts.truncated == 0


@pytest.mark.parametrize("name", sorted(VALID))
def test_small_windows_and_chunks_give_the_same_keys(valid, name):
    keys, _ = _keys(valid[name], chunk=3, window=64)
    np.testing.assert_array_equal(keys, _tshark(name))


@pytest.mark.parametrize("name", ["pcap_le_us_eth.pcap", "pcap_be_us_eth.pcap"])
def test_dpkt_agrees_on_plain_ethernet_pcap(valid, name):
    with open(valid[name], "rb") as fh:
        ref = [int.from_bytes(e.data.src, "big") for _, buf in dpkt.pcap.Reader(fh)
               if isinstance((e := dpkt.ethernet.Ethernet(buf)).data, dpkt.ip.IP)]
    np.testing.assert_array_equal(_keys(valid[name])[0], np.array(ref, dtype=np.uint32))


def test_ipv6_keyed_on_request_above_every_ipv4_key(valid):
    keys, counts = _keys(valid["pcapng_interfaces.pcapng"], ipv6="key")
    assert keys.dtype == np.int64 and counts.ipv6_keyed == 3
    v6 = keys[keys >= 1 << 32]
    assert v6.size == 3 and (v6 < 2**61).all() and np.unique(v6).size == 3
    np.testing.assert_array_equal(keys[keys < 1 << 32], _tshark("pcapng_interfaces.pcapng"))


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_every_malformed_file_is_a_clear_error(tmp_path, name):
    make, phrase = MALFORMED[name]
    path = tmp_path / name
    path.write_bytes(make())
    with pytest.raises(MalformedCaptureError, match="byte offset") as err:
        read_trace(path)
    assert str(path) in str(err.value) and phrase in str(err.value)


def test_block_past_the_end_is_a_truncated_trace(tmp_path):
    path = tmp_path / "cut.pcapng"
    path.write_bytes(shb() + idb(1) + epb(0, eth(ipv4("1.1.1.1"))) + epb(0, eth(ipv4("2.2.2.2")))[:-8])
    with pytest.raises(TruncatedTraceError, match="truncated"):
        read_trace(path)
    with pytest.warns(UserWarning, match="dropped it"):
        items, stats = read_trace(path, on_truncated="skip")
    assert items.tolist() == [0x01010101] and stats.truncated == 1


@pytest.mark.parametrize("bad_length", [1 << 20, 0x7FFFFFF0, (1 << 32) - 4])
def test_a_bad_block_length_mid_file_is_corruption_not_truncation(tmp_path, bad_length):
    # a length past the end in block 2,500 of 5,000 was taken for a file cut short: on_truncated=skip then kept
    # 2,499 packets and counted 1 skipped
    blocks = [epb(0, eth(ipv4(f"10.0.{i // 256}.{i % 256}"))) for i in range(5000)]
    head = shb() + idb(1)
    at = len(head) + sum(map(len, blocks[:2499]))
    data = head + b"".join(blocks)
    path = tmp_path / "corrupt.pcapng"
    path.write_bytes(data[:at + 4] + struct.pack("<I", bad_length) + data[at + 8:])
    for on_truncated in ("error", "skip"):
        with pytest.raises(MalformedCaptureError, match=f"byte offset {at}: bad block length {bad_length}"):
            read_trace(path, on_truncated=on_truncated)
    # the same file cut inside block 2,500 is a truncation: 2,499 packets kept, the one cut short counted
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(data[:at + 40])
    with pytest.warns(UserWarning, match="dropped it"):
        items, stats = read_trace(cut, on_truncated="skip")
    assert items.size == 2499 and stats.truncated == 1 and stats.records == 2499


def test_unknown_pcap_link_type_falls_back_to_dpkt_with_a_note(tmp_path):
    path = tmp_path / "ppp.pcap"
    frames = [b"\xff\x03\x00\x21" + ipv4("9.8.7.6"), b"\xff\x03\x00\x21" + ipv4("1.2.3.4")]  # PPP in HDLC framing
    path.write_bytes(pcap(frames, 9))
    with pytest.warns(UserWarning, match="link type 9 is not decoded by the compiled scan"):
        items, _ = read_trace(path)
    assert items.tolist() == [0x09080706, 0x01020304]


# fuzz: mutations of a valid file's length fields and tails; the outcome is keys, a truncation or a clear error

BASE = shb() + idb(1) + b"".join(epb(0, eth(ipv4(f"10.0.0.{i}"))) for i in range(1, 6)) + idb(101) + \
    epb(1, ipv6(3))
LENGTH_FIELDS = [4, 28 + 4] + [len(shb()) + len(idb(1)) + 76 * i + 4 for i in range(5)] + \
    [len(shb()) + len(idb(1)) + 76 * i + 20 for i in range(5)] + [len(shb()) + len(idb(1)) + 76 * i + 72 for i in
                                                                   range(5)]
SPECIAL = [0, 1, 4, 12, 31, 1 << 31, (1 << 32) - 1, (1 << 32) - 4, 77, 1 << 20]


def _outcome(path):
    counts = ScanCounts()
    try:
        for arr in scan_capture(path, counts=counts, chunk=2, window=64):
            assert arr.dtype == np.uint32
    except MalformedCaptureError as exc:
        assert str(path) in str(exc) and "byte offset" in str(exc)
        return "error"
    return "truncated" if counts.truncated else "ok"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(LENGTH_FIELDS), value=st.one_of(st.sampled_from(SPECIAL), st.integers(0, 2**32 - 1)),
       tail=st.one_of(st.binary(max_size=64), st.integers(0, 64).map(lambda n: b"\xff" * n)),
       cut=st.integers(0, 40))
def test_fuzzed_lengths_and_tails_end_in_keys_truncation_or_a_clear_error(tmp_path, field, value, tail, cut):
    data = BASE[:field] + struct.pack("<I", value) + BASE[field + 4:]
    data = data[:len(data) - cut] + tail
    path = tmp_path / "fuzz.pcapng"
    path.write_bytes(data)
    assert _outcome(path) in ("ok", "truncated", "error")


@pytest.mark.parametrize("tail", [b"\xff" * 64, bytes(64), b"\x06\x00\x00\x00" + b"\xff" * 60])
def test_tails_after_valid_records_are_errors_or_truncations(tmp_path, tail):
    path = tmp_path / "tail.pcapng"
    path.write_bytes(BASE + tail)
    assert _outcome(path) in ("truncated", "error")


@pytest.mark.parametrize("last_length", [(1 << 32) - 4, 1 << 31, 4096 + 64])
def test_file_ending_exactly_on_a_page_boundary(tmp_path, last_length):
    body = shb() + idb(1)
    frames = []
    while len(body) + sum(map(len, frames)) < mmap.PAGESIZE - 200:
        frames.append(epb(0, eth(ipv4("10.1.1.1"))))
    data = body + b"".join(frames)
    frame = eth(ipv4("10.2.2.2"))
    data += epb(0, frame + bytes(mmap.PAGESIZE - len(data) - 32 - len(frame)))
    assert len(data) == mmap.PAGESIZE
    path = tmp_path / "page.pcapng"
    path.write_bytes(data)
    keys, counts = _keys(path)
    assert keys.size == len(frames) + 1 and counts.truncated == 0
    # the last block's length now points past the end of the file (and of the mapping)
    last = data.rfind(b"\x06\x00\x00\x00")
    path.write_bytes(data[:last + 4] + struct.pack("<I", last_length) + data[last + 8:])
    assert _outcome(path) in ("truncated", "error")
