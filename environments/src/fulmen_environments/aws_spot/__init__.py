"""The ``aws_spot`` notice plugin: EC2 spot interruption notices
(``Trainer(plugins=["aws_spot"])``). Declares the record only; the notice class is imported when
the name is selected."""

from fulmen import NoticeSpec, hookimpl

#: The plugin's record: its registered name (read by the class it targets, so the name has
#: one source), target and description.
SPEC = NoticeSpec(
    name="aws_spot",
    target="fulmen_environments.notices:AWSSpotNotice",
    description="EC2 spot interruption (instance-metadata spot/instance-action, IMDSv2); "
                "about 120 s of notice",
)


@hookimpl
def fulmen_notices():
    yield SPEC
