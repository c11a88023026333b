"""Heavy hitters under continual observation: ``LazyHH`` (Holland, Alg. 6) and its baselines."""

from dpstream.heavy_hitters._tracker import HeavyHitters
from dpstream.heavy_hitters.baselines import CMSHeap, PunctualHH
from dpstream.heavy_hitters.lazy_hh import LazyHH

__all__ = ["CMSHeap", "HeavyHitters", "LazyHH", "PunctualHH"]
