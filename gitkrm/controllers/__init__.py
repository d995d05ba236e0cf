"""gitkrm.controllers: see docs/architecture.md."""
