"""gitkrm.store: see docs/architecture.md."""
