from gitkrm.agent.tree.naming import MAX_NAME, child_name
from gitkrm.krm import ObjectRef
from gitkrm.krm.names import is_dns1123_label


def ks(name: str, namespace: str = "flux-system") -> ObjectRef:
    return ObjectRef(
        group="kustomize.toolkit.fluxcd.io", kind="Kustomization", name=name, namespace=namespace
    )


def test_readable_stable_and_a_label() -> None:
    name = child_name(ks("apps"))
    assert name.startswith("flux-system-apps-")
    assert name == child_name(ks("apps"))
    assert not is_dns1123_label(name)


def test_unique_across_kinds_namespaces_and_versions() -> None:
    app = ObjectRef(group="argoproj.io", kind="Application", name="apps", namespace="flux-system")
    names = {child_name(ks("apps")), child_name(app), child_name(ks("apps", "other"))}
    assert len(names) == 3
    # the version is no part of the object's identity
    assert child_name(ks("apps")) != child_name(ks("apps-x"))


def test_long_and_odd_names_are_cut_to_a_label() -> None:
    ref = ks("a" * 200 + ".with.Dots", "n" * 63)
    name = child_name(ref)
    assert len(name) <= MAX_NAME
    assert not is_dns1123_label(name)
    assert child_name(ks("...", "")).startswith("child-")
