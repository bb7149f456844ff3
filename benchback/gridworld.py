"""gymnax's FourRooms-misc in NumPy, behind Gymnasium's interface: the gridworld of PyTorch's own stack (the torch
scripts' --env-backend gymnasium and gymnasium-async), written as a Gymnasium user writes an environment: one Python
object per copy, which Gymnasium's SyncVectorEnv steps in turn and its AsyncVectorEnv in a process each.

Four rooms joined by four doorways (Sutton, Precup and Singh, 1999). The dynamics are gymnax 1.0.1's with its
default params: the agent starts at (4, 1) and the goal is (8, 9); an action moves one cell up, right, down or left
unless a wall is there; before it, with probability fail_prob * 4/3 the action is replaced by one drawn uniformly
from the four (so a third of the steps go elsewhere than asked); reaching the goal gives reward 1 and terminates;
500 steps truncate (Gymnasium's TimeLimit, as make wraps it). The observation is the agent's (row, column)
then the goal's, as float32 (gymnax's are int32, the same values). tests/test_gridworld.py checks every position,
goal and action against gymnax's step, the random actions' frequencies and the time limit. The random streams are
NumPy's, not gymnax's: equal in distribution, not draw for draw.
"""

import gymnasium
import numpy as np
from gymnasium import spaces

IDS = ("FourRooms-misc",)
WALLS = """
xxxxxxxxxxxxx
x     x     x
x     x     x
x           x
x     x     x
x     x     x
xx xxxx     x
x     xxx xxx
x     x     x
x     x     x
x           x
x     x     x
xxxxxxxxxxxxx"""
OPEN = np.array([[c == " " for c in row] for row in WALLS.strip("\n").split("\n")])  # True where the agent may stand
DIRECTIONS = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]])  # the actions: up, right, down, left (gymnax's order)
START, GOAL = np.array([4, 1]), np.array([8, 9])
MAX_STEPS = 500


class FourRooms(gymnasium.Env):
    """One gridworld. `pos` and `goal` are its state (the time is TimeLimit's); fail_prob as gymnax's EnvParams."""

    def __init__(self, fail_prob: float = 1 / 3):
        self.fail_prob = fail_prob
        self.action_space = spaces.Discrete(4)
        cells = np.argwhere(OPEN)
        self.observation_space = spaces.Box(cells.min(), cells.max(), (4,), np.float32)  # gymnax's bounds: 1 and 11
        self.pos, self.goal = START.copy(), GOAL.copy()

    def obs(self) -> np.ndarray:
        return np.concatenate([self.pos, self.goal]).astype(np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)  # seeds self.np_random on the first reset
        self.pos, self.goal = START.copy(), GOAL.copy()
        return self.obs(), {}

    def step(self, action):
        if self.np_random.random() < self.fail_prob * 4 / 3:
            action = self.np_random.integers(4)
        moved = self.pos + DIRECTIONS[action]
        if OPEN[moved[0], moved[1]]:  # the map's border is wall: a move never leaves it
            self.pos = moved
        at_goal = bool((self.pos == self.goal).all())
        return self.obs(), float(at_goal), at_goal, False, {}


def make() -> gymnasium.Env:
    """One gridworld with its time limit, as gymnasium.make would build a registered one (registering nothing)."""
    return gymnasium.wrappers.TimeLimit(FourRooms(), MAX_STEPS)
