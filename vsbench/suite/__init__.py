"""Suites: the testcase runs and tables that reproduce one published report.

A suite (``suites/*.yaml``, or a file a third-party package registers under the
``vsbench.suite`` entry point) lists testcase runs -- a testcase, its plugins and parameters,
per profile (``quick`` for the embedded 2-core testbed, ``full`` for a lab with the report's
own parameters) -- and the tables to render from their results, each tagged with its id in
the report (``shared/reference/seed-tables.md``).

This layer sits beside the runner (DESIGN.md: a suite orchestrates runs and renders pages;
it measures nothing itself): it expands runs into the runner's plans, hands the runnable
ones to the runner, and builds each id's rows from the files the run left. The host decides
what is runnable (:mod:`vsbench.suite.host`); a run the host cannot do is still expanded
and validated, and its rows say why they were not measured.

Modules, one job each: :mod:`model` (the suite as typed data), :mod:`catalog` (finding and
validating suites), :mod:`host` (the host's facts and the runs' requirements),
:mod:`planning` (runs -> plans), :mod:`metrics` (a row's figures from results.json, pure),
:mod:`tables` (each id's rows, pure), :mod:`document` (suite.json), :mod:`execute` (the whole
suite run).
"""
