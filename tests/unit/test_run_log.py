"""The run's log: INFO by default, DEBUG with --debug, never a library's chatter."""

import logging

from vsbench.runner.run import _RunLogFile, log_level_of


def _emit() -> None:
    logging.getLogger("vsbench.runner.x").debug("own debug")
    logging.getLogger("vsbench_plugins.vswitch").info("own info")
    logging.getLogger("pyroute2.netlink").debug("library debug")
    logging.getLogger("pyroute2.netlink").info("library info")
    logging.getLogger("pyroute2.netlink").warning("library warning")


def _log_of(tmp_path, level) -> str:
    path = tmp_path / "logs" / "vsbench.log"
    log_file = _RunLogFile(path, level)
    try:
        _emit()
    finally:
        log_file.close()
    return path.read_text()


def test_default_log_is_info_without_library_chatter(tmp_path):
    text = _log_of(tmp_path, logging.INFO)
    assert "own info" in text and "library warning" in text
    assert "own debug" not in text
    assert "library debug" not in text and "library info" not in text


def test_debug_log_has_own_debug_lines_and_library_info_only(tmp_path):
    text = _log_of(tmp_path, logging.DEBUG)
    assert "own debug" in text and "own info" in text and "library info" in text
    assert "library debug" not in text


def test_the_root_logger_is_restored(tmp_path):
    root = logging.getLogger()
    before = (root.level, list(root.handlers))
    _log_of(tmp_path, logging.DEBUG)
    assert (root.level, list(root.handlers)) == before



def test_log_level_comes_from_the_config_unless_debug():
    class Plan:
        def __init__(self, config):
            self.config = config
    assert log_level_of([Plan({})], debug=False) == logging.INFO
    assert log_level_of([Plan({"log_level": "warning"})], debug=False) == logging.WARNING
    assert log_level_of([Plan({"log_level": "warning"})], debug=True) == logging.DEBUG
