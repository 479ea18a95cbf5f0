"""Integration testcases (VSPERF's ``--integration``): declarative step lists run on a
``deployment: clean`` testbed. :mod:`.steps` parses and checks them (pure),
:mod:`.catalog` finds and loads the testcase files, :mod:`.execute` runs the steps."""
