"""A search's trials as a replay would read them back from trials.jsonl.

Shared by the tests that check the search stays a pure function of its trial results: the
trials go through ``TrialRecord``'s JSON form (reasons split as the runner writes them), and
the replay hands them back in order.
"""

from __future__ import annotations

from vsbench.measurement.recheck import Replay
from vsbench.results.model import TrialIdentity, TrialRecord


def replay_from_trials_jsonl(trials) -> Replay:
    """A ``Replay`` of ``trials`` (TrialResults) after a round trip through trials.jsonl's form."""
    records = []
    for i, t in enumerate(trials):
        reasons = tuple(t.invalid_reason.split("; ")) if t.invalid_reason else ()
        doc = TrialRecord(TrialIdentity("abc123", 0, "p"), i, "search", "2024-01-01T00:00:00.000+00:00", False,
                          t, invalid_reasons=reasons).to_json()
        records.append(TrialRecord.from_json(doc))
    return Replay(records)
