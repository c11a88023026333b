"""Generated pcap captures for tests and benchmarks, built with numpy (no Python loop per packet).

Each packet is an Ethernet frame (link type 1) carrying an IPv4 header with the given source address, zero padding
up to ``caplen`` bytes; the original length is 1500. The file header (libpcap format, little endian, microsecond
timestamps) carries ``snaplen``.
"""

from __future__ import annotations

import struct

import numpy as np

from dpstream.data.capture import LINKTYPE_ETHERNET

MIN_CAPLEN = 34  # 14 bytes of Ethernet header, 20 of IPv4


def pcap_header(snaplen: int = 96) -> bytes:
    """The 24-byte pcap file header: magic, version 2.4, snaplen, Ethernet."""
    return struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET)


def pcap_records(sources: np.ndarray, caplen: int = MIN_CAPLEN, first: int = 0) -> bytes:
    """The pcap records (no file header) of packets from IPv4 ``sources`` (uint32, 1.2.3.4 as 0x01020304).

    ``first`` numbers the packets (their timestamps are first, first + 1, ... microseconds past 1.7e9 s).
    """
    if caplen < MIN_CAPLEN:
        raise ValueError(f"caplen must be at least {MIN_CAPLEN} (Ethernet + IPv4 headers), got {caplen!r}")
    sources = np.asarray(sources, dtype=np.uint32)
    n = sources.size
    rec = np.zeros((n, 16 + caplen), dtype=np.uint8)
    steps = first + np.arange(n, dtype=np.int64)
    head = np.empty((n, 4), dtype="<u4")
    head[:, 0] = 1_700_000_000 + steps // 1_000_000
    head[:, 1] = steps % 1_000_000
    head[:, 2] = caplen
    head[:, 3] = 1500
    rec[:, :16] = head.view(np.uint8).reshape(n, 16)
    rec[:, 28:30] = (0x08, 0x00)  # ethertype IPv4 after the two MAC addresses
    rec[:, 30] = 0x45  # version 4, header length 5 words
    rec[:, 38] = 64  # TTL
    rec[:, 39] = 17  # UDP
    rec[:, 42:46] = sources.astype(">u4").view(np.uint8).reshape(n, 4)
    rec[:, 46:50] = (10, 255, 0, 1)
    return rec.tobytes()


def pcap_bytes(sources: np.ndarray, caplen: int = MIN_CAPLEN, snaplen: int = 96) -> bytes:
    """A whole pcap file of packets from ``sources`` (``pcap_header`` then ``pcap_records``)."""
    return pcap_header(snaplen) + pcap_records(sources, caplen)
