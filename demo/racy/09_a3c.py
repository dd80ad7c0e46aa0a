# Lesson 09 (a3c), a student who trusts Hogwild ("plain SGD loses no update, so no lock") and
# counts steps the way the actor's loop reads ("if T < T_MAX, count it"). Exercise 2 loses
# optimizer.iterations counts and exercise 3 hands out a step beyond T_MAX; exercises 1 and 4
# are correct, so the score is partial.

# %% ex_a3c_network
def make_shared_network():
    """Return the actor-critic network, built and warm for the actors' predict_on_batch."""
    state = keras.Input(shape=(a3c.STATE_SIZE,))
    hidden = keras.layers.Dense(a3c.HIDDEN, activation="relu")(state)
    model = keras.Model(state, [keras.layers.Dense(a3c.ACTIONS)(hidden),
                                keras.layers.Dense(1)(hidden)])
    model.predict_on_batch(np.ones((1, a3c.STATE_SIZE), dtype="float32"))
    return model

# %% ex_a3c_learner
class SharedLearner:
    """Applies the gradients many actor threads push, each exactly once."""

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer

    def push(self, grads):
        """Apply ``grads`` (``model.trainable_variables`` order); safe from many threads."""
        # Hogwild: SGD's weight updates are atomic, so every actor applies its own.
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=False))

    def close(self):
        """Return once every pushed gradient is applied and no thread of yours runs."""

# %% ex_a3c_budget
class StepBudget:
    """The global step counter T, its stop condition and the episode returns."""

    def __init__(self, t_max):
        self.t_max = t_max
        self.T = 0
        self.returns = []
        self.lock = threading.Lock()

    def take(self):
        """Reserve the next step: its number, or None once all t_max steps are taken."""
        if self.T < self.t_max:
            with self.lock:
                self.T += 1
                return self.T
        return None

    def finish_episode(self, episode_return):
        """Record one finished episode's return."""
        self.returns.append(episode_return)

# %% ex_a3c_versioned
class VersionedNetwork:
    """Acts on one version of the network while a learner updates it."""

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.lock = threading.Lock()
        self.version = 0

    def learn(self, grads):
        """Apply one update; return the new version number."""
        with self.lock:
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=False))
            self.version += 1
            return self.version

    def act(self, states):
        """Return ``(outputs, version)``, the outputs computed with exactly that version."""
        with self.lock:
            return self.model.predict_on_batch(states), self.version
