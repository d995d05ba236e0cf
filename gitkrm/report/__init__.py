"""gitkrm.report: see docs/architecture.md."""
