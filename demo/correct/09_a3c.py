# Lesson 09 (a3c), a student who gets every exercise right, differently from the solutions:
# a subclassed network warmed by the actors' own call, one learner thread fed by a queue, a
# budget on a Condition with a ticket counter, and acts on an immutable NumPy snapshot that
# the learner publishes as one tuple.

# %% ex_a3c_network
class ActorCritic(keras.Model):
    def __init__(self):
        super().__init__()
        self.trunk = keras.layers.Dense(a3c.HIDDEN, activation="relu")
        self.policy = keras.layers.Dense(a3c.ACTIONS)
        self.value = keras.layers.Dense(1)

    def call(self, states):
        hidden = self.trunk(states)
        return self.policy(hidden), self.value(hidden)


def make_shared_network():
    """Return the actor-critic network, built and warm for the actors' predict_on_batch."""
    model = ActorCritic()
    one_state = np.zeros((1, a3c.STATE_SIZE), dtype="float32")
    model.predict_on_batch(one_state)  # builds the weights and traces the actors' very call
    return model

# %% ex_a3c_learner
class SharedLearner:
    """Applies the gradients many actor threads push, each exactly once."""

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.inbox = queue.Queue()
        self.learner = threading.Thread(target=self._apply_all, name="learner")
        self.learner.start()

    def _apply_all(self):
        while True:
            grads = self.inbox.get()
            if grads is None:
                return
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=False))

    def push(self, grads):
        """Apply ``grads`` (``model.trainable_variables`` order); safe from many threads."""
        self.inbox.put(grads)

    def close(self):
        """Return once every pushed gradient is applied and no thread of yours runs."""
        self.inbox.put(None)  # after every gradient already queued
        self.learner.join()

# %% ex_a3c_budget
class StepBudget:
    """The global step counter T, its stop condition and the episode returns."""

    def __init__(self, t_max):
        self.t_max = t_max
        self.cond = threading.Condition()
        self.T = 0
        self.returns = []

    def take(self):
        """Reserve the next step: its number, or None once all t_max steps are taken."""
        with self.cond:
            if self.T == self.t_max:
                return None
            self.T = self.T + 1
            return self.T

    def finish_episode(self, episode_return):
        """Record one finished episode's return."""
        with self.cond:
            self.returns = self.returns + [episode_return]

# %% ex_a3c_versioned
class VersionedNetwork:
    """Acts on one version of the network while a learner updates it."""

    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.learning = threading.Lock()
        self.published = (0, [w.copy() for w in model.get_weights()])

    def learn(self, grads):
        """Apply one update; return the new version number."""
        with self.learning:
            self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables, strict=False))
            version = self.published[0] + 1
            self.published = (version, self.model.get_weights())  # one reference, swapped
            return version

    def act(self, states):
        """Return ``(outputs, version)``, the outputs computed with exactly that version."""
        version, weights = self.published  # one read: a version and its own weights
        trunk_kernel, trunk_bias, policy_kernel, policy_bias, value_kernel, value_bias = weights
        hidden = np.maximum(np.asarray(states, dtype="float32") @ trunk_kernel + trunk_bias, 0)
        return [hidden @ policy_kernel + policy_bias, hidden @ value_kernel + value_bias], version
