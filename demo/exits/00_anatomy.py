# Lesson 00: the counter cell ends the kernel process itself (os._exit): this notebook scores 0,
# and nobody else's grade is touched.
# base: correct

# %% ex_anatomy_counter
import os

os._exit(0)  # "done with this part"
