"""Course build and grading: jupytext sources -> nbgrader course -> grades and feedback."""
