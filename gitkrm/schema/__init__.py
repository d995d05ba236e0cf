"""gitkrm.schema: see docs/architecture.md."""
