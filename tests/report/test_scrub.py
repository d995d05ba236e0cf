from __future__ import annotations

import pytest

from gitkrm.report.scrub import scrub_secret_values


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (
            'a.yaml:1: Secret default/s: Secret "s" is invalid: [data.k: Invalid value: '
            '{"x":"v}]:\\"1"}: must be of type string, data.p: Invalid value: 12345: bad]',
            'a.yaml:1: Secret default/s: Secret "s" is invalid: [data.k: Invalid value: ***: '
            "must be of type string, data.p: Invalid value: ***: bad]",
        ),
        (
            'Secret "s" is invalid: data.k: Invalid value: "hunter2 \\" quoted": not base64',
            'Secret "s" is invalid: data.k: Invalid value: ***: not base64',
        ),
        (
            "Secret s: type: Unsupported value: [1, [2, 3]], and more",
            "Secret s: type: Unsupported value: ***, and more",
        ),
        ("Secret s: Invalid value: ", "Secret s: Invalid value: ***"),
        ('Secret s: Invalid value: "unterminated', "Secret s: Invalid value: ***"),
        ("Secret s: Invalid value: {unbalanced", "Secret s: Invalid value: ***"),
    ],
)
def test_values_in_lines_about_secrets_are_masked(line: str, want: str) -> None:
    assert scrub_secret_values(line) == want


def test_other_lines_are_unchanged() -> None:
    line = 'ConfigMap "c" is invalid: data.k: Invalid value: "shown": too long'
    assert scrub_secret_values(line) == line
    assert (
        scrub_secret_values("SecretStore x: Invalid value: 1") == "SecretStore x: Invalid value: 1"
    )
