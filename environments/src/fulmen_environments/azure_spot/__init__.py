"""The ``azure_spot`` notice plugin: Azure spot VM evictions through Scheduled Events
(``Trainer(plugins=["azure_spot"])``). Declares the record only; the notice class is imported
when the name is selected."""

from fulmen import NoticeSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and description.
SPEC = NoticeSpec(
    name="azure_spot",
    target="fulmen_environments.notices:AzureSpotNotice",
    description="Azure spot eviction (Scheduled Events, type Preempt); at least 30 s of "
                "notice",
)


@hookimpl
def fulmen_notices():
    yield SPEC
