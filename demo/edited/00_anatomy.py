# Lesson 00: right answers, and the read-only counter test cell edited to pass unconditionally.
# The grader restores it from the gradebook, grades the real tests, and reports the edit.
# base: correct

# %% edit test_anatomy_counter
# My counter is fine, trust me.
pass
