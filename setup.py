"""Build hook only (metadata lives in setup.cfg): ship conf/, testcases/, suites/ and the Debian
package lists inside the wheel as ``vsbench/data/``.

In the checkout they live at the top level, where users edit them and vsbench reads them
(:func:`vsbench.runner.config.project_root`); an installed wheel has no checkout, so the
build copies them into the package, and ``project_root`` finds them there.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: (folder in the checkout, file pattern): what vsbench reads at run time.
DATA = (("conf", "*.yaml"), ("testcases", "*.yaml"), ("testcases/integration", "*.yaml"), ("suites", "*.yaml"), ("suites/references", "*.yaml"),
        ("tools/packages", "*.txt"))


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "vsbench" / "data"
        for folder, pattern in DATA:
            files = sorted((ROOT / folder).glob(pattern))
            if not files:
                raise RuntimeError(f"no {pattern} in {folder}/: an incomplete source tree")
            dest = target / folder
            dest.mkdir(parents=True, exist_ok=True)
            for src in files:
                shutil.copy2(src, dest / src.name)


setup(cmdclass={"build_py": BuildPyWithData})
