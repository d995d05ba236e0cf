"""The cluster target: the Store protocol over a Kubernetes API with aiohttp
(`open_store("kube://?kubeconfig=PATH&context=NAME")`; see docs/reference.md)."""

from gitkrm.store.kube.client import ClientOptions, KubeClient, RateLimiter
from gitkrm.store.kube.discovery import Discovery, Resource
from gitkrm.store.kube.kubeconfig import (
    ClusterConfig,
    ExecConfig,
    ExecCredentials,
    FileToken,
    StaticToken,
    TokenSource,
    in_cluster_config,
    load_kubeconfig,
)
from gitkrm.store.kube.store import KubeStore

__all__ = [
    "ClientOptions",
    "ClusterConfig",
    "Discovery",
    "ExecConfig",
    "ExecCredentials",
    "FileToken",
    "KubeClient",
    "KubeStore",
    "RateLimiter",
    "Resource",
    "StaticToken",
    "TokenSource",
    "in_cluster_config",
    "load_kubeconfig",
]
