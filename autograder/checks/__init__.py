"""Graded properties for each lesson: the functions hidden tests call.

One module per lesson (``warmup`` for lesson 01, ...). Every check runs the student's answer
under concurrent load through :mod:`autograder.harness` and raises ``AssertionError`` with a
student-facing message when the property does not hold.
"""
