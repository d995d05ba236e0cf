from tests.report.report_fixtures import (
    agent_repo,
    history,
    make_repo,
    make_reporter,
    make_source,
    remote,
)

__all__ = ["agent_repo", "history", "make_repo", "make_reporter", "make_source", "remote"]
