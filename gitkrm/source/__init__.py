"""gitkrm.source: revisioned trees of manifests, from a Git remote or a plain directory.

See `protocol.Source` for the contract the sync engine uses.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from .credentials import Auth, HttpsAuth, SecretRef, SshAuth
    from .errors import InvalidRevision, PathNotFound, UntrustedRevision
    from .gitsource import GitSource
    from .ignore import DEFAULT_IGNORES, IGNORE_FILE
    from .local import LocalSource
    from .protocol import Source, WatchedSource
    from .snapshot import FileEntry, Snapshot, git_blob_id
    from .spec import GitRef, GitSourceSpec, RefKind
    from .tree import DEFAULT_MAX_FILE_SIZE
    from .verify import VerifyMode, VerifySpec

__getattr__ = exports(
    __name__,
    {
        "Auth": ".credentials",
        "DEFAULT_IGNORES": ".ignore",
        "DEFAULT_MAX_FILE_SIZE": ".tree",
        "FileEntry": ".snapshot",
        "GitRef": ".spec",
        "GitSource": ".gitsource",
        "GitSourceSpec": ".spec",
        "HttpsAuth": ".credentials",
        "IGNORE_FILE": ".ignore",
        "InvalidRevision": ".errors",
        "LocalSource": ".local",
        "PathNotFound": ".errors",
        "RefKind": ".spec",
        "SecretRef": ".credentials",
        "Snapshot": ".snapshot",
        "Source": ".protocol",
        "SshAuth": ".credentials",
        "UntrustedRevision": ".errors",
        "VerifyMode": ".verify",
        "VerifySpec": ".verify",
        "WatchedSource": ".protocol",
        "git_blob_id": ".snapshot",
    },
)

__all__ = [
    "DEFAULT_IGNORES",
    "DEFAULT_MAX_FILE_SIZE",
    "IGNORE_FILE",
    "Auth",
    "FileEntry",
    "GitRef",
    "GitSource",
    "GitSourceSpec",
    "HttpsAuth",
    "InvalidRevision",
    "LocalSource",
    "PathNotFound",
    "RefKind",
    "SecretRef",
    "Snapshot",
    "Source",
    "SshAuth",
    "UntrustedRevision",
    "VerifyMode",
    "VerifySpec",
    "WatchedSource",
    "git_blob_id",
]
