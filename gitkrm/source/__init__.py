"""gitkrm.source: see docs/architecture.md."""
