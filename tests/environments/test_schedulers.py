"""torchelastic and SLURM: detection, parsing and validation from environment dictionaries."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

import fulmen
from fulmen import ConfigurationError
from fulmen_environments import SLURMEnvironment, TorchElasticEnvironment
from fulmen_environments.slurm.nodelist import expand

TORCHRUN = {"TORCHELASTIC_RUN_ID": "abc", "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4",
            "GROUP_RANK": "1", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "10.0.0.1",
            "MASTER_PORT": "29400"}
SLURM = {"SLURM_NTASKS": "4", "SLURM_PROCID": "2", "SLURM_LOCALID": "0", "SLURM_NODEID": "1",
         "SLURM_JOB_NODELIST": "gpu-node[007-008]", "SLURM_JOB_ID": "123456",
         "SLURM_NTASKS_PER_NODE": "2", "SLURM_NNODES": "2", "SLURM_JOB_NAME": "train.sh"}


def detect(environ: dict[str, str]) -> str | None:
    name, _ = fulmen.get_plugin_manager().first_result("fulmen_detect_environment",
                                                       environ=environ)
    return name


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, "local"),
    (TORCHRUN, "torchelastic"),
    (SLURM, "slurm"),
    ({**SLURM, **TORCHRUN}, "torchelastic"),  # torchrun inside a SLURM allocation
    ({**SLURM, "SLURM_JOB_NAME": "bash"}, "local"),  # an interactive salloc shell
    ({**SLURM, "SLURM_JOB_NAME": "interactive"}, "local"),
    ({"SLURM_JOB_ID": "1"}, "local"),  # an allocation without a task
    ({"LOCAL_RANK": "1", "RANK": "1", "WORLD_SIZE": "2"}, "local"),  # fulmen's own launcher
])
def test_detection_order(fake_dists, environ, expected):
    assert detect(environ) == expected


def test_torchelastic_reads_torchrun():
    env = TorchElasticEnvironment(TORCHRUN)
    assert env.creates_processes_externally
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (4, 3, 1,
                                                                                         1)
    assert (env.main_address, env.main_port, env.restart_count()) == ("10.0.0.1", 29400, 0)
    env.validate_settings(num_devices=2, num_nodes=2)
    assert TorchElasticEnvironment({**TORCHRUN, "TORCHELASTIC_RESTART_COUNT": "2"}) \
        .restart_count() == 2


@pytest.mark.parametrize(("environ", "devices", "nodes", "message"), [
    (TORCHRUN, 4, 1, r"torchrun started 2 processes per node .* devices=4"),
    (TORCHRUN, 2, 1, r"world size is 4 .* devices=2 x num_nodes=1 makes 2"),
    ({k: v for k, v in TORCHRUN.items() if k != "RANK"}, 2, 2,
     r"only partly set: .* but \['RANK'\] are missing"),
    ({**TORCHRUN, "RANK": "9"}, 2, 2, r"rank 9 in a world of 4"),
    ({**TORCHRUN, "WORLD_SIZE": "0"}, 2, 2, r"WORLD_SIZE='0' must be an integer >= 1"),
    ({**TORCHRUN, "MASTER_PORT": "99999"}, 2, 2, r"MASTER_PORT='99999' is not a port"),
])
def test_torchelastic_bad_settings(environ, devices, nodes, message):
    with pytest.raises(ConfigurationError, match=message):
        TorchElasticEnvironment(environ).validate_settings(devices, nodes)


def test_slurm_reads_the_job():
    env = SLURMEnvironment(SLURM)
    assert (env.world_size(), env.global_rank(), env.local_rank(), env.node_rank()) == (4, 2, 0,
                                                                                         1)
    assert env.main_address == "gpu-node007"
    assert env.main_port == 15000 + 123456 % 5000
    assert SLURMEnvironment({**SLURM, "MASTER_PORT": "23456"}).main_port == 23456
    env.validate_settings(num_devices=2, num_nodes=2)


@pytest.mark.parametrize(("environ", "devices", "nodes", "message"), [
    (SLURM, 4, 2, r"SLURM runs 2 tasks per node \(--ntasks-per-node\), but .* devices=4"),
    (SLURM, 2, 3, r"the SLURM job has 2 nodes \(--nodes\), but .* num_nodes=3"),
    ({k: v for k, v in SLURM.items() if k != "SLURM_PROCID"}, 2, 2,
     r"SLURM environment is only partly set: .* \['SLURM_PROCID'\] are missing"),
    ({**SLURM, "SLURM_PROCID": "4"}, 2, 2, r"rank 4 in a world of 4"),
    ({**SLURM, "SLURM_JOB_NODELIST": "node[1-"}, 2, 2, r"SLURM_JOB_NODELIST='node\[1-' is not a "
                                                     r"node list"),
])
def test_slurm_bad_settings(environ, devices, nodes, message):
    with pytest.raises(ConfigurationError, match=message):
        SLURMEnvironment(environ).validate_settings(devices, nodes)


@pytest.mark.parametrize(("nodelist", "hosts"), [
    ("node1", ["node1"]),
    ("node1,node2", ["node1", "node2"]),
    ("gpu-node[007-009,012],cpu[1-2]", ["gpu-node007", "gpu-node008", "gpu-node009",
                                         "gpu-node012", "cpu1", "cpu2"]),
    ("rack[1-2]-n[01-02]", ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"]),
    ("host[9-11]", ["host9", "host10", "host11"]),
    ("a[1],b", ["a1", "b"]),
])
def test_node_list_parser(nodelist, hosts):
    assert expand(nodelist) == hosts


@pytest.mark.parametrize("nodelist", ["", "node[1-", "node[a-b]", "node[3-1]", "a,,b", "n[[1]]"])
def test_unparsable_node_lists_are_shown(nodelist):
    with pytest.raises(ConfigurationError, match=r"SLURM_JOB_NODELIST="):
        expand(nodelist)


def test_a_slurm_job_composes_without_a_launcher(fake_dists, monkeypatch):
    for key, value in {**SLURM, "SLURM_NTASKS": "1", "SLURM_PROCID": "0", "SLURM_NNODES": "1",
                       "SLURM_NTASKS_PER_NODE": "1", "SLURM_NODEID": "0"}.items():
        monkeypatch.setenv(key, value)
    trainer = fulmen.Trainer(accelerator="cpu", devices=1)
    assert trainer.cluster_environment.name == "slurm"
    assert (trainer.world_size, trainer.global_rank) == (1, 0)
    with pytest.raises(ConfigurationError, match=r"SLURM runs 1 tasks per node"):
        fulmen.Trainer(accelerator="cpu", devices=2)


def test_selecting_slurm_by_name_overrides_interactive_detection(fake_dists, monkeypatch):
    for key, value in {**SLURM, "SLURM_NTASKS": "1", "SLURM_PROCID": "0", "SLURM_NNODES": "1",
                       "SLURM_NTASKS_PER_NODE": "1", "SLURM_NODEID": "0",
                       "SLURM_JOB_NAME": "bash"}.items():
        monkeypatch.setenv(key, value)
    assert fulmen.Trainer(accelerator="cpu").cluster_environment.name == "local"
    assert fulmen.Trainer(accelerator="cpu", plugins=["slurm"]).cluster_environment.name == \
        "slurm"


def test_slurm_preemption_signals_and_restart_count():
    env = SLURMEnvironment(SLURM)
    assert env.preemption_signals() == {signal.SIGUSR1: "requeue", signal.SIGTERM: "stop"}
    assert SLURMEnvironment(SLURM, requeue_signal=signal.SIGUSR2).preemption_signals()[
        signal.SIGUSR2] == "requeue"
    assert SLURMEnvironment(SLURM, auto_requeue=False).preemption_signals() == {}
    assert env.restart_count() == 0
    assert SLURMEnvironment({**SLURM, "SLURM_RESTART_COUNT": "2"}).restart_count() == 2
    with pytest.raises(ConfigurationError, match="SLURM_RESTART_COUNT='x'"):
        SLURMEnvironment({**SLURM, "SLURM_RESTART_COUNT": "x"}).restart_count()


def fake_scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int) -> Path:
    log = tmp_path / "calls.log"
    script = tmp_path / "scontrol"
    script.write_text(f'#!/bin/sh\necho "$@" >> {log}\necho "job busy" >&2\nexit {status}\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return log


def test_slurm_requeue_names_array_tasks(tmp_path, monkeypatch):
    log = fake_scontrol(tmp_path, monkeypatch, 0)
    SLURMEnvironment(SLURM).requeue()
    SLURMEnvironment({**SLURM, "SLURM_ARRAY_JOB_ID": "99", "SLURM_ARRAY_TASK_ID": "3"}).requeue()
    assert log.read_text().splitlines() == ["requeue 123456", "requeue 99_3"]


def test_slurm_requeue_failure_says_why(tmp_path, monkeypatch):
    fake_scontrol(tmp_path, monkeypatch, 1)
    with pytest.raises(fulmen.FulmenError, match=r"scontrol requeue 123456` failed with status 1"
                                                 r": job busy"):
        SLURMEnvironment(SLURM).requeue()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(fulmen.FulmenError, match="`scontrol` is not on PATH"):
        SLURMEnvironment(SLURM).requeue()


def test_sigterm_is_a_stop_notice_under_every_scheduler(monkeypatch):
    """SIGTERM, what torchrun's agent, Kubernetes and LSF send before the kill: a checkpoint at
    the next step boundary and exit 143 (a restart resumes it); the window is the scheduler's
    grace period unless FULMEN_PREEMPTION_WINDOW says otherwise."""
    from fulmen.notices import SignalNotice
    from fulmen_environments import LocalEnvironment

    monkeypatch.delenv("FULMEN_PREEMPTION_WINDOW", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    torchrun = TorchElasticEnvironment(TORCHRUN)
    assert torchrun.preemption_signals() == {signal.SIGTERM: "stop"}
    (notice,) = torchrun.preemption_notices()
    assert isinstance(notice, SignalNotice) and notice.window == 30.0
    assert LocalEnvironment().preemption_window() is None
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")  # a plain pod: local, 30 s
    assert LocalEnvironment().preemption_window() == 30.0
    monkeypatch.setenv("FULMEN_PREEMPTION_WINDOW", "90")  # terminationGracePeriodSeconds: 90
    assert LocalEnvironment().preemption_window() == 90.0 and torchrun.preemption_window() == 90
    monkeypatch.setenv("FULMEN_PREEMPTION_WINDOW", "soon")
    with pytest.raises(ConfigurationError, match="FULMEN_PREEMPTION_WINDOW='soon': expected the "
                                                 "seconds between a stop notice and the kill"):
        torchrun.preemption_window()
    assert TorchElasticEnvironment({**TORCHRUN, "TORCHELASTIC_RESTART_COUNT": "1"}
                                   ).restart_count() == 1
    with pytest.raises(NotImplementedError, match="'torchelastic' environment cannot requeue"):
        TorchElasticEnvironment(TORCHRUN).requeue()
