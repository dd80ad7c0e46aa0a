"""The course: lesson sources, the nbgrader course built from them, release, collect and
feedback through the exchange, answer files, the new-lesson scaffold and the LMS export."""
