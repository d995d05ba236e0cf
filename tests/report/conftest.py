from tests.report.report_fixtures import (
    free_port,
    make_repo,
    make_reporter,
    make_source,
    remote,
)

__all__ = ["free_port", "make_repo", "make_reporter", "make_source", "remote"]
