"""The kit holds stop-notice plugins to their contract (``notice.*`` clauses): the built-in cloud
notices pass, and a notice that announces a stop nobody scheduled, leaves its thread running or
describes itself badly fails the clause it breaks."""

from __future__ import annotations

import pytest

from fulmen.testing import check

pytestmark = pytest.mark.timeout(300)

BROKEN = '''
import threading

from fulmen import NoticeSpec, hookimpl
from fulmen.api.notice import Notice, PreemptionNotice


class Jumpy(PreemptionNotice):
    """Announces a stop as soon as it starts."""

    def start(self, announce):
        announce(Notice(self.name, "stop", 15, None, "nothing happened"))


class Leaky(PreemptionNotice):
    """Describes itself on two lines and leaves its watcher running after stop()."""

    per_node = "yes"

    def start(self, announce):
        self.done = threading.Event()
        threading.Thread(target=self.done.wait, args=(30,), name="leaky-watch",
                         daemon=True).start()

    def describe(self):
        return "leaky\\nnotice"


@hookimpl
def fulmen_notices():
    yield NoticeSpec(name="jumpy", target=f"{__name__}:Jumpy")
    yield NoticeSpec(name="leaky", target=f"{__name__}:Leaky")
'''


def test_builtin_notices_pass_and_broken_ones_fail_their_clause(fake_dists):
    module = fake_dists.unique("acme_notices")
    fake_dists.add("acme-notices", {"acme_notices": module}, {module: BROKEN})
    fake_dists.reload()
    report = check(["gcp_preemption", "acme_notices"], timeout=90)
    got = {(r.name, r.clause): r for r in report.results}
    assert got[("gcp_preemption", "notice.describe")].status == "pass"
    assert got[("gcp_preemption", "notice.watch")].status == "pass"
    assert got[("jumpy", "notice.describe")].status == "pass"
    jumpy = got[("jumpy", "notice.watch")]
    assert jumpy.status == "fail" and "although no stop was scheduled" in jumpy.detail
    leaky = got[("leaky", "notice.watch")]
    assert leaky.status == "fail" and "threads still run after stop(): ['leaky-watch']" in \
        leaky.detail
    described = got[("leaky", "notice.describe")]
    assert described.status == "fail" and "describe() returned 'leaky\\nnotice'" in \
        described.detail
    assert (leaky.plugin, leaky.distribution) == ("acme_notices", "acme-notices")
