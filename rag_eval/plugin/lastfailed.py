"""``--lf`` and ``--ff`` in gate mode: a failing or erroring case is reported as xfail
(the gates decide the run), and pytest's cache forgets xfailed tests, so ``--lf`` said
"no previously failed tests" and reran everything. This records those cases as failed in
pytest's last-failed cache, so ``--lf`` reruns exactly the cases that failed."""

from __future__ import annotations

import pytest

LF_PLUGIN = "lfplugin"  # the name pytest's cacheprovider registers its LFPlugin under


class GateModeFailures:
    """Registered on the controller; ``failing`` holds the node ids of the failing cases."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.failing: set[str] = set()

    @pytest.hookimpl(trylast=True)  # after pytest's LFPlugin dropped the xfailed report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or not hasattr(report, "wasxfail") or report.nodeid not in self.failing:
            return
        lf = self.config.pluginmanager.get_plugin(LF_PLUGIN)
        lastfailed = getattr(lf, "lastfailed", None)
        if isinstance(lastfailed, dict):
            lastfailed[getattr(report, "id", report.nodeid)] = True  # pytest 9 keys by structured NodeId
