# Lesson 00: the counter cell ends the kernel process itself (os._exit). The grader runs the
# notebook again with that cell replaced by an error: the counter exercise scores 0, the other
# exercises keep their points, and nobody else's grade is touched.
# base: correct

# %% ex_anatomy_counter
import os

os._exit(0)  # "done with this part"
