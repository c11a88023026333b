"""Compiled scan of pcap and pcapng captures over a memory-mapped file: IPv4 source keys, chunk by chunk.

Framing follows the specifications, not a library: libpcap's file format (IETF opsawg draft "PCAP Capture File
Format") and the pcapng draft ("PCAP Next Generation (pcapng) Capture File Format"). pcap: both byte orders, micro-
and nanosecond magic. pcapng: Section Header Blocks of either byte order (a later section may switch), Interface
Description Blocks (link type and snaplen per interface, reset at each section), Enhanced, Simple (first interface;
captured length = min(original length, snaplen)) and obsolete Packet Blocks; every other block type is skipped.
Link types: Ethernet (1, VLAN tags 0x8100 / 0x88a8 / 0x9100, stacked), raw IP (101, and 12 / 14 as some systems
write it), IPv4 (228), IPv6 (229), Linux cooked SLL (113) and SLL2 (276), BSD loopback (0, 108).

Keys: the IPv4 source address read big-endian (1.2.3.4 is 0x01020304). IPv6 packets are skipped, or with
``ipv6="key"`` keyed as 2^32 + h mod (2^61 - 1 - 2^32), so they never collide with an IPv4 key and stay below 2^61
(as the sketches' canonical keys). h = ``hashing.keyed_key`` of the 16 source bytes: a Carter-Wegman polynomial
mod p = 2^61 - 1 in a secret (r, b) drawn per scan (``ipv6_hash_key``: from the seed, or from the operating system),
so nobody can choose an address that lands on another's key. Two distinct sources share a key only if
h(x) - h(y) is 0 or +-(2^61 - 1 - 2^32), with probability at most (3 + 4 + 4) / (p - 1) < 5e-18 (L = 4 limbs).

Safety: the kernel does not bounds-check, so every length read from the file (record, block and captured lengths,
snaplen) is compared with the bytes that remain, in 64-bit arithmetic, before it is used; options are never read.
A malformed structure stops the scan with a status code and the byte offset, which ``scan_capture`` turns into a
``MalformedCaptureError`` naming the file, the offset and what was wrong. A pcapng block whose length runs past the
end of the file is a truncation only if no block ends inside the file after it: a block's trailing copy of its
length, followed by more blocks, shows a corrupt leading length instead ("bad block length"). The file is mapped
once; pages already scanned are released (``madvise(MADV_DONTNEED)``) after each window, so resident memory stays
bounded by the window.
"""

from __future__ import annotations

import mmap
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numba
import numpy as np

from dpstream.hashing import affine_mod_p, draw_item_key
from dpstream.noise import SeedLike
from dpstream.validation import check_choice

PCAP_MAGIC = {b"\xd4\xc3\xb2\xa1": (0, False), b"\xa1\xb2\xc3\xd4": (1, False),
              b"\x4d\x3c\xb2\xa1": (0, True), b"\xa1\xb2\x3c\x4d": (1, True)}
"""pcap magic bytes -> (big endian, nanosecond timestamps)."""
PCAPNG_MAGIC = b"\x0a\x0d\x0d\x0a"
KNOWN_LINKTYPES = (0, 1, 12, 14, 101, 108, 113, 228, 229, 276)
LINKTYPE_ETHERNET, LINKTYPE_RAW, LINKTYPE_SLL, LINKTYPE_SLL2 = 1, 101, 113, 276  # ``scan_pcap``'s own loops
MAX_CAPLEN = 262144  # libpcap's and wiretap's largest snapshot length: a larger captured length is bogus
MAX_INTERFACES = 65536  # interface table size (fixed, never sized from the file)
WINDOW = 1 << 26  # bytes scanned between releases of the mapped pages
HOST_BIG = int(sys.byteorder == "big")  # the fast pcapng loop reads 32-bit words in the host's byte order

# status codes of the kernel
OK, FULL, TRUNCATED = 0, 1, 2
(E_CAPLEN, E_BLOCK_MIN, E_BLOCK_ALIGN, E_BLOCK_TRAIL, E_NO_IDB, E_IFACE, E_BOM, E_SPB_LEN, E_LINK,
 E_TOO_MANY_IF, E_FIRST_BLOCK, E_EPB_CAPLEN, E_BLOCK_LEN) = range(10, 23)

ERRORS = {
    E_CAPLEN: "record's captured length {a} exceeds {b} (the larger of the snapshot length and 262144)",
    E_EPB_CAPLEN: "packet block's captured length {a} exceeds the {b} bytes its block holds",
    E_BLOCK_MIN: "block of type 0x{c:08x} has length {a}, below its minimum {b}",
    E_BLOCK_ALIGN: "block length {a} is not a multiple of 4",
    E_BLOCK_TRAIL: "block length {a} at its start disagrees with {b} at its end",
    E_NO_IDB: "packet block (type 0x{c:08x}) before any Interface Description Block of its section",
    E_IFACE: "packet block names interface {a}, but the section has {b} interface(s)",
    E_BOM: "Section Header Block with a bad byte-order mark 0x{a:08x} (allowed: 0x1a2b3c4d in either byte order)",
    E_SPB_LEN: "Simple Packet Block captured length {a} (min of original length and snaplen) exceeds the {b} "
               "bytes its block holds",
    E_LINK: "packet on interface {b} of link type {a}, which the scan does not decode",
    E_TOO_MANY_IF: f"more than {MAX_INTERFACES} interfaces in one section",
    E_FIRST_BLOCK: "the file does not start with a Section Header Block",
    E_BLOCK_LEN: "bad block length {a}: it runs past the end of the file ({b} bytes left), but the block's trailing "
                 "length ends inside the file, followed by further blocks: a corrupt length, not a file cut short",
}

# state vector slots
S_BIG, S_SNAP, S_LINK, S_NIF = 0, 1, 2, 3
# counter slots
C_RECORDS, C_NON_IPV4, C_SHORT, C_IPV6 = 0, 1, 2, 3


class MalformedCaptureError(ValueError):
    """A pcap / pcapng structure that breaks its specification (the message names the file and byte offset)."""


@numba.njit(inline="always")
def _byte(buf: np.ndarray, i: int) -> Any:
    """The byte at ``i`` (>= 0), read through an unsigned index.

    An unsigned index spares the compiled code numba's negative-index wraparound (a compare and a select per read),
    which made the fast pcapng loop 1.5x slower.
    """
    return np.int64(buf[np.uint64(i)])


@numba.njit(inline="always")
def _be32(buf: np.ndarray, i: int) -> Any:
    """The big-endian 32-bit value at ``i`` (an IPv4 address)."""
    return (_byte(buf, i) << 24) | (_byte(buf, i + 1) << 16) | (_byte(buf, i + 2) << 8) | _byte(buf, i + 3)


@numba.njit(inline="always")
def _u16(buf: np.ndarray, i: int, big: int) -> Any:
    a, b = _byte(buf, i), _byte(buf, i + 1)
    return (a << 8) | b if big else (b << 8) | a


@numba.njit(inline="always")
def _u32(buf: np.ndarray, i: int, big: int) -> Any:
    a, b, c, d = _byte(buf, i), _byte(buf, i + 1), _byte(buf, i + 2), _byte(buf, i + 3)
    return (a << 24) | (b << 16) | (c << 8) | d if big else (d << 24) | (c << 16) | (b << 8) | a


@numba.njit(inline="always")
def _w32(words: np.ndarray, i: int, swap: int) -> Any:
    """The 32-bit field at byte offset ``i`` (a multiple of 4) of the file viewed as host-order ``words``."""
    x = np.int64(words[np.uint64(i >> 2)])
    if swap:
        x = ((x & 0xFF) << 24) | ((x & 0xFF00) << 8) | ((x >> 8) & 0xFF00) | (x >> 24)
    return x


IPV6_CHOICES = ("skip", "key")
"""What a scan does with IPv6 sources: skip them, or key them."""
IPV6_KEY_RANGE = (1 << 61) - 1 - (1 << 32)
"""IPv6 keys are 2^32 + h mod this (below 2^61, above every IPv4 key)."""

_IPV6_RANGE = np.uint64(IPV6_KEY_RANGE)
_IPV6_BYTES = 16


def ipv6_hash_key(ipv6: str, seed: SeedLike = None) -> np.ndarray:
    """The kernels' IPv6 argument: no IPv6 keys (an empty uint64 array) or the secret (r, b) that keys them.

    ``ipv6`` is one of ``IPV6_CHOICES``; the secret comes from ``seed`` (``hashing.draw_item_key``; None: the OS).
    """
    check_choice(ipv6, "ipv6", IPV6_CHOICES)
    return draw_item_key(seed) if ipv6 == "key" else np.empty(0, dtype=np.uint64)


@numba.njit(inline="always")
def _ipv6_key(buf: np.ndarray, i: int, r: Any, b: Any) -> Any:
    """2^32 + ``keyed_key`` of the 16 source bytes at ``i`` under the secret (r, b), mod (2^61 - 1 - 2^32).

    Limbs: 17 (the length plus one), then bytes 0-6, 7-13 and 14-15 little-endian, by Horner's rule in r, plus b.
    """
    acc = affine_mod_p(r, np.uint64(_IPV6_BYTES + 1), np.uint64(0))
    for start in range(0, _IPV6_BYTES, 7):
        m = np.uint64(0)
        for j in range(min(_IPV6_BYTES, start + 7) - 1, start - 1, -1):
            m = (m << np.uint64(8)) | np.uint64(_byte(buf, i + j))
        acc = affine_mod_p(r, m, acc)
    return np.int64(affine_mod_p(r, b, acc) % _IPV6_RANGE) + (np.int64(1) << 32)


@numba.njit(inline="always")
def _version(etype: Any) -> int:
    return 4 if etype == 0x0800 else (6 if etype == 0x86DD else 0)


@numba.njit(inline="always")
def _be16(buf: np.ndarray, i: int) -> Any:
    return (_byte(buf, i) << 8) | _byte(buf, i + 1)


@numba.njit(inline="always")
def _is_vlan(etype: Any) -> bool:
    return etype == 0x8100 or etype == 0x88A8 or etype == 0x9100


@numba.njit(inline="always")
def _cooked(buf: np.ndarray, p: int, caplen: int, link: int, big: int) -> tuple[int, int]:
    """Linux cooked (SLL, SLL2) and BSD loopback headers; (offset, version) as ``_network``."""
    if link == 113:
        if caplen < 16:
            return 0, 0
        return 16, _version(_be16(buf, p + 14))
    if link == 276:
        if caplen < 20:
            return 0, 0
        return 20, _version(_be16(buf, p))
    if caplen < 4:
        return 0, 0
    fam = _u32(buf, p, 1 if link == 108 else big)
    if link == 0 and fam > 0xFFFF:  # DLT_NULL written in the other host byte order
        fam = _u32(buf, p, 1 - big)
    return 4, 4 if fam == 2 else (6 if fam == 24 or fam == 28 or fam == 30 else 0)


@numba.njit(inline="always")
def _network(buf: np.ndarray, p: int, caplen: int, link: int, big: int) -> tuple[int, int]:
    """(offset of the network header within the frame at ``p``, 4 or 6 or 0 for not IP; -1: unknown link type).

    The common link types first: Ethernet (past any stacked VLAN tags), then raw IP.
    """
    if link == 1:
        off, etype = 12, 0
        if caplen >= 14:
            etype = _be16(buf, p + 12)
            while _is_vlan(etype) and off + 6 <= caplen:
                off += 4
                etype = _be16(buf, p + off)
        return off + 2, _version(etype)
    if link == 101 or link == 12 or link == 14:
        v = _byte(buf, p) >> 4 if caplen > 0 else 0
        return 0, 4 if v == 4 else (6 if v == 6 else 0)
    if link == 228 or link == 229:
        return 0, 4 if link == 228 else 6
    if link == 113 or link == 276 or link == 0 or link == 108:
        return _cooked(buf, p, caplen, link, big)
    return 0, -1


@numba.njit(inline="always")
def _secret(ipv6: np.ndarray) -> tuple[bool, Any, Any]:
    """(keyed, r, b): whether IPv6 sources are keyed, and the secret of ``ipv6_hash_key``'s array (0, 0 if not).

    Each kernel reads it once, before its loop: ``fast_pcapng`` runs one of two copies of its loop, with ``keyed`` a
    constant in each; ``scan_pcap`` and ``scan_pcapng`` test it.
    """
    if ipv6.size:
        return True, ipv6[0], ipv6[1]
    return False, np.uint64(0), np.uint64(0)


@numba.njit(inline="always")
def _store(buf: np.ndarray, p: int, off: int, version: int, caplen: int, keyed: bool, r6: Any, b6: Any,
           out: np.ndarray, n: int, other: int, short: int, v6: int) -> tuple[int, int, int, int]:
    """Key the frame at ``p`` (network header at ``off``) into ``out[n]``, or count why not: new (n, other, short, v6).

    The one place every loop keys its frames; ``keyed``, ``r6`` and ``b6`` are ``_secret``'s.
    """
    if version == 4 and off + 16 <= caplen and _byte(buf, p + off) >> 4 == 4:
        out[np.uint64(n)] = _be32(buf, p + off + 12)
        return n + 1, other, short, v6
    if version == 6 and keyed and off + 24 <= caplen and _byte(buf, p + off) >> 4 == 6:
        out[np.uint64(n)] = _ipv6_key(buf, p + off + 8, r6, b6)
        return n + 1, other, short, v6 + 1
    if (version == 4 and off + 16 > caplen) or (version == 6 and keyed and off + 24 > caplen):
        return n, other, short + 1, v6
    return n, other + 1, short, v6


@numba.njit(cache=True)
def scan_pcap(buf: np.ndarray, pos: int, stop: int, state: np.ndarray, ipv6: np.ndarray, out: np.ndarray,
              counts: np.ndarray) -> tuple[int, int, int, int, int]:
    """Records of a pcap file from ``pos`` (a record start) until ``stop`` or ``out`` is full.

    Returns (next position, keys written, status, a, b): the status is OK (reached ``stop`` or the end), FULL,
    TRUNCATED (the last record is cut short) or an error code with its values a, b at the returned position.
    ``counts`` gains the records, non-IP, too-short and IPv6-keyed tallies. The tallies live in locals; the helpers
    are inlined (``inline="always"``).

    Little-endian raw IP, Ethernet and Linux cooked (SLL, SLL2: what ``tcpdump -i any`` writes) files, the common
    ones, each have a copy of the loop with the byte order and the link type constants: with them read from
    ``state``, ``_network``'s tests stay in the loop, and a raw IP file scanned 7 times slower (SLL 1.5 times). Other
    files share the copy that reads them.
    """
    keyed, r6, b6 = _secret(ipv6)
    big, link = state[S_BIG], state[S_LINK]
    if not big and link == LINKTYPE_RAW:
        return _pcap_body(buf, pos, stop, state, 0, LINKTYPE_RAW, keyed, r6, b6, out, counts)
    if not big and link == LINKTYPE_ETHERNET:
        return _pcap_body(buf, pos, stop, state, 0, LINKTYPE_ETHERNET, keyed, r6, b6, out, counts)
    if not big and link == LINKTYPE_SLL:
        return _pcap_body(buf, pos, stop, state, 0, LINKTYPE_SLL, keyed, r6, b6, out, counts)
    if not big and link == LINKTYPE_SLL2:
        return _pcap_body(buf, pos, stop, state, 0, LINKTYPE_SLL2, keyed, r6, b6, out, counts)
    return _pcap_body(buf, pos, stop, state, big, link, keyed, r6, b6, out, counts)


@numba.njit(inline="always")
def _pcap_body(buf: np.ndarray, pos: int, stop: int, state: np.ndarray, big: int, link: int, keyed: bool, r6: Any,
               b6: Any, out: np.ndarray, counts: np.ndarray) -> tuple[int, int, int, int, int]:
    """The loop of ``scan_pcap``."""
    size = buf.size
    limit = max(state[S_SNAP], MAX_CAPLEN)
    n, status, a, b = 0, OK, 0, 0
    records, other, short, v6 = 0, 0, 0, 0
    while pos < stop:
        if n == out.size:
            status = FULL
            break
        if size - pos < 16:
            status, a, b = TRUNCATED, 16, size - pos
            break
        caplen = _u32(buf, pos + 8, big)
        if caplen > limit:
            status, a, b = E_CAPLEN, caplen, limit
            break
        if caplen > size - pos - 16:
            status, a, b = TRUNCATED, caplen + 16, size - pos
            break
        p = pos + 16
        off, version = _network(buf, p, caplen, link, big)
        if version < 0:
            status, a = E_LINK, link
            break
        records += 1
        n, other, short, v6 = _store(buf, p, off, version, caplen, keyed, r6, b6, out, n, other, short, v6)
        pos += 16 + caplen
    _flush(counts, records, other, short, v6)
    return pos, n, status, a, b


@numba.njit(inline="always")
def _flush(counts: np.ndarray, records: int, other: int, short: int, v6: int) -> None:
    counts[C_RECORDS] += records
    counts[C_NON_IPV4] += other
    counts[C_SHORT] += short
    counts[C_IPV6] += v6


@numba.njit(inline="always")
def _ends_inside(buf: np.ndarray, pos: int, minimum: int, big: int) -> bool:
    """Whether the block at ``pos``, whose leading length runs past the end, has a trailing length inside the file.

    A word at ``q`` (a multiple of 4 from ``pos``) equal to ``q + 4 - pos``, the length of a block ending there,
    followed by the end of the file or by a plausible block header (length >= 12, a multiple of 4): then the leading
    length is corrupt, since a file cut short ends inside its last block and holds no block after it.
    """
    size = buf.size
    q = pos + minimum - 4
    while q + 4 <= size:
        if _u32(buf, q, big) == q + 4 - pos:
            after = q + 4
            if after == size:
                return True
            if size - after >= 12:
                following = _u32(buf, after + 4, big)
                if following >= 12 and following % 4 == 0:
                    return True
        q += 4
    return False


@numba.njit(inline="always")
def _check_block(buf: np.ndarray, pos: int, btype: int, blen: int, big: int) -> tuple[int, int, int]:
    """Length checks of the block at ``pos``: minimum, multiple of 4, within the file, trailing copy equal."""
    minimum = 12
    if btype == 0x0A0D0D0A:
        minimum = 28
    elif btype == 1:
        minimum = 20
    elif btype == 6 or btype == 2:
        minimum = 32
    elif btype == 3:
        minimum = 16
    if blen < minimum:
        return E_BLOCK_MIN, blen, minimum
    if blen % 4 != 0:
        return E_BLOCK_ALIGN, blen, 0
    if blen > buf.size - pos:
        if _ends_inside(buf, pos, minimum, big):
            return E_BLOCK_LEN, blen, buf.size - pos
        return TRUNCATED, blen, buf.size - pos
    trail = _u32(buf, pos + blen - 4, big)
    if trail != blen:
        return E_BLOCK_TRAIL, blen, trail
    return OK, 0, 0


@numba.njit(inline="always")
def _block_header(buf: np.ndarray, pos: int, big: int, nif: int) -> tuple[int, int, int, int, int, int, int]:
    """(status, type, length, byte order, interfaces, a, b) of the block at ``pos`` (>= 12 bytes remain).

    A Section Header Block sets the byte order from its byte-order mark and resets the interfaces; the lengths of
    every block are checked (``_check_block``).
    """
    btype = _u32(buf, pos, big)
    if btype == 0x0A0D0D0A:
        bom = _u32(buf, pos + 8, 1)
        if bom != 0x1A2B3C4D and bom != 0x4D3C2B1A:
            return E_BOM, btype, 0, big, nif, bom, 0
        big, nif = (1 if bom == 0x1A2B3C4D else 0), 0
    elif nif < 0:
        return E_FIRST_BLOCK, btype, 0, big, nif, 0, 0
    blen = _u32(buf, pos + 4, big)
    status, a, b = _check_block(buf, pos, btype, blen, big)
    return status, btype, blen, big, nif, a, b


@numba.njit(inline="always")
def _packet_block(buf: np.ndarray, pos: int, btype: int, blen: int, big: int, nif: int, if_link: np.ndarray,
                  if_snap: np.ndarray) -> tuple[int, int, int, int, int]:
    """(status, frame offset, captured length, link type, interface) of an EPB / SPB / obsolete PB; a, b on error."""
    if nif == 0:
        return E_NO_IDB, 0, 0, 0, 0
    if btype == 3:
        caplen = _u32(buf, pos + 8, big)
        if 0 < if_snap[0] < caplen:
            caplen = if_snap[0]
        if caplen > blen - 16:
            return E_SPB_LEN, caplen, blen - 16, 0, 0
        return OK, pos + 12, caplen, if_link[0], 0
    iface = _u32(buf, pos + 8, big) if btype == 6 else _u16(buf, pos + 8, big)
    caplen = _u32(buf, pos + 20, big)
    if iface >= nif:
        return E_IFACE, iface, nif, 0, 0
    if caplen > blen - 32:
        return E_EPB_CAPLEN, caplen, blen - 32, 0, 0
    return OK, pos + 28, caplen, if_link[iface], iface


@numba.njit(cache=True)
def scan_pcapng(buf: np.ndarray, pos: int, stop: int, state: np.ndarray, if_link: np.ndarray, if_snap: np.ndarray,
                ipv6: np.ndarray, out: np.ndarray, counts: np.ndarray) -> tuple[int, int, int, int, int]:
    """Blocks of a pcapng file from ``pos`` (a block start) until ``stop`` or ``out`` is full (see ``scan_pcap``).

    The section's byte order, interface count and tallies live in locals during the loop.
    """
    size, big, nif = buf.size, state[S_BIG], state[S_NIF]
    keyed, r6, b6 = _secret(ipv6)
    n, status, a, b = 0, OK, 0, 0
    records, other, short, v6 = 0, 0, 0, 0
    while pos < stop and status == OK:
        if n == out.size:
            status = FULL
            break
        if size - pos < 12:
            status, a, b = TRUNCATED, 12, size - pos
            break
        status, btype, blen, big, nif, a, b = _block_header(buf, pos, big, nif)
        if status == OK and btype == 1:
            if nif == MAX_INTERFACES:
                status = E_TOO_MANY_IF
                break
            if_link[nif], if_snap[nif] = _u16(buf, pos + 8, big), _u32(buf, pos + 12, big)
            nif += 1
        elif status == OK and (btype == 6 or btype == 3 or btype == 2):
            status, p, caplen, link, iface = _packet_block(buf, pos, btype, blen, big, nif, if_link, if_snap)
            off, version = _network(buf, p, caplen, link, big) if status == OK else (0, 0)
            if status != OK:
                a, b = p, caplen
            elif version < 0:
                status, a, b = E_LINK, link, iface
            else:
                records += 1
                n, other, short, v6 = _store(buf, p, off, version, caplen, keyed, r6, b6, out, n, other, short, v6)
        if status == OK:
            pos += blen
    _flush(counts, records, other, short, v6)
    state[S_BIG], state[S_NIF] = big, nif
    return pos, n, status, a, b


@numba.njit(inline="always")
def _fast_body(buf: np.ndarray, words: np.ndarray, pos: int, stop: int, swap: int, nif: int,  # noqa: C901
               if_link: np.ndarray, if_snap: np.ndarray, keyed: bool, r6: Any, b6: Any, out: np.ndarray,
               counts: np.ndarray) -> tuple[int, int]:
    """The loop of ``fast_pcapng``: ``swap`` (the file's byte order is not the host's) and ``keyed`` are constant."""
    size = buf.size
    link0, snap0 = if_link[0], if_snap[0]  # fixed within the loop: an Interface Description Block ends it
    n, records, other, short, v6 = 0, 0, 0, 0, 0
    while pos < stop and n < out.size and size - pos >= 12:
        btype, blen = _w32(words, pos, swap), _w32(words, pos + 4, swap)
        if blen < 16 or blen % 4 != 0 or blen > size - pos or _w32(words, pos + blen - 4, swap) != blen:
            break
        if btype == 6:
            if blen < 32:
                break
            iface, caplen, p = _w32(words, pos + 8, swap), _w32(words, pos + 20, swap), pos + 28
            if iface >= nif or caplen > blen - 32:
                break
            link = if_link[np.uint64(iface)]
        elif btype == 3:
            caplen, p, link = _w32(words, pos + 8, swap), pos + 12, link0
            if 0 < snap0 < caplen:
                caplen = snap0
            if caplen > blen - 16:
                break
        elif btype == 0x0A0D0D0A or btype == 1 or btype == 2:
            break
        else:
            pos += blen
            continue
        if link == 1:  # the common link types spelled out (through _network alone the loop ran 1.2x slower)
            off, etype = 12, 0
            if caplen >= 14:
                etype = _be16(buf, p + 12)
                while _is_vlan(etype) and off + 6 <= caplen:
                    off += 4
                    etype = _be16(buf, p + off)
            off, version = off + 2, _version(etype)
        elif link == 101:
            off, version = 0, _byte(buf, p) >> 4 if caplen > 0 else 0
        else:
            off, version = _network(buf, p, caplen, link, swap ^ HOST_BIG)
        if version < 0:
            break
        records += 1
        n, other, short, v6 = _store(buf, p, off, version, caplen, keyed, r6, b6, out, n, other, short, v6)
        pos += blen
    _flush(counts, records, other, short, v6)
    return pos, n


@numba.njit(cache=True)
def fast_pcapng(buf: np.ndarray, words: np.ndarray, pos: int, stop: int, state: np.ndarray, if_link: np.ndarray,
                if_snap: np.ndarray, ipv6: np.ndarray, out: np.ndarray, counts: np.ndarray) -> tuple[int, int]:
    """The common blocks of a pcapng section in one flat loop: (next position, keys written).

    Takes Enhanced and Simple Packet Blocks and skips other non-structural blocks, with the same length checks as
    ``scan_pcapng``; it stops, leaving the block to ``scan_pcapng``, at a Section Header or Interface Description
    Block, an obsolete Packet Block, any failed check or an unknown link type. Block fields are read as aligned
    32-bit ``words`` (the file as host-order uint32: pcapng blocks start at multiples of 4), with the byte order a
    compile-time constant of each of the two copies of the loop: together 1.4x faster than byte-wise reads.
    """
    if pos % 4 != 0 or state[S_NIF] <= 0:  # word reads need an aligned block start; no interface: the checked loop
        return pos, 0
    keyed, r6, b6 = _secret(ipv6)
    nif = state[S_NIF]
    if state[S_BIG] != HOST_BIG:
        if keyed:
            return _fast_body(buf, words, pos, stop, 1, nif, if_link, if_snap, True, r6, b6, out, counts)
        return _fast_body(buf, words, pos, stop, 1, nif, if_link, if_snap, False, r6, b6, out, counts)
    if keyed:
        return _fast_body(buf, words, pos, stop, 0, nif, if_link, if_snap, True, r6, b6, out, counts)
    return _fast_body(buf, words, pos, stop, 0, nif, if_link, if_snap, False, r6, b6, out, counts)


@dataclass
class ScanCounts:
    """What the scan saw: packet records, and the ones not keyed (non-IP or IPv6 skipped, captured too short)."""

    records: int = 0
    non_ipv4: int = 0
    too_short: int = 0
    ipv6_keyed: int = 0
    truncated: int = 0


class UnknownLinkType(Exception):
    """A pcap file of a link type the scan does not decode (the caller may fall back to dpkt)."""

    def __init__(self, linktype: int) -> None:
        """Remember the link type."""
        super().__init__(linktype)
        self.linktype = linktype


def _header(path: Path, head: bytes) -> tuple[str, np.ndarray, int]:
    """(format, initial state, first record offset) from the file's first bytes."""
    state = np.zeros(4, dtype=np.int64)
    if head[:4] in PCAP_MAGIC:
        if len(head) < 24:
            raise MalformedCaptureError(f"{path}: byte 0: pcap file header needs 24 bytes, the file has {len(head)}")
        big = PCAP_MAGIC[head[:4]][0]
        order: Literal["big", "little"] = "big" if big else "little"
        state[S_BIG] = big
        state[S_SNAP] = int.from_bytes(head[16:20], order)
        state[S_LINK] = int.from_bytes(head[20:24], order) & 0xFFFF  # upper bits: FCS length, reserved
        if state[S_LINK] not in KNOWN_LINKTYPES:
            raise UnknownLinkType(int(state[S_LINK]))
        return "pcap", state, 24
    if head[:4] == PCAPNG_MAGIC:
        state[S_NIF] = -1  # no section yet
        return "pcapng", state, 0
    raise MalformedCaptureError(f"{path}: byte 0: not a readable pcap or pcapng file (magic {head[:4].hex()})")


def _error(path: Path, fmt: str, pos: int, status: int, a: int, b: int, btype: int) -> MalformedCaptureError:
    what = ERRORS[status].format(a=a, b=b, c=btype)
    return MalformedCaptureError(f"{path}: {fmt} structure at byte offset {pos}: {what}")


def scan_capture(path: Path, ipv6: str = "skip", chunk: int = 1 << 20, counts: ScanCounts | None = None,
                 progress: bool = False, window: int = WINDOW, seed: SeedLike = None) -> Iterator[np.ndarray]:
    """Keys of the pcap / pcapng file at ``path``, ``chunk`` at a time (uint32; int64 when ``ipv6="key"``).

    ``seed`` draws the secret of the IPv6 keys (``ipv6_hash_key``; None: the operating system, so a new scan
    gives IPv6 sources new keys).

    A record cut short at the end of the file sets ``counts.truncated`` and ends the scan (the caller decides
    whether that is an error); any other malformed structure raises ``MalformedCaptureError``. A pcap file of a
    link type the scan does not know raises ``UnknownLinkType`` before reading any record.
    """
    counts = ScanCounts() if counts is None else counts
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(24)
        fmt, state, pos = _header(path, head)
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            yield from _scan_mapped(path, fmt, mapped, size, state, pos, ipv6_hash_key(ipv6, seed), chunk, counts,
                                    progress, window)


def _scan_mapped(path: Path, fmt: str, mapped: mmap.mmap, size: int, state: np.ndarray, pos: int, ipv6: np.ndarray,
                 chunk: int, counts: ScanCounts, progress: bool, window: int) -> Iterator[np.ndarray]:
    from tqdm import tqdm

    buf = np.frombuffer(mapped, dtype=np.uint8)
    words = np.frombuffer(mapped, dtype=np.uint32, count=size // 4)  # the same bytes, for aligned 32-bit reads
    if_link = np.zeros(MAX_INTERFACES, dtype=np.int64)
    if_snap = np.zeros(MAX_INTERFACES, dtype=np.int64)
    raw = np.zeros(4, dtype=np.int64)
    out = np.empty(chunk, dtype=np.int64 if ipv6.size else np.uint32)
    n = 0
    released = 0
    bar = tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {path.name}", disable=not progress, leave=False)
    try:
        while pos < size:
            stop = min(size, pos + window)
            if fmt == "pcap":
                pos, got, status, a, b = scan_pcap(buf, pos, stop, state, ipv6, out[n:], raw)
            else:
                pos, got = fast_pcapng(buf, words, pos, stop, state, if_link, if_snap, ipv6, out[n:], raw)
                n += got
                status, a, b, got = OK, 0, 0, 0
                if pos < stop and n < chunk:  # a block the fast loop leaves to the checked one
                    pos, got, status, a, b = scan_pcapng(buf, pos, pos + 1, state, if_link, if_snap, ipv6, out[n:],
                                                         raw)
            n += got
            if status >= E_CAPLEN:
                btype = _u32(buf, pos, state[S_BIG]) if fmt == "pcapng" else 0
                raise _error(path, fmt, pos, status, a, b, btype)
            if n == chunk or (status == OK and pos >= size) or status == TRUNCATED:
                if n:
                    yield out[:n]  # handed over: the next chunk gets a fresh array
                    out = np.empty(chunk, dtype=out.dtype)
                n = 0
            if status == TRUNCATED:
                counts.truncated = 1
                break
            keep = pos // mmap.PAGESIZE * mmap.PAGESIZE
            if keep - released >= window:
                mapped.madvise(mmap.MADV_DONTNEED, released, keep - released)
                bar.update(keep - released)
                released = keep
        if n:
            yield out[:n]
        bar.update(size - released)
    finally:
        del buf, words
        bar.close()
        counts.records, counts.non_ipv4, counts.too_short, counts.ipv6_keyed = (int(v) for v in raw)
