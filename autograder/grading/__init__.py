"""Grading on the host: a class's jobs (local or on Dask), each job's cells, run in the
sandboxed kernel (:mod:`autograder.kernel`), scored, fed back and recorded in the gradebook;
Validate, the demo class and the race report."""
