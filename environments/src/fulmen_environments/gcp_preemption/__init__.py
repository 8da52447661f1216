"""The ``gcp_preemption`` notice plugin: Compute Engine preemptible and spot VMs
(``Trainer(plugins=["gcp_preemption"])``). Declares the record only; the notice class is
imported when the name is selected."""

from fulmen import NoticeSpec, hookimpl


@hookimpl
def fulmen_notices():
    yield NoticeSpec(
        name="gcp_preemption",
        target="fulmen_environments.notices:GCPPreemptionNotice",
        description="Compute Engine preemption (metadata instance/preempted); 30 s of notice",
    )
