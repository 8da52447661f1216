"""What fulmen composes on this machine for a few selections, and what a mistake looks like."""

import fulmen

for kwargs in ({}, {"precision": "bf16-mixed"}, {"accelerator": "cpu", "precision": "64-true"}):
    trainer = fulmen.Trainer(**kwargs)
    print(f"Trainer(**{kwargs}) -> {trainer!r}")

for mistake in ({"strategy": "singel_device"}, {"accelerator": "gpu"}, {"devices": "1,,2"}):
    try:
        fulmen.Trainer(**mistake)
    except fulmen.ConfigurationError as error:
        print(f"Trainer(**{mistake}) -> ConfigurationError: {error}")
