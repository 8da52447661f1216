"""Offline stand-in for OpenAI ``gym`` (not installed here) with the API the corpus's RL scripts
were written for (gym < 0.26: ``reset() -> obs``, ``step(a) -> (obs, reward, done, info)``):
``CartPole-v0``/``CartPole-v1``, the classic cart-pole dynamics of gym's ``CartPoleEnv``.
Randomness comes from numpy's global generator, which ``seed_everything`` seeds."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

__all__ = ["Env", "make", "spaces"]


class Discrete:
    def __init__(self, n: int) -> None:
        self.n = n
        self.shape = ()

    def sample(self) -> int:
        return int(np.random.randint(self.n))


class Box:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape


#: gym.spaces.box.Box / gym.spaces.discrete.Discrete, as the scripts spell them
spaces = SimpleNamespace(box=SimpleNamespace(Box=Box), discrete=SimpleNamespace(Discrete=Discrete))


class Env:
    observation_space: Box
    action_space: Discrete


class CartPole(Env):
    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold, x_threshold = 12 * 2 * math.pi / 360, 2.4

    def __init__(self, max_steps: int) -> None:
        self.observation_space = Box((4,))
        self.action_space = Discrete(2)
        self.max_steps = max_steps
        self.state = np.zeros(4)
        self.steps = 0

    def reset(self) -> np.ndarray:
        self.state = np.random.uniform(-0.05, 0.05, size=(4,))
        self.steps = 0
        return np.array(self.state, dtype=np.float32)

    def step(self, action: int) -> tuple[np.ndarray, float, bool, dict]:
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        total_mass = self.masspole + self.masscart
        polemass_length = self.masspole * self.length
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + polemass_length * theta_dot**2 * sin) / total_mass
        thetaacc = (self.gravity * sin - cos * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * cos**2 / total_mass))
        xacc = temp - polemass_length * thetaacc * cos / total_mass
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * xacc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * thetaacc
        self.state = np.array([x, x_dot, theta, theta_dot])
        self.steps += 1
        done = bool(abs(x) > self.x_threshold or abs(theta) > self.theta_threshold
                    or self.steps >= self.max_steps)
        return np.array(self.state, dtype=np.float32), 1.0, done, {}


def make(name: str) -> Env:
    steps = {"CartPole-v0": 200, "CartPole-v1": 500}
    if name not in steps:
        raise ValueError(f"this offline gym has {sorted(steps)}, not {name!r}")
    return CartPole(steps[name])
