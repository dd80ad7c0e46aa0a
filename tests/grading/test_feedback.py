"""What the student reads: sandbox text scrubbed and named by their own cells, offline pages."""

import sys

import nbformat

from autograder.grading import feedback

CELLS = [{"kind": "setup", "label": "In [1]", "source": "import threading"},
         {"kind": "answer", "grade_id": "ex_counter", "label": "In [2]",
          "source": "class Counter:\n    def increment(self):\n        self.value += 1"},
         {"kind": "test", "label": "In [3]", "source": "check(Counter)"}]


def test_scrub_drops_grader_frames_host_paths_and_numbers_addresses_in_order():
    text = (f'  File "{sys.prefix}/lib/python3.11/site-packages/x.py", line 3, in f\n'
            "    g()\n"
            "<Lock at 0x7f00aa> then <Lock at 0x7f00bb> then <Lock at 0x7f00aa>\n"
            f"see {feedback._PACKAGE_DIR}/autograder/harness/tamper.py")
    scrubbed = feedback.scrub(text)
    assert "site-packages" not in scrubbed and sys.prefix not in scrubbed
    assert feedback._PACKAGE_DIR not in scrubbed
    assert "<Lock #1> then <Lock #2> then <Lock #1>" in scrubbed


def test_a_race_detector_place_reads_as_the_students_own_cell_and_line():
    named = feedback.scrub("<cell 1> line 3 in increment", CELLS)
    assert named == ("line 3 of your answer cell ex_counter (In [2]), in increment "
                     "(`self.value += 1`)")
    assert feedback.scrub('File "<cell 2>", line 1', CELLS) == (
        "line 1 of the test cell In [3] (`check(Counter)`)")
    assert feedback.scrub("<cell 9> line 1", CELLS) == "a cell line 1"  # not in the plan


def test_error_text_is_the_last_error_without_terminal_colours():
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.v4.new_output("error", ename="ValueError", evalue="first",
                                           traceback=[]),
                    nbformat.v4.new_output("error", ename="AssertionError",
                                           evalue="\x1b[31mexpected 4\x1b[0m", traceback=[])]
    assert feedback.error_text(cell) == "AssertionError: expected 4"
    assert feedback.error_text(nbformat.v4.new_code_cell("y")) == ""


def test_feedback_page_fetches_nothing_and_names_each_test_by_its_exercise():
    html = ('<html><head><script src="https://cdn.example/mathjax.js"></script></head><body>'
            '<a href="#test_counter">Test cell</a></body></html>')
    page = feedback.with_exercise_titles(feedback.readable_offline(html),
                                         {"test_counter": "Exercise 1: a <safe> counter"})
    assert "https://" not in page and "white-space: pre-wrap" in page
    assert '<a href="#test_counter">Exercise 1: a &lt;safe&gt; counter</a>' in page
