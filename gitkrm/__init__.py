"""gitkrm: a GitOps agent for Kubernetes Resource Model manifests."""

__version__ = "0.1.0"
