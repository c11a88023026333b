"""``python -m dpstream ...``: the same command as ``dpstream ...`` (``dpstream.cli``)."""

from dpstream.cli import main

main()
