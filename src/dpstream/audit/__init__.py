"""Statistical privacy auditing: an epsilon lower bound from seeded runs on neighbouring inputs, SVT cases."""

from dpstream.audit.tester import AuditResult, audit, clopper_pearson, epsilon_lower_bound

__all__ = ["AuditResult", "audit", "clopper_pearson", "epsilon_lower_bound"]
