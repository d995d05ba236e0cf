"""What the simulation tests apply to a twin (`gitkrm.agent.simulate`, `gitkrm plan
--simulate`): a Deployment with its Service, and a ValidatingAdmissionPolicy that denies
pods running an image tagged `:latest`."""

from __future__ import annotations

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: {replicas}
  strategy: {{type: {strategy}}}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      {extra}containers:
      - {{name: web, image: "{image}", resources: {{requests: {{cpu: "{cpu}"}}}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: default}}
spec: {{selector: {{app: {name}}}, ports: [{{port: 80}}]}}
"""

PODS_PINNED = """\
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: pinned-images}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "object.spec.containers.all(c, !c.image.endsWith(':latest'))"
    message: images must be pinned, not :latest
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: pinned-images}
spec: {policyName: pinned-images, validationActions: [Deny]}
"""


def app(
    name: str,
    *,
    replicas: int = 2,
    strategy: str = "RollingUpdate",
    node_selector: str | None = None,
    cpu: str = "100m",
    image: str = "nginx:1.27",
) -> str:
    extra = f"nodeSelector: {{{node_selector}}}\n      " if node_selector else ""
    return APP.format(
        name=name, replicas=replicas, strategy=strategy, extra=extra, cpu=cpu, image=image
    )
