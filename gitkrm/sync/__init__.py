"""gitkrm.sync: see docs/architecture.md."""
