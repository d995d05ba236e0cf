"""CEL in gitkrm: CRD validation rules, admission policies and health expressions.

The runtime (cel-expr-python, the CEL project's C++ runtime) is imported only by
`runtime`, on the first rule compiled; `library` adds the Kubernetes CEL libraries.
"""
