"""Statistical privacy auditing: epsilon lower bounds from seeded runs on neighbouring inputs, SVT cases.

``audit`` certifies a given event; ``search_audit`` searches the event on half of the runs itself.
"""

from dpstream.audit.search import search_audit
from dpstream.audit.tester import AuditResult, audit, clopper_pearson, directed_lower_bound, epsilon_lower_bound

__all__ = ["AuditResult", "audit", "clopper_pearson", "directed_lower_bound", "epsilon_lower_bound", "search_audit"]
