"""gitkrm.patch: see docs/architecture.md."""
