"""Run `python -m warpwise` as the `warpwise` command."""

from warpwise.cli import main

raise SystemExit(main())
