from __future__ import annotations

from gitkrm.source.redact import Redactor, split_userinfo


def test_split_userinfo() -> None:
    p = split_userinfo("https://user:t%40ken@example.com:8443/org/repo.git")
    assert (p.url, p.username, p.password) == (
        "https://example.com:8443/org/repo.git",
        "user",
        "t@ken",
    )
    p = split_userinfo("https://tokenonly@example.com/repo")
    assert (p.url, p.username, p.password) == ("https://example.com/repo", "tokenonly", None)
    assert split_userinfo("ssh://git@example.com/repo").url == "ssh://git@example.com/repo"
    assert split_userinfo("git@example.com:org/repo.git").url == "git@example.com:org/repo.git"
    assert split_userinfo("/srv/git/repo.git").username is None


def test_redactor_hides_secrets_and_userinfo() -> None:
    r = Redactor(["s3cr3t/tok"])
    text = "fatal: https://bob:other@host/x and s3cr3t/tok and s3cr3t%2Ftok"
    out = r(text)
    assert "s3cr3t" not in out
    assert "other" not in out
    assert "bob" not in out
    assert "https://***@host/x" in out
    assert (
        Redactor(["ab"])("ab stays: too short to be a secret")
        == "ab stays: too short to be a secret"
    )
