"""The sparse vector family (Kaplan, Mansour, Stemmer; the SVT notes): mechanisms, calibration, theory."""

from dpstream.privacy.accounting import sparse_sigma
from dpstream.privacy.svt import MonitorCalibration, calibrate_monitor
from dpstream.svt.monitor import ThresholdMonitor, ThresholdMonitorEvolving
from dpstream.svt.queries import LinearQueries
from dpstream.svt.sparse import AboveThreshold, GeneralisedSparse, NumericSparse, Sparse, SVTRun

__all__ = [
    "AboveThreshold",
    "GeneralisedSparse",
    "LinearQueries",
    "MonitorCalibration",
    "NumericSparse",
    "SVTRun",
    "Sparse",
    "ThresholdMonitor",
    "ThresholdMonitorEvolving",
    "calibrate_monitor",
    "sparse_sigma",
]
