"""`python -m treechat.cli …`: the `treechat` command."""

from . import main

raise SystemExit(main())
