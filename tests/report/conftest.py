from tests.report.report_fixtures import (
    make_repo,
    make_reporter,
    make_source,
    remote,
)

__all__ = ["make_repo", "make_reporter", "make_source", "remote"]
