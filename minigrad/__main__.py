"""`python -m minigrad` runs the `minigrad` command."""

from minigrad.models.cli import main

raise SystemExit(main())
