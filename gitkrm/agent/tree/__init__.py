"""Source trees: objects a synced revision declares that become child sources of the agent
(gitkrm's own GitSource objects, and under `spec.interpret` Flux Kustomizations and Argo
CD Applications). `model` is the contract between the tree (which runs children) and the
interpreters (which read one peer's objects)."""
