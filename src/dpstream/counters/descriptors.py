"""Descriptor of the continual-counter leaderboard cell (experiment counters, ``dpstream.trials.counters``)."""

from __future__ import annotations

from dpstream.descriptor import Descriptor, Style, register

register(Descriptor("counter_board", None, Style("tab:brown", "1", ":")))
