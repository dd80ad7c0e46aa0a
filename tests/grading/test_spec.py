"""Job records: one list of statuses, and the README's status table says the same."""

import re

from autograder.grading.spec import PRECEDENCE, JobResult, Status, set_status
from tests.conftest import REPO


def test_readme_status_table_lists_exactly_the_statuses():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text[text.index("| status | meaning |"):]
    table = table[:table.index("\n\n")]
    assert set(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE)) == {s.value for s in Status}


def test_the_more_important_status_wins_whatever_the_order():
    assert set(PRECEDENCE) == set(Status)
    for first in Status:
        for second in Status:
            result = JobResult("s", "a", "n", Status.GRADED.value)
            set_status(result, first)
            set_status(result, second)
            expected = min(first, second, key=PRECEDENCE.index)
            assert result.status == expected.value
