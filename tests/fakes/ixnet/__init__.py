"""A fake IxNetwork REST API server (separate process) for testing the ixnet plugin.

``python tests/fakes/ixnet/fake_ixnetwork.py --help``; tests use
:class:`tests.fakes.ixnet.launcher.FakeIxNetwork`. The server's own modules import each
other as siblings (it runs as a script), so only ``launcher`` is imported as a package module.
"""
