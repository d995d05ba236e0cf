"""The OCI registry on loopback for the chart tests."""

from tests.support.registry import oci_registry

__all__ = ["oci_registry"]
