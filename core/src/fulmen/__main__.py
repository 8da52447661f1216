"""``python -m fulmen`` is the ``fulmen`` command."""

from fulmen.cli import main

raise SystemExit(main())
