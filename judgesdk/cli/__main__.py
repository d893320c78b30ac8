"""``python -m judgesdk.cli``: the ``judgesdk`` command, for environments where the console script is not on PATH."""

from judgesdk.cli.app import main

raise SystemExit(main())
