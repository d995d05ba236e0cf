"""gitkrm.cli: see docs/architecture.md."""
