"""The Xtesting testcase class (entry point ``xtesting.testcase: vsbench``).

``run`` starts vsbench as a process of its own (the argv of :mod:`.arguments`), with the
run directory under Xtesting's result directory for the case (``res_dir``: what
``run_tests -p`` publishes as the artifact), and sets Xtesting's result: 100 when vsbench
exits 0 -- the run completed and every gate held -- else 0, so a testcases.yaml
``criteria: 100`` makes a failed gate Xtesting's FAIL. The figures go into ``details``
(the test database's record).
"""

from __future__ import annotations

import logging
import subprocess
import time
from pathlib import Path

from xtesting.core import testcase

from vsbench.xtesting.arguments import ArgumentsError, newest_run_dir, result_details, vsbench_argv

log = logging.getLogger(__name__)


class Vsbench(testcase.TestCase):
    """A vsbench testcase or suite run by Xtesting."""

    __test__ = False  # not a pytest test class

    def run(self, **kwargs):
        self.start_time = time.time()
        results_dir = Path(self.res_dir)
        try:
            argv = vsbench_argv(kwargs, results_dir)
        except ArgumentsError as exc:
            log.error("vsbench testcase %s: %s", self.case_name, exc)
            self.stop_time = time.time()
            return self.EX_RUN_ERROR
        results_dir.mkdir(parents=True, exist_ok=True)
        log.info("vsbench testcase %s: %s", self.case_name, " ".join(argv))
        with open(results_dir / "vsbench.log", "a", encoding="utf-8") as out:
            code = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  check=False).returncode
        self.stop_time = time.time()
        run_dir = newest_run_dir(results_dir)
        if run_dir is None:
            log.error("vsbench testcase %s: vsbench exited %d before making a run directory "
                      "(see %s)", self.case_name, code, results_dir / "vsbench.log")
            self.result = 0
            return self.EX_RUN_ERROR
        self.details = result_details(run_dir, code)
        self.result = 100 if code == 0 else 0
        return self.EX_OK
