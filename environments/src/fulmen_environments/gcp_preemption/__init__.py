"""The ``gcp_preemption`` notice plugin: Compute Engine preemptible and spot VMs
(``Trainer(plugins=["gcp_preemption"])``). Declares the record only; the notice class is
imported when the name is selected."""

from fulmen import NoticeSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and description.
SPEC = NoticeSpec(
    name="gcp_preemption",
    target="fulmen_environments.notices:GCPPreemptionNotice",
    description="Compute Engine preemption (metadata instance/preempted); 30 s of notice",
)


@hookimpl
def fulmen_notices():
    yield SPEC
