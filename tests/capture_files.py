"""Crafted pcap / pcapng files, valid and malformed, written byte by byte from the specifications.

The framing follows the IETF opsawg drafts "PCAP Capture File Format" and "PCAP Next Generation (pcapng) Capture
File Format". ``VALID`` files cover each byte order, timestamp resolution, link type, VLAN tagging, Simple Packet
Blocks, several interfaces and a second section of the other byte order; ``MALFORMED`` files each break one rule.

Run as a script to regenerate the tshark fixtures (``make tshark-fixtures``): ``python tests/capture_files.py``
writes ``tests/fixtures/tshark/<name>.txt`` (``tshark -r FILE -T fields -e ip.src``) and ``VERSION``.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "tshark"
MAC = b"\x00\x11\x22\x33\x44\x55\x66\x77\x88\x99\xaa\xbb"
ETH, RAW, SLL, SLL2, IPV4, NULL, LOOP = 1, 101, 113, 276, 228, 0, 108


def ipv4(src: str, payload: int = 0) -> bytes:
    """An IPv4 header (UDP, port 40000 -> 40001) with ``payload`` zero bytes after the UDP header."""
    udp = struct.pack(">HHHH", 40000, 40001, 8 + payload, 0) + bytes(payload)
    head = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, socket.inet_aton(src),
                       socket.inet_aton("10.255.0.1"))
    return head + udp


def ipv6(last: int = 1) -> bytes:
    """An IPv6 header with no next header (59) and no payload."""
    return struct.pack(">IHBB", 0x60000000, 0, 59, 64) + b"\xfe\x80" + bytes(13) + bytes([last]) + \
        b"\xff\x02" + bytes(13) + b"\x01"


def eth(ip: bytes, vlans: tuple[int, ...] = ()) -> bytes:
    """An Ethernet frame around ``ip`` (IPv4 or IPv6 by its version), with VLAN tags of the given TPIDs."""
    etype = 0x0800 if ip[0] >> 4 == 4 else 0x86DD
    tags = b"".join(struct.pack(">HH", tpid, 100 + i) for i, tpid in enumerate(vlans))
    return MAC + tags + struct.pack(">H", etype) + ip


def arp() -> bytes:
    """An Ethernet ARP request (not IP)."""
    return MAC + struct.pack(">H", 0x0806) + struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + bytes(20)


def sll(ip: bytes) -> bytes:
    """Linux cooked (v1) header around ``ip``."""
    return struct.pack(">HHH8sH", 0, 1, 6, MAC[:6] + b"\x00\x00", 0x0800 if ip[0] >> 4 == 4 else 0x86DD) + ip


def sll2(ip: bytes) -> bytes:
    """Linux cooked v2 header around ``ip``."""
    return struct.pack(">HHIHBB8s", 0x0800 if ip[0] >> 4 == 4 else 0x86DD, 0, 1, 1, 0, 6, MAC[:6] + b"\x00\x00") + ip


def null(ip: bytes, big: bool) -> bytes:
    """BSD loopback header (address family 2 = IPv4 / 24 = IPv6, in the capture's byte order)."""
    return struct.pack(">I" if big else "<I", 2 if ip[0] >> 4 == 4 else 24) + ip


def ethernet_mix(n: int = 12) -> list[bytes]:
    """Ethernet frames: IPv4 (some VLAN-tagged, one double-tagged, one with 0x88a8), IPv6 and ARP in between."""
    frames = []
    for i in range(n):
        src = f"10.{i % 3}.{i}.{(7 * i) % 251 + 1}"
        vlans = ((0x8100,), (0x88A8, 0x8100), (0x88A8,), ())[i % 4]
        frames.append(eth(ipv4(src, payload=i), vlans))
        if i % 5 == 2:
            frames.append(eth(ipv6(i)))
        if i % 5 == 4:
            frames.append(arp())
    return frames


def pcap(frames: list[bytes], linktype: int, big: bool = False, nano: bool = False, snaplen: int = 65535,
         caplens: list[int] | None = None) -> bytes:
    """A pcap file (libpcap format) holding ``frames`` (original lengths; ``caplens`` overrides captured lengths)."""
    e = ">" if big else "<"
    magic = 0xA1B23C4D if nano else 0xA1B2C3D4
    out = [struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype)]
    for i, frame in enumerate(frames):
        cap = len(frame) if caplens is None else caplens[i]
        out.append(struct.pack(e + "IIII", 1_700_000_000 + i, 1000 * i, cap, len(frame)) + frame[:cap])
    return b"".join(out)


def block(btype: int, body: bytes, big: bool = False) -> bytes:
    """A pcapng block: type, total length, body padded to 4 bytes, total length again."""
    e = ">" if big else "<"
    body += bytes(-len(body) % 4)
    total = 12 + len(body)
    return struct.pack(e + "II", btype, total) + body + struct.pack(e + "I", total)


def option(code: int, value: bytes, big: bool = False) -> bytes:
    """One pcapng option (code, length, value padded to 4)."""
    return struct.pack(">HH" if big else "<HH", code, len(value)) + value + bytes(-len(value) % 4)


def shb(big: bool = False, options: bool = True) -> bytes:
    """Section Header Block (version 1.0, section length unknown), with a comment and user-application option."""
    e = ">" if big else "<"
    opts = option(1, b"crafted by dpstream tests", big) + option(4, b"dpstream", big) + option(0, b"", big) \
        if options else b""
    return block(0x0A0D0D0A, struct.pack(e + "IHHq", 0x1A2B3C4D, 1, 0, -1) + opts, big)


def idb(linktype: int, snaplen: int = 0, big: bool = False) -> bytes:
    """Interface Description Block with an if_name option."""
    e = ">" if big else "<"
    return block(1, struct.pack(e + "HHI", linktype, 0, snaplen) + option(2, b"eth0", big) + option(0, b"", big), big)


def epb(iface: int, frame: bytes, big: bool = False, caplen: int | None = None, comment: bool = False) -> bytes:
    """Enhanced Packet Block on interface ``iface`` (optionally with a comment option)."""
    e = ">" if big else "<"
    cap = len(frame) if caplen is None else caplen
    data = frame[:cap] + bytes(-cap % 4)
    opts = option(1, b"packet comment", big) + option(0, b"", big) if comment else b""
    return block(6, struct.pack(e + "IIIII", iface, 0, 1000, cap, len(frame)) + data + opts, big)


def pcapng_of(sources: Iterable[int]) -> bytes:
    """A pcapng capture (Ethernet, one interface) of one IPv4 packet from each source address (an integer)."""
    return shb() + idb(ETH) + b"".join(epb(0, eth(ipv4(str(ipaddress.IPv4Address(int(h))), 60))) for h in sources)


def spb(frame: bytes, snaplen: int = 0, big: bool = False) -> bytes:
    """Simple Packet Block: original length, then min(original length, snaplen) bytes of the frame."""
    cap = len(frame) if snaplen == 0 else min(len(frame), snaplen)
    return block(3, struct.pack(">I" if big else "<I", len(frame)) + frame[:cap], big)


def isb(iface: int, big: bool = False) -> bytes:
    """Interface Statistics Block (skipped by readers that only want packets)."""
    return block(5, struct.pack(">III" if big else "<III", iface, 0, 0), big)


def custom(big: bool = False) -> bytes:
    """A Custom Block (0x00000BAD) with a private enterprise number and opaque data."""
    return block(0x00000BAD, struct.pack(">I" if big else "<I", 32473) + b"opaque data", big)


def _pcapng_eth(big: bool) -> bytes:
    frames = ethernet_mix()
    blocks = [shb(big), idb(ETH, 0, big), custom(big)]
    blocks += [epb(0, f, big, comment=i % 3 == 0) for i, f in enumerate(frames)]
    return b"".join(blocks + [isb(0, big)])


def _pcapng_spb() -> bytes:
    frames = [eth(ipv4(f"192.0.2.{i + 1}", payload=3 * i), ((0x8100,), ())[i % 2]) for i in range(10)]
    frames.insert(4, eth(ipv6(4)))
    blocks = [shb(), idb(ETH, 60)]  # snaplen 60: the longer frames are cut, their source stays in the first 60 bytes
    return b"".join(blocks + [spb(f, 60) for f in frames])


def _pcapng_spb_short_snaplen() -> bytes:
    """SPB with snaplen 30: IPv4 behind a VLAN tag is cut before its source address (too short, no key)."""
    frames = [eth(ipv4("198.51.100.1")), eth(ipv4("198.51.100.2"), (0x8100,)), eth(ipv4("198.51.100.3"))]
    return b"".join([shb(), idb(ETH, 30)] + [spb(f, 30) for f in frames])


def _pcapng_interfaces() -> bytes:
    """Four interfaces of different link types, packets interleaved across them."""
    blocks = [shb(), idb(ETH), idb(RAW), idb(SLL), idb(SLL2)]
    for i in range(16):
        ip = ipv4(f"203.0.113.{i + 1}") if i % 7 else ipv6(i)
        frame = (eth(ip, (0x8100,) if i % 2 else ()), ip, sll(ip), sll2(ip))[i % 4]
        blocks.append(epb(i % 4, frame))
    return b"".join(blocks)


def _pcapng_two_sections() -> bytes:
    """A little-endian section (Ethernet) then a big-endian one (raw IP, then SLL): interfaces reset per section."""
    first = [shb(), idb(ETH)] + [epb(0, eth(ipv4(f"100.64.0.{i + 1}"))) for i in range(5)]
    second = [shb(big=True), idb(RAW, big=True), idb(SLL, big=True)]
    second += [epb(i % 2, (ipv4(f"100.64.1.{i + 1}"), sll(ipv4(f"100.64.1.{i + 1}")))[i % 2], big=True)
               for i in range(6)]
    second.append(spb(ipv4("100.64.1.99"), big=True))
    return b"".join(first + second)


def _raw_mix() -> list[bytes]:
    return [ipv4(f"172.16.{i}.1") if i % 3 else ipv6(i) for i in range(9)]


VALID: dict[str, Callable[[], bytes]] = {
    "pcap_le_us_eth.pcap": lambda: pcap(ethernet_mix(), ETH),
    "pcap_be_us_eth.pcap": lambda: pcap(ethernet_mix(), ETH, big=True),
    "pcap_le_ns_raw.pcap": lambda: pcap(_raw_mix(), RAW, nano=True),
    "pcap_be_ns_raw.pcap": lambda: pcap(_raw_mix(), RAW, big=True, nano=True),
    "pcap_ipv4_228.pcap": lambda: pcap([ipv4(f"192.168.{i}.9") for i in range(5)], IPV4),
    "pcap_sll.pcap": lambda: pcap([sll(ip) for ip in _raw_mix()], SLL),
    "pcap_sll2.pcap": lambda: pcap([sll2(ip) for ip in _raw_mix()], SLL2, big=True),
    "pcap_null_le.pcap": lambda: pcap([null(ip, False) for ip in _raw_mix()], NULL),
    "pcap_loop.pcap": lambda: pcap([null(ip, True) for ip in _raw_mix()], LOOP, big=True),
    "pcap_snaplen_cut.pcap": lambda: pcap(ethernet_mix(6), ETH, snaplen=30, caplens=[min(30, len(f)) for f in
                                                                                      ethernet_mix(6)]),
    "pcapng_le_eth.pcapng": lambda: _pcapng_eth(False),
    "pcapng_be_eth.pcapng": lambda: _pcapng_eth(True),
    "pcapng_spb.pcapng": _pcapng_spb,
    "pcapng_spb_short.pcapng": _pcapng_spb_short_snaplen,
    "pcapng_interfaces.pcapng": _pcapng_interfaces,
    "pcapng_two_sections.pcapng": _pcapng_two_sections,
}


def _patch(data: bytes, at: int, value: int, fmt: str = "<I") -> bytes:
    return data[:at] + struct.pack(fmt, value) + data[at + struct.calcsize(fmt):]


def _head() -> bytes:
    return shb() + idb(ETH)


def _epb_caplen_past_block() -> bytes:
    good = epb(0, eth(ipv4("1.1.1.1")))
    return _head() + _patch(good, 20, len(good) - 32 + 4)


def _second_shb_bad_bom() -> bytes:
    bad = _patch(shb(), 8, 0x1A2B3C4E, ">I")
    return _head() + epb(0, eth(ipv4("1.1.1.1"))) + bad


def _block_length(value: int | None, trailing: int | None = None) -> bytes:
    good = epb(0, eth(ipv4("1.1.1.1")))
    bad = good if value is None else _patch(good, 4, value)
    if trailing is not None:
        bad = _patch(bad, len(bad) - 4, trailing)
    return _head() + bad + epb(0, eth(ipv4("2.2.2.2")))


MALFORMED: dict[str, tuple[Callable[[], bytes], str]] = {
    "epb_caplen_past_block.pcapng": (_epb_caplen_past_block, "captured length 48 exceeds the 44 bytes its block holds"),
    "block_length_below_minimum.pcapng": (lambda: _block_length(24), "has length 24, below its minimum 32"),
    "block_length_zero.pcapng": (lambda: _block_length(0), "has length 0, below its minimum 32"),
    "block_length_not_multiple_of_4.pcapng": (lambda: _block_length(62), "block length 62 is not a multiple of 4"),
    "block_lengths_disagree.pcapng": (lambda: _block_length(None, 80),
                                      "block length 76 at its start disagrees with 80"),
    "block_length_past_the_end_mid_file.pcapng": (lambda: _block_length(1 << 20), "bad block length 1048576"),
    "epb_names_missing_interface.pcapng": (lambda: _head() + epb(3, eth(ipv4("1.1.1.1"))),
                                           "names interface 3, but the section has 1 interface"),
    "epb_before_idb.pcapng": (lambda: shb() + epb(0, eth(ipv4("1.1.1.1"))), "before any Interface Description"),
    "spb_before_idb.pcapng": (lambda: shb() + spb(eth(ipv4("1.1.1.1"))), "before any Interface Description"),
    "second_shb_bad_bom.pcapng": (_second_shb_bad_bom, "bad byte-order mark 0x1a2b3c4e"),
    "spb_longer_than_block.pcapng": (lambda: shb() + idb(ETH) + _patch(spb(eth(ipv4("1.1.1.1"))), 8, 200),
                                     "Simple Packet Block captured length 200"),
    "unknown_link_type.pcapng": (lambda: shb() + idb(147) + epb(0, eth(ipv4("1.1.1.1"))),
                                 "link type 147, which the scan does not decode"),
    "pcap_record_length_near_2_32.pcap": (lambda: _patch(pcap([eth(ipv4("1.1.1.1"))] * 2, ETH), 24 + 16 + 42 + 8,
                                                         0xFFFFFFF0), "captured length 4294967280 exceeds 262144"),
    "pcap_record_length_2_31.pcap": (lambda: _patch(pcap([eth(ipv4("1.1.1.1"))] * 2, ETH), 24 + 8, 1 << 31),
                                     "captured length 2147483648 exceeds 262144"),
}
"""File name -> (its bytes, a phrase the error must contain)."""



def write_valid(directory: Path) -> dict[str, Path]:
    """Write every valid file into ``directory``; name -> path."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, make in VALID.items():
        paths[name] = directory / name
        paths[name].write_bytes(make())
    return paths


def tshark_sources(path: Path) -> list[str]:
    """``tshark -r path -T fields -e ip.src``: one line per packet (empty when not IPv4)."""
    out = subprocess.run(["tshark", "-r", str(path), "-T", "fields", "-e", "ip.src"], check=True,
                         capture_output=True, text=True)
    return out.stdout.splitlines()


def main() -> None:
    """Regenerate tests/fixtures/tshark/ from the installed tshark."""
    version = subprocess.run(["tshark", "--version"], check=True, capture_output=True, text=True).stdout
    FIXTURES.mkdir(parents=True, exist_ok=True)
    (FIXTURES / "VERSION").write_text(version.splitlines()[0] + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in write_valid(Path(tmp)).items():
            (FIXTURES / f"{name}.txt").write_text("\n".join(tshark_sources(path)) + "\n")
            print(f"{name}: {len(tshark_sources(path))} packets", file=sys.stderr)


if __name__ == "__main__":
    main()
