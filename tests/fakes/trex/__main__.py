"""``python -m tests.fakes.trex``: run the fake TRex server until SIGTERM."""

from tests.fakes.trex.server import main

raise SystemExit(main())
