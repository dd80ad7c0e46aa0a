"""JupyterLab for the course: project-owned Jupyter config per role, and a Validate button that
gives the grader's verdict (:mod:`autograder.lab.server`)."""
