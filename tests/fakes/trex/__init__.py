"""A fake TRex stateless server (separate process) for testing the trex plugin.

``python -m tests.fakes.trex --help`` from the repository root; tests use
:class:`tests.fakes.trex.launcher.FakeTrex`.
"""
