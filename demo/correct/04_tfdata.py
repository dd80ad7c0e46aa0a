# Lesson 04 (tfdata), a student who answers every exercise correctly, in their own words.

# %% ex_tfdata_loader
def make_dataset(read, n):
    """Return a tf.data.Dataset of ``read(i)`` for ``i`` in ``range(n)``, each once.

    ``read(i)`` returns a float32 numpy array of shape ``(tfdata.WIDTH,)`` and may block for
    a while (it stands in for a file read). The dataset may be iterated many times and from
    several threads at once; every iteration yields every record exactly once.
    """
    # A generator *function*: from_generator calls it once per iteration.
    def records():
        for i in range(n):
            yield read(i)

    spec = tf.TensorSpec((tfdata.WIDTH,), tf.float32)
    return tf.data.Dataset.from_generator(records, output_signature=spec).prefetch(2)

# %% ex_tfdata_augment
def augment(images, seed):
    """Return ``images`` randomly brightened and flipped, the same on every run for ``seed``."""
    def one(index, image):
        seeds = tf.random.experimental.stateless_split(tf.stack([index, seed]), num=2)
        delta = tf.random.stateless_uniform([], seeds[0], -tfdata.MAX_DELTA, tfdata.MAX_DELTA)
        image = image + delta
        flip = tf.random.stateless_uniform([], seeds[1]) < 0.5
        return tf.where(flip, tf.reverse(image, axis=[1]), image)

    return images.enumerate().map(one, num_parallel_calls=4)

# %% ex_tfdata_fast
def fast_pipeline(read, transform, n):
    """Return a dataset of ``transform(read(i))`` for ``i`` in ``range(n)``, in order, fast."""
    def both(i):
        out = tf.numpy_function(lambda k: transform(read(k)), [i], tf.float32)
        out.set_shape((tfdata.WIDTH,))
        return out

    return tf.data.Dataset.range(n).map(both, num_parallel_calls=4).prefetch(4)

# %% ex_tfdata_served
class ServedStats:
    """Wraps ``read`` for a parallel map: counts the records served and the reads that failed."""

    def __init__(self, read):
        self._read = read
        # list.append is one indivisible step in CPython: each call adds one mark, no lock.
        self._marks = []

    def __call__(self, i):
        try:
            record = self._read(i)
        except Exception:
            self._marks.append("failed")
            raise
        self._marks.append("served")
        return record

    def served(self):
        return list(self._marks).count("served")

    def failed(self):
        return list(self._marks).count("failed")
