"""spec.JobFolder: one place names the files of a grading job."""

from pathlib import Path

from autograder.grading.spec import JobFolder


def test_a_job_folders_files_are_named_in_one_place():
    folder = JobFolder(Path("/out/jobs/alice/00_anatomy"))
    assert folder.result == Path("/out/jobs/alice/00_anatomy/result.json")
    assert folder.feedback.name == "feedback.html" and folder.runner_log.name == "runner.log"
    assert folder.spec == Path("/out/jobs/alice/00_anatomy.job.json")
    assert folder.done == Path("/out/jobs/alice/00_anatomy.done.json")
    assert folder.log == Path("/out/jobs/alice/00_anatomy.log")
    assert folder.returned() == [folder.result, folder.feedback, folder.runner_log]
