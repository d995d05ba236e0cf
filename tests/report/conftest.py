from tests.report.report_fixtures import (
    history,
    make_repo,
    make_reporter,
    make_source,
    remote,
)

__all__ = ["history", "make_repo", "make_reporter", "make_source", "remote"]
