"""What a file is, from its first bytes: a compressed file, or a binary format other than the one a reader takes.

The readers (``data.items``, ``data.traces``) check a file here first, so a gzip file or a capture given as ``.npy``
is named as such, not reported as empty or as holding pickled objects.
"""

from __future__ import annotations

from pathlib import Path

COMPRESSED = ((b"\x1f\x8b", "gzip", "gunzip"), (b"BZh", "bzip2", "bunzip2"), (b"\xfd7zXZ\x00", "xz", "unxz"),
              (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"), (b"PK\x03\x04", "zip", "unzip"))
"""(magic, name, the command that decompresses it)."""
BINARY = ((b"\x93NUMPY", "npy"), (b"PAR1", "parquet"), (b"\xd4\xc3\xb2\xa1", "pcap"), (b"\xa1\xb2\xc3\xd4", "pcap"),
          (b"\x4d\x3c\xb2\xa1", "pcap"), (b"\xa1\xb2\x3c\x4d", "pcap"), (b"\x0a\x0d\x0d\x0a", "pcapng"))
"""(magic, format) of the binary formats the readers take."""
TEXT_FORMATS = ("txt", "csv")


def binary_kind(head: bytes) -> str | None:
    """The binary format (``BINARY``) whose magic ``head`` starts with, or None."""
    return next((kind for magic, kind in BINARY if head.startswith(magic)), None)


def check_file_kind(path: Path, fmt: str) -> None:
    """Refuse a compressed file, and a file not of format ``fmt``: ``ValueError`` naming it, what it is, what to do.

    A text format (``txt``, ``csv``) refuses a binary file, a binary one (``npy``, ``parquet``) anything but itself;
    other formats (raw records, ``auto``) are checked for compression only.
    """
    with open(path, "rb") as fh:
        head = fh.read(8)
    for magic, name, tool in COMPRESSED:
        if head.startswith(magic) and not (name == "zip" and fmt == "npy"):
            raise ValueError(f"{path} is {name}-compressed: decompress it first ({tool} {path.name}) and read the "
                             "result")
    kind = binary_kind(head)
    if fmt in TEXT_FORMATS and kind is not None:
        raise ValueError(f"{path} is a {kind} file, not {fmt} text: set the format to {kind} (or read it with the "
                         "data source for that format)")
    if fmt in ("npy", "parquet") and kind != fmt:
        found = f"a {kind} file" if kind else "not in that format"
        raise ValueError(f"{path} is not a .{fmt} file ({found}); set the format to the file's own")
