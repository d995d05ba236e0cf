"""CustomResourceDefinitions: registration, status, name clashes and custom resource admission."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gitkrm.errors import BadRequest, Invalid, NotFound
from gitkrm.krm.conditions import Condition, conditions_of
from gitkrm.krm.refs import GVK, GroupKind
from gitkrm.krm.types import FieldValidation
from gitkrm.schema import Registry

WIDGET = GVK(group="example.com", version="v1", kind="Widget")


def widget_crd(**overrides: Any) -> dict[str, Any]:
    spec_schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "color": {"type": "string", "default": "blue", "enum": ["blue", "red"]},
            "size": {"type": "integer", "minimum": 1},
            "port": {
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            },
            "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "note": {"type": "string", "nullable": True},
            "limits": {
                "type": "object",
                "default": {},
                "properties": {"cpu": {"type": "string", "default": "1"}},
            },
        },
        "required": ["size"],
    }
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "shortNames": ["wg"],
                "categories": ["all"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.size",
                            "statusReplicasPath": ".status.n",
                        },
                    },
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": spec_schema,
                                "status": {
                                    "type": "object",
                                    "properties": {"n": {"type": "integer"}},
                                },
                            },
                        }
                    },
                },
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": False,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                },
            ],
        },
    }
    crd["spec"].update(overrides)
    return crd


def widget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default"},
        "spec": {"size": 2, **spec},
    }


def register(registry: Registry, crd: dict[str, Any]) -> dict[str, Condition]:
    """Admit and register `crd` as the API server's create does; its conditions by type."""
    registry.admit(crd)
    registry.register_crd(crd)
    return {c["type"]: c for c in conditions_of(crd)}


def renamed_widget_crd(*, plural: str, kind: str) -> dict[str, Any]:
    """The widget CRD named anew (`<plural>.example.com`, `plural`, `kind`)."""
    crd = widget_crd()
    crd["metadata"]["name"] = f"{plural}.example.com"
    crd["spec"]["names"] = {"plural": plural, "kind": kind}
    return crd


@pytest.fixture
def crd_registry(registry: Registry) -> Registry:
    register(registry, widget_crd())
    return registry


def test_register_sets_status_and_serves_every_version(registry: Registry) -> None:
    crd = widget_crd()
    conditions = register(registry, crd)
    assert conditions["NamesAccepted"]["status"] == "True"
    assert conditions["NamesAccepted"]["reason"] == "NoConflicts"
    assert conditions["Established"]["status"] == "True"
    assert conditions["Established"]["lastTransitionTime"].endswith("Z")
    assert crd["status"]["acceptedNames"]["kind"] == "Widget"
    assert crd["status"]["acceptedNames"]["shortNames"] == ["wg"]
    assert crd["status"]["storedVersions"] == ["v1"]
    info = registry.info(WIDGET)
    assert info.custom
    assert info.namespaced
    assert info.plural == "widgets"
    assert info.short_names == ("wg",)
    assert info.categories == ("all",)
    assert info.subresources == {"status", "scale"}
    assert info.storage_version == "v1"
    assert info.selectable_fields == ("spec.color",)
    assert info.list_kind == "WidgetList"
    by_short = registry.info_for_resource(group="example.com", version="v1beta1", resource="wg")
    assert by_short.version == "v1beta1"
    assert [
        i.version for i in registry.versions_of(GroupKind(group="example.com", kind="Widget"))
    ] == [
        "v1",
        "v1beta1",
    ]


def test_reregistering_keeps_transition_time(registry: Registry) -> None:
    crd = widget_crd()
    register(registry, crd)
    first = crd["status"]["conditions"][0]["lastTransitionTime"]
    crd["status"]["conditions"][0]["lastTransitionTime"] = "2020-01-01T00:00:00Z"
    registry.register_crd(crd)
    assert crd["status"]["conditions"][0]["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    assert first


def test_name_clash_is_not_accepted(crd_registry: Registry) -> None:
    conditions = register(crd_registry, renamed_widget_crd(plural="gadgets", kind="Widget"))
    assert conditions["NamesAccepted"]["status"] == "False"
    assert conditions["NamesAccepted"]["reason"] == "KindConflict"
    assert conditions["NamesAccepted"]["message"] == '"Widget" is already in use'
    assert conditions["Established"]["status"] == "False"
    with pytest.raises(NotFound):
        crd_registry.info_for_resource(group="example.com", version="v1", resource="gadgets")


def test_plural_clash(crd_registry: Registry) -> None:
    # The same CRD re-registered under new names does not clash with itself.
    conditions = register(crd_registry, renamed_widget_crd(plural="widgets", kind="Thing"))
    assert conditions["NamesAccepted"]["status"] == "True"
    assert conditions["Established"]["status"] == "True"
    assert (
        crd_registry.info(GVK(group="example.com", version="v1", kind="Thing")).plural == "widgets"
    )
    with pytest.raises(NotFound):
        crd_registry.info(WIDGET)


def test_unregister(crd_registry: Registry) -> None:
    crd_registry.unregister_crd("widgets.example.com")
    with pytest.raises(NotFound):
        crd_registry.info(WIDGET)
    with pytest.raises(NotFound):
        crd_registry.admit(widget())


@pytest.mark.parametrize(
    ("mutate", "field", "message"),
    [
        (
            lambda c: c["metadata"].update(name="wrong.example.com"),
            "metadata.name",
            'must be spec.names.plural+"."+spec.group',
        ),
        (
            lambda c: c["spec"].update(group="example"),
            "spec.group",
            "should be a domain with at least one dot",
        ),
        (
            lambda c: c["spec"]["versions"][1].update(storage=True),
            "spec.versions",
            "must have exactly one version marked as storage version",
        ),
        (
            lambda c: c["spec"]["versions"][0].pop("schema"),
            "spec.versions[0].schema.openAPIV3Schema",
            "Required value: schemas are required",
        ),
        (
            lambda c: c["spec"]["names"].update(plural="Widgets"),
            "spec.names.plural",
            "DNS-1035 label",
        ),
        (lambda c: c["spec"].update(scope="Global"), "spec.scope", "Unsupported value"),
        (
            lambda c: c["spec"].update(preserveUnknownFields=True),
            "spec.preserveUnknownFields",
            "cannot set to true",
        ),
        (
            lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
                "properties"
            ].update(code={"type": "string", "pattern": "(["}),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[code].pattern",
            "regex",
        ),
        (
            lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"].update(type="string"),
            "spec.versions[0].schema.openAPIV3Schema.type",
            "must be object at the root",
        ),
        (
            lambda c: c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
                "properties"
            ].update(bad={"properties": {"x": {"type": "string"}}}),
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[bad].type",
            "must not be empty for specified object fields",
        ),
    ],
)
def test_invalid_crds(registry: Registry, mutate: Any, field: str, message: str) -> None:
    crd = widget_crd()
    mutate(crd)
    with pytest.raises(Invalid) as e:
        registry.register_crd(crd)
    causes = {c.field: c.message for c in e.value.causes}
    assert field in causes, causes
    assert message in causes[field]
    with pytest.raises(Invalid):
        registry.admit(copy.deepcopy(crd))


def test_protected_group_needs_approval(registry: Registry) -> None:
    crd = widget_crd(group="widgets.k8s.io")
    crd["metadata"]["name"] = "widgets.widgets.k8s.io"
    with pytest.raises(Invalid, match=r"api-approved\.kubernetes\.io"):
        registry.register_crd(crd)
    crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": "https://x/pull/1"}
    registry.register_crd(crd)


def test_custom_resource_defaults_and_valid_fields(crd_registry: Registry) -> None:
    obj = widget(port="http", extra={"any": {"thing": [1]}}, tags=["a", "b"], note=None)
    assert crd_registry.admit(obj) == []
    assert obj["spec"]["color"] == "blue"
    assert obj["spec"]["limits"] == {"cpu": "1"}
    assert obj["spec"]["extra"] == {"any": {"thing": [1]}}
    assert obj["spec"]["note"] is None
    assert obj["spec"]["port"] == "http"
    obj["spec"]["port"] = 8080
    crd_registry.admit(obj)


def test_custom_resource_every_cause(crd_registry: Registry) -> None:
    obj = widget(size=0, color="green", port=1.5, tags=["a", "a"])
    del obj["metadata"]["namespace"]
    with pytest.raises(Invalid) as e:
        crd_registry.admit(obj)
    causes = {c.field: c.message for c in e.value.causes}
    assert causes["spec.size"] == (
        "Invalid value: 0: spec.size in body should be greater than or equal to 1"
    )
    assert causes["spec.color"] == 'Unsupported value: "green": supported values: "blue", "red"'
    assert "must be of type integer or string" in causes["spec.port"]
    assert causes["spec.tags[1]"] == 'Duplicate value: "a"'
    assert causes["metadata.namespace"] == "Required value"
    assert 'Widget.example.com "w1" is invalid' in str(e.value)


def test_required_field(crd_registry: Registry) -> None:
    obj = widget()
    del obj["spec"]["size"]
    with pytest.raises(Invalid, match=r"spec.size: Required value"):
        crd_registry.admit(obj)


def test_pruning_modes(crd_registry: Registry) -> None:
    obj = widget(junk=1, extra={"kept": True})
    obj["metadata"]["bogus"] = 1
    with pytest.raises(BadRequest) as e:
        crd_registry.admit(copy.deepcopy(obj), field_validation=FieldValidation.STRICT)
    assert 'unknown field "spec.junk"' in e.value.message
    assert 'unknown field "metadata.bogus"' in e.value.message
    warned = copy.deepcopy(obj)
    warnings = crd_registry.admit(warned, field_validation=FieldValidation.WARN)
    assert sorted(warnings) == ['unknown field "metadata.bogus"', 'unknown field "spec.junk"']
    assert "junk" not in warned["spec"]
    assert warned["spec"]["extra"] == {"kept": True}
    ignored = copy.deepcopy(obj)
    assert crd_registry.admit(ignored, field_validation=FieldValidation.IGNORE) == []
    assert "junk" not in ignored["spec"]


def test_drop_unknown_prunes_without_defaulting_or_validating(crd_registry: Registry) -> None:
    # Argo CD's Validate=false (fieldValidation=Ignore) before the last-applied is taken:
    # only the unknown fields go; nothing is defaulted or refused here.
    obj = widget(junk=1, extra={"kept": True})
    assert crd_registry.drop_unknown(obj) == ["spec.junk"]
    assert obj["spec"] == {"size": 2, "extra": {"kept": True}}  # no default color
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "bogus": 1,
          "data": {"a": "1"}}  # fmt: skip
    assert crd_registry.drop_unknown(cm) == ["bogus"]
    assert cm == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                  "data": {"a": "1"}}  # fmt: skip
    unknown_kind = {"apiVersion": "nowhere.example/v1", "kind": "Thing", "x": 1}
    assert crd_registry.drop_unknown(unknown_kind) == []


def test_embedded_resource(crd_registry: Registry) -> None:
    obj = widget(
        template={
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "x", "zz": 1},
            "spec": {"anything": True},
        }
    )
    warnings = crd_registry.admit(obj, field_validation=FieldValidation.WARN)
    assert warnings == ['unknown field "spec.template.metadata.zz"']
    assert obj["spec"]["template"]["spec"] == {"anything": True}
    bad = widget(template={"metadata": {}})
    with pytest.raises(Invalid) as e:
        crd_registry.admit(bad)
    fields = {c.field for c in e.value.causes}
    assert {"spec.template.apiVersion", "spec.template.kind"} <= fields


def test_preserve_unknown_fields_version(crd_registry: Registry) -> None:
    obj = {
        "apiVersion": "example.com/v1beta1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"whatever": {"deep": [1, 2]}},
    }
    assert crd_registry.admit(obj) == []
    assert obj["spec"] == {"whatever": {"deep": [1, 2]}}


def test_cluster_scoped_custom_resource(registry: Registry) -> None:
    crd = widget_crd(scope="Cluster")
    registry.register_crd(crd)
    obj = widget()
    with pytest.raises(Invalid, match=r"metadata\.namespace"):
        registry.admit(obj)
    del obj["metadata"]["namespace"]
    registry.admit(obj)


def test_update_checks_metadata_immutability(crd_registry: Registry) -> None:
    old = widget()
    crd_registry.admit(old)
    new = copy.deepcopy(old)
    new["metadata"]["namespace"] = "other"
    with pytest.raises(Invalid, match="field is immutable"):
        crd_registry.admit(new, old=old)


def test_custom_schema_is_exposed(crd_registry: Registry) -> None:
    schema = crd_registry.custom_schema(WIDGET)
    assert schema is not None
    assert schema["type"] == "object"
    assert crd_registry.custom_schema(GVK(group="apps", version="v1", kind="Deployment")) is None


def test_crd_group_and_scope_are_immutable(registry: Registry) -> None:
    old = widget_crd()
    registry.admit(old)
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    with pytest.raises(Invalid) as e:
        registry.admit(new, old=old)
    assert {c.field for c in e.value.causes} == {"spec.scope"}
