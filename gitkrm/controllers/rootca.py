"""The root CA publisher: every namespace has the `kube-root-ca.crt` ConfigMap the pods'
service-account token volume projects (kube-controller-manager's root-ca-cert-publisher):
`ca.crt` is the certificate that verifies the API server, so created with the namespace,
created again when deleted and put back when its data or description is changed."""

from __future__ import annotations

from gitkrm.controllers.kinds import CONFIG_MAP
from gitkrm.controllers.pernamespace import PerNamespaceController
from gitkrm.krm import Obj
from gitkrm.schema.pod_admission import ROOT_CA_CONFIGMAP

DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)
# The CA when the API is served without TLS: a fixed self-signed Ed25519 certificate
# (CN gitkrm-root-ca, 2025 to 2125), the same in every namespace and every run.
STABLE_CA = """-----BEGIN CERTIFICATE-----
MIH1MIGooAMCAQICAQEwBQYDK2VwMBkxFzAVBgNVBAMMDmdpdGtybS1yb290LWNh
MCAXDTI1MDEwMTAwMDAwMFoYDzIxMjUwMTAxMDAwMDAwWjAZMRcwFQYDVQQDDA5n
aXRrcm0tcm9vdC1jYTAqMAUGAytlcAMhALihsFF4lz/nZfcmO8RE1Cm7PkOc8u8L
V6IVwVZT5okVoxMwETAPBgNVHRMBAf8EBTADAQH/MAUGAytlcANBAIZxWJ5gvaJB
/2nbWOU76SFqecHURT0vFTxVxv5wKLTEtaMwB4Lm63F1u7pt6Qm4DqUEUQtrIekK
S1r/LY0iDAE=
-----END CERTIFICATE-----
"""


class RootCAPublisher(PerNamespaceController):
    name = "root-ca-cert-publisher"
    kind = CONFIG_MAP
    object_name = ROOT_CA_CONFIGMAP

    @property
    def ca(self) -> str:
        return self.options.root_ca_pem or STABLE_CA

    def desired(self, namespace: str) -> Obj:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": ROOT_CA_CONFIGMAP,
                "namespace": namespace,
                "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
            },
            "data": {"ca.crt": self.ca},
        }

    def restored(self, live: Obj) -> Obj | None:
        md = live["metadata"]
        annotations = md.get("annotations") or {}
        if (
            live.get("data") == {"ca.crt": self.ca}
            and annotations.get(DESCRIPTION_ANNOTATION) == DESCRIPTION
        ):
            return None
        return {
            **live,
            "metadata": {**md, "annotations": {**annotations, DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": {"ca.crt": self.ca},
        }
