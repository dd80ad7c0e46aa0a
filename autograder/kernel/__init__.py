"""What runs inside the student's kernel, beside student code: the runner, its seal, audit
hook and guards, and the channel it reports on. The security boundary: nothing here imports
the host's grading or course code, and the seal covers this whole package."""
