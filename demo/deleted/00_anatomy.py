# Lesson 00: right answers, but the cache's test cell was deleted: its points are 0.
# base: correct

# %% delete test_anatomy_cache
