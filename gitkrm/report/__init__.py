"""gitkrm.report: what gitkrm writes into Git (DESIGN.md 4.5; formats in docs/status-format.md).

A note per synced commit (`refs/notes/gitkrm/<agent>`), the status file
`status/<agent>.yaml` on the branch `gitkrm/status`, both following health (throttled) and
pushed in the background with retries; `gitkrm history` reads the notes back.

Exports load on first use (`gitkrm.lazy`): the agent imports the reporter only when it
reports, `gitkrm status` only the status reader.
"""

from typing import TYPE_CHECKING

from gitkrm.lazy import exports

if TYPE_CHECKING:
    from .branch import Backoff, PushState
    from .follow import HealthFollower
    from .formats import (
        API_VERSION,
        NOTE_KIND,
        STATUS_BRANCH,
        STATUS_KIND,
        SourceInfo,
        SourceReport,
        notes_ref,
        status_path,
    )
    from .history import HistoryEntry, SyncRecord, repo_history, state_history, url_history
    from .localstatus import read_local_status, status_health_text
    from .reporter import Reporter
    from .table import health_rows, health_table, live_rows, source_health
    from .validation import validate_note, validate_status

__getattr__ = exports(
    __name__,
    {
        "API_VERSION": ".formats",
        "Backoff": ".branch",
        "HealthFollower": ".follow",
        "HistoryEntry": ".history",
        "NOTE_KIND": ".formats",
        "PushState": ".branch",
        "Reporter": ".reporter",
        "STATUS_BRANCH": ".formats",
        "STATUS_KIND": ".formats",
        "SourceInfo": ".formats",
        "SourceReport": ".formats",
        "SyncRecord": ".history",
        "health_rows": ".table",
        "health_table": ".table",
        "live_rows": ".table",
        "notes_ref": ".formats",
        "read_local_status": ".localstatus",
        "repo_history": ".history",
        "source_health": ".table",
        "state_history": ".history",
        "status_health_text": ".localstatus",
        "status_path": ".formats",
        "url_history": ".history",
        "validate_note": ".validation",
        "validate_status": ".validation",
    },
)

__all__ = [
    "API_VERSION",
    "NOTE_KIND",
    "STATUS_BRANCH",
    "STATUS_KIND",
    "Backoff",
    "HealthFollower",
    "HistoryEntry",
    "PushState",
    "Reporter",
    "SourceInfo",
    "SourceReport",
    "SyncRecord",
    "health_rows",
    "health_table",
    "live_rows",
    "notes_ref",
    "read_local_status",
    "repo_history",
    "source_health",
    "state_history",
    "status_health_text",
    "status_path",
    "url_history",
    "validate_note",
    "validate_status",
]
