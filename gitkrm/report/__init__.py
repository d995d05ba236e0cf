"""gitkrm.report: what gitkrm writes into Git (DESIGN.md 4.5; formats in docs/status-format.md).

A note per synced commit (`refs/notes/gitkrm/<agent>`), the status file
`status/<agent>.yaml` on the branch `gitkrm/status`, both following health (throttled) and
pushed in the background with retries; `gitkrm history` reads the notes back.
"""

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
from .reporter import Reporter
from .table import (
    health_rows,
    health_table,
    live_rows,
    read_local_status,
    source_health,
    status_health_text,
)
from .validation import validate_note, validate_status

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
