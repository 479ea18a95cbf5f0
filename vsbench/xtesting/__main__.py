"""``python -m vsbench.xtesting``: print the sample testcases.yaml (to copy where
Xtesting's run_tests looks for it and edit)."""

from importlib import resources

if __name__ == "__main__":
    print(resources.files("vsbench.xtesting").joinpath("testcases.yaml").read_text(encoding="utf-8"), end="")
