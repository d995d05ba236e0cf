"""gitkrm.health: see docs/architecture.md."""
