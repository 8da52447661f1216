"""Ports of Lightning's ``tests_fabric/plugins/environments/test_slurm.py``:
``test_default_attributes``, ``test_attributes_from_environment_variables`` and
``test_main_address_from_slurm_node_list``.

Deliberate differences (also in docs/migrating.md):

- Missing rank variables raise ``ConfigurationError`` naming the variable (Lightning:
  ``KeyError``); not checked here.
- Setting the global rank or world size of a SLURM job is not checked here (fulmen's setters
  are covered in ``test_schedulers.py``).
"""

from __future__ import annotations

import pytest

from fulmen_environments import SLURMEnvironment

_SLURM = ("SLURM_NODELIST", "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "SLURM_NTASKS",
          "SLURM_NTASKS_PER_NODE", "SLURM_LOCALID", "SLURM_PROCID", "SLURM_NODEID",
          "SLURM_JOB_NAME", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture(autouse=True)
def no_slurm(monkeypatch):
    for name in _SLURM:
        monkeypatch.delenv(name, raising=False)


def test_default_attributes() -> None:
    env = SLURMEnvironment()
    assert env.creates_processes_externally
    assert env.main_address == "127.0.0.1"
    assert env.main_port == 12910
    assert env.job_name() is None
    assert env.job_id() is None


def test_attributes_from_environment_variables(monkeypatch) -> None:
    for name, value in {"SLURM_NODELIST": "1.1.1.1, 1.1.1.2", "SLURM_JOB_ID": "0001234",
                        "SLURM_NTASKS": "20", "SLURM_NTASKS_PER_NODE": "10",
                        "SLURM_LOCALID": "2", "SLURM_PROCID": "1", "SLURM_NODEID": "3",
                        "SLURM_JOB_NAME": "JOB"}.items():
        monkeypatch.setenv(name, value)
    env = SLURMEnvironment()
    assert env.auto_requeue is True
    assert env.main_address == "1.1.1.1"
    assert env.main_port == 15000 + 1234
    assert env.job_id() == int("0001234")
    assert env.world_size() == 20
    assert env.global_rank() == 1
    assert env.local_rank() == 2
    assert env.node_rank() == 3
    assert env.job_name() == "JOB"


@pytest.mark.parametrize("name", ["bash", "interactive"])
def test_no_job_id_in_an_interactive_shell(monkeypatch, name) -> None:
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_JOB_NAME", name)
    assert SLURMEnvironment.job_id() is None


@pytest.mark.parametrize(
    ("slurm_node_list", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("alpha", "alpha"),
        ("alpha,beta,gamma", "alpha"),
        ("alpha beta gamma", "alpha"),
        ("1.2.3.[100-110]", "1.2.3.100"),
        ("1.2.3.[089, 100-110]", "1.2.3.089"),
        ("host[22]", "host22"),
        ("host[1,5-9]", "host1"),
        ("host[5-9,1]", "host5"),
        ("alpha, host[5-9], gamma", "alpha"),
        ("alpha[3,1], beta", "alpha3"),
    ],
)
def test_main_address_from_slurm_node_list(monkeypatch, slurm_node_list, expected) -> None:
    monkeypatch.setenv("SLURM_NODELIST", slurm_node_list)
    assert SLURMEnvironment().main_address == expected
