"""Stream and dataset generators and readers; each is a plain function named by a ``conf/data/*.yaml`` ``_target_``."""

from dpstream.data.zipf import zipf_stream

__all__ = ["zipf_stream"]
