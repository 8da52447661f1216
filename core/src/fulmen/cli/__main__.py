from fulmen.cli.dispatch import main

raise SystemExit(main())
