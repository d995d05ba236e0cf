"""Pure parts of the Deployment controller's revisions: the revision-history annotation of
a ReplicaSet rolled back to, and which templates are the same (EqualIgnoreHash)."""

from __future__ import annotations

from gitkrm.controllers.revisions import (
    REVISION,
    REVISION_HISTORY,
    same_template,
    with_old_revision,
)


def test_revision_history_appends_and_drops_the_oldest_past_2000_characters() -> None:
    assert with_old_revision({REVISION: "1"}) == "1"
    assert with_old_revision({REVISION: "4", REVISION_HISTORY: "1,2"}) == "1,2,4"
    long = ",".join(str(n) for n in range(1000, 1400))  # 1,999 characters
    out = with_old_revision({REVISION: "7", REVISION_HISTORY: long})
    assert out.endswith(",1399,7")
    assert out.startswith("1001,")  # 1000 dropped to stay within 2,000
    assert len(out) <= 2000


def test_templates_equal_as_go_sees_them() -> None:
    ours = {
        "metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
    }
    go_client = {  # what a Go client (kubectl rollout undo) writes back
        "metadata": {"creationTimestamp": None, "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {}, "env": []}]},
    }
    assert same_template(ours, go_client)
    other = {**go_client, "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}
    assert not same_template(ours, other)
    empty_dir = {"volumes": [{"name": "v", "emptyDir": {}}], "containers": []}
    no_dir = {"volumes": [{"name": "v"}], "containers": []}
    assert not same_template({"spec": empty_dir}, {"spec": no_dir})  # a pointer: {} is a value
