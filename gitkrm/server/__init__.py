"""gitkrm.server: see docs/architecture.md."""
