"""gitkrm.agent: see docs/architecture.md."""
