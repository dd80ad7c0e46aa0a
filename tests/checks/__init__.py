"""Tests of the lesson checks (autograder/checks), with the answers they grade."""
