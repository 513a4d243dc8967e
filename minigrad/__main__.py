"""`python -m minigrad` runs the `minigrad` command (minigrad/cli.py)."""

from minigrad.cli import main

raise SystemExit(main())
