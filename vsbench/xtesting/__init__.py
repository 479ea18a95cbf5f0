"""vsbench as an Xtesting testcase: OPNFV's test runner (PyPI ``xtesting``) runs vsbench
testcases and suites as it runs any other project's (``run_tests -t phy2phy_tput``).

Xtesting finds a testcase class through the entry point group ``xtesting.testcase`` --
vsbench registers :class:`vsbench.xtesting.testcase.Vsbench` as ``vsbench`` -- and its
``testcases.yaml`` names it (``run: {name: vsbench, args: {test: phy2phy_tput, ...}}``):
``conf/xtesting/testcases.yaml`` is a sample. Installed with ``pip install
'vsbench[xtesting]'``; :mod:`.arguments` (the command line and the result fields) needs no
Xtesting, so it is tested without it.
"""
